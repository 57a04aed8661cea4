// A Pixel Streaming player made of werift, for tests that need no browser: answers the streamer's
// offer through a SignallingStub, trickles ICE, records RTP and data-channel messages, and sends
// data-channel bytes. Settings as in design/werift-notes.md §7.3.
import { EventEmitter } from 'node:events';
import { RTCPeerConnection, useH264, type RTCDataChannel, type RtpPacket } from 'werift';
import { loopbackPeer } from '../support/relay/fake-app';
import type { JsonMessage, SignallingStub } from './signalling-stub';

export class WeriftPlayer {
  /** Offer SDP as received from the streamer. */
  offerSdp: string | undefined;
  readonly rtp: RtpPacket[] = [];
  /** Data-channel messages from the streamer, in arrival order. */
  readonly dataMessages: Buffer[] = [];
  channel: RTCDataChannel | undefined;
  readonly pc: RTCPeerConnection;
  private readonly events = new EventEmitter();
  private answered = false;
  private pendingCandidates: JsonMessage[] = [];

  constructor(readonly playerId: string, private readonly stub: SignallingStub) {
    this.pc = new RTCPeerConnection({
      codecs: { video: [useH264({ payloadType: 96 })] },
      ...loopbackPeer(),
    });
    this.pc.onTrack.subscribe((track) => {
      track.onReceiveRtp.subscribe((packet) => {
        this.rtp.push(packet);
        this.events.emit('rtp', packet);
      });
    });
    this.pc.onDataChannel.subscribe((channel) => {
      this.channel = channel;
      // Subscribed synchronously with the channel's creation, so no early message is missed here.
      channel.onMessage.subscribe((data) => {
        const bytes = typeof data === 'string' ? Buffer.from(data) : data;
        this.dataMessages.push(bytes);
        this.events.emit('data', bytes);
      });
      this.events.emit('channel', channel);
    });
    this.pc.onIceCandidate.subscribe((candidate) => {
      if (candidate === undefined) return;
      const message: JsonMessage = { type: 'iceCandidate', candidate: candidate.toJSON() };
      if (this.answered) this.stub.fromPlayer(this.playerId, message);
      else this.pendingCandidates.push(message);
    });
  }

  /** Asks the stub for this player; the streamer's messages then arrive here. */
  connect(): void {
    this.stub.connectPlayer(this.playerId, (message) => {
      this.onSignalling(message).catch((error: unknown) => this.events.emit('error', error));
    });
  }

  /** Sends bytes on the data channel (throws if it is not there yet). */
  send(bytes: Buffer): void {
    if (this.channel === undefined) throw new Error('data channel not open');
    this.channel.send(bytes);
  }

  /** Resolves when `predicate` holds for the recorded state, re-checked on each event; rejects after timeoutMs. */
  waitUntil(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!predicate()) return;
        cleanup();
        resolve();
      };
      const fail = (error: unknown): void => {
        cleanup();
        reject(error instanceof Error ? error : new Error(String(error)));
      };
      const timer = setTimeout(() => fail(new Error(`werift player: timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        for (const event of ['rtp', 'data', 'channel', 'offer']) this.events.off(event, check);
        this.events.off('error', fail);
      };
      for (const event of ['rtp', 'data', 'channel', 'offer']) this.events.on(event, check);
      this.events.on('error', fail);
    });
  }

  async close(): Promise<void> {
    await this.pc.close();
  }

  private async onSignalling(message: JsonMessage): Promise<void> {
    if (message.type === 'offer' && typeof message.sdp === 'string') {
      this.offerSdp = message.sdp;
      this.events.emit('offer');
      await this.pc.setRemoteDescription({ type: 'offer', sdp: message.sdp });
      await this.pc.setLocalDescription(await this.pc.createAnswer());
      const sdp = this.pc.localDescription?.sdp;
      if (sdp === undefined) throw new Error('werift produced no answer');
      this.stub.fromPlayer(this.playerId, { type: 'answer', sdp, minBitrateBps: 0, maxBitrateBps: 0 });
      this.answered = true;
      for (const candidate of this.pendingCandidates) this.stub.fromPlayer(this.playerId, candidate);
      this.pendingCandidates = [];
    } else if (message.type === 'iceCandidate' && typeof message.candidate === 'object' && message.candidate !== null) {
      await this.pc.addIceCandidate(message.candidate);
    }
  }
}
