// A browser stand-in for streaming tests that need no Chromium: connects to the gateway like
// Epic's frontend (listStreamers → subscribe → answer the relay's offer, trickled ICE) with a
// werift peer, and records the RTP and data-channel bytes it receives.
import { RTCIceCandidate, RTCPeerConnection, RTCSessionDescription, useH264, useOPUS, type RTCDataChannel } from 'werift';
import { loopbackPeer } from '@pixelfleet/agent/test-support';
import { FakePlayer } from './fake-player';

export class WeriftViewer {
  readonly pc: RTCPeerConnection;
  readonly signalling: FakePlayer;
  rtpPackets = 0;
  payloadTypes = new Set<number>();
  readonly dataMessages: Buffer[] = [];
  channel: RTCDataChannel | undefined;
  sessionId = '';
  private videoSsrc: number | undefined;
  private readonly waiters: { test: () => boolean; resolve: () => void }[] = [];

  private constructor(signalling: FakePlayer) {
    this.signalling = signalling;
    this.pc = new RTCPeerConnection({
      codecs: { video: [useH264({ payloadType: 96 })], audio: [useOPUS()] },
      ...loopbackPeer(),
    });
    this.pc.onTrack.subscribe((track) => {
      if (track.kind === 'video') this.videoSsrc = track.ssrc;
      track.onReceiveRtp.subscribe((rtp) => {
        this.rtpPackets += 1;
        this.payloadTypes.add(rtp.header.payloadType);
        this.check();
      });
    });
    this.pc.onDataChannel.subscribe((channel) => {
      this.channel = channel;
      channel.onMessage.subscribe((data) => {
        this.dataMessages.push(typeof data === 'string' ? Buffer.from(data) : Buffer.from(data));
        this.check();
      });
    });
    this.pc.onIceCandidate.subscribe((c) => {
      if (c) signalling.send({ type: 'iceCandidate', candidate: { candidate: c.candidate, sdpMid: c.sdpMid ?? '0', sdpMLineIndex: c.sdpMLineIndex ?? 0 } });
    });
  }

  /** Opens the signalling socket and plays the frontend's part until media flows. */
  static async join(wsUrl: string): Promise<WeriftViewer> {
    const signalling = await FakePlayer.connect(wsUrl);
    const viewer = new WeriftViewer(signalling);
    signalling.send({ type: 'listStreamers' });
    viewer.sessionId = (await signalling.next('pixelfleetSession')).sessionId as string;
    void viewer.negotiate();
    return viewer;
  }

  /** Resolves when the predicate over what was received holds (checked on every arrival). */
  until(test: () => boolean, timeoutMs = 20_000): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`condition not met within ${timeoutMs} ms (rtp ${this.rtpPackets}, dc ${this.dataMessages.length})`)), timeoutMs);
      this.waiters.push({ test, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  send(bytes: Buffer): void {
    this.channel?.send(bytes);
  }

  /** A keyframe request (PLI) for the video, as a browser sends when it cannot decode. */
  sendPli(): void {
    const receiver = this.pc.getTransceivers().find((t) => t.kind === 'video')?.receiver;
    if (receiver === undefined || this.videoSsrc === undefined) throw new Error('no video yet');
    void receiver.sendRtcpPLI(this.videoSsrc);
  }

  async close(): Promise<void> {
    this.signalling.close();
    await this.pc.close();
  }

  private async negotiate(): Promise<void> {
    const list = await this.signalling.next('streamerList', 60_000);
    const [streamerId] = list.ids as string[];
    this.signalling.send({ type: 'subscribe', streamerId });
    const offer = await this.signalling.next('offer', 30_000);
    await this.pc.setRemoteDescription(new RTCSessionDescription(offer.sdp as string, 'offer'));
    const answer = await this.pc.createAnswer();
    await this.pc.setLocalDescription(answer);
    this.signalling.send({ type: 'answer', sdp: this.pc.localDescription!.sdp });
    for (;;) {
      const c = await this.signalling.next('iceCandidate', 60_000).catch(() => undefined);
      if (!c) return;
      const candidate = c.candidate as { candidate: string; sdpMid: string; sdpMLineIndex: number };
      await this.pc.addIceCandidate(new RTCIceCandidate(candidate)).catch(() => undefined);
    }
  }

  private check(): void {
    for (const w of [...this.waiters]) {
      if (w.test()) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }
}
