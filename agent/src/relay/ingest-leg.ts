// The werift peer facing the Unreal app over loopback: the app offers (video, audio, one data
// channel), the relay answers with exactly one H.264 format and bitrate hints. RTP and the app's
// channel go to the relay; keyframe requests and REMB go back to the app from this leg's receiver.
import {
  GenericNack,
  RTCPeerConnection,
  RtcpTransportLayerFeedback,
  type RTCDataChannel,
  type RTCRtpReceiver,
  type RtcpPacket,
  type RtpPacket,
} from 'werift';
import type { Logger } from 'pino';
import type { Clock } from '@pixelfleet/common';
import { startsKeyframe } from './h264-keyframe';
import { keyframeRequestBytes, rtcpBytes } from './keyframe-request';
import { IngestLossTracker, type IngestLossStats } from './ingest-loss';
import { addBitrateHints, answerAsDtlsServer, planStreamerOffer, type BitrateHints, type StreamerOfferPlan } from './ingest-sdp';
import { ingestPeerConfig, withoutWeriftDefaultStun } from './peer-config';
import { RelayError } from './relay-error';
import { rembPacket } from './remb';
import type { MediaKind, RelayIceCandidate } from './relay-types';
import { growSocketBuffers, INGEST_RECV_BUFFER_BYTES, type SocketBufferSizes } from './socket-buffers';

/** 'failed' is the ingest going away on its own (ICE/DTLS failed, peer closed); 'closed' is the relay releasing it. */
export type IngestState = 'new' | 'answering' | 'answered' | 'connected' | 'failed' | 'closed';

export const INGEST_TRANSITIONS: Readonly<Record<IngestState, readonly IngestState[]>> = {
  new: ['answering', 'failed', 'closed'],
  answering: ['answered', 'failed', 'closed'],
  answered: ['connected', 'failed', 'closed'],
  connected: ['failed', 'closed'],
  failed: ['closed'],
  closed: [],
};

export interface IngestLegHooks {
  /** One RTP packet from the app, as werift received it (not yet checked). */
  rtp(kind: MediaKind, rtp: RtpPacket): void;
  /** The app's data channel, synchronously as werift announces it: attach listeners right here. */
  channel(channel: RTCDataChannel): void;
  connected(): void;
  failed(reason: string): void;
  /** A local candidate gathered after the answer was returned (earlier ones are in the answer). */
  candidate(candidate: RelayIceCandidate): void;
  /** Video packets went missing on this host ('missing', being NACKed) or were given up ('abandoned'). */
  loss(kind: 'missing' | 'abandoned', count: number): void;
  /** The last packet of a keyframe arrived from the app. */
  keyframeArrived(): void;
}

export class IngestLeg {
  private state: IngestState = 'new';
  private readonly pc: RTCPeerConnection;
  private plan: StreamerOfferPlan | undefined;
  private channel: RTCDataChannel | undefined;
  /** SSRC of the app's video as last received (the offer's a=ssrc until the first packet). */
  private videoSsrc: number | undefined;
  private firSequence = 0;
  /** RTP timestamp of the keyframe arriving now (its first packet seen, its last not yet). */
  private keyframeTimestamp: number | undefined;
  private readonly loss: IngestLossTracker;
  /** What the kernel granted the ingest's sockets (undefined before the answer). */
  socketBuffers: SocketBufferSizes | undefined;
  private answerReturned = false;
  private readonly disposers: (() => void)[] = [];
  private closing: Promise<void> | undefined;

  constructor(
    private readonly hooks: IngestLegHooks,
    private readonly log: Logger,
    clock: Clock,
  ) {
    this.pc = new RTCPeerConnection(ingestPeerConfig());
    this.loss = new IngestLossTracker(
      {
        nack: (lost) => this.sendNack(lost),
        abandoned: (count) => this.guard('loss', () => hooks.loss('abandoned', count)),
      },
      clock,
    );
    // Attached before the offer is applied: werift fires these from inside setRemoteDescription
    // (tracks) and from the SCTP receive path (the channel, then its messages, synchronously).
    this.subscribe(
      this.pc.onTrack.subscribe((track) => {
        // The hot path (every packet): one listener per track, no closure or promise per packet.
        const onRtp = track.kind === 'audio' ? this.onAudioRtp : this.onVideoRtp;
        this.subscribe(track.onReceiveRtp.subscribe(onRtp).unSubscribe);
      }).unSubscribe,
    );
    this.subscribe(
      this.pc.onDataChannel.subscribe((channel) =>
        this.guard('data channel', () => {
          if (this.channel !== undefined) {
            this.log.warn({ label: channel.label }, 'ignoring a second data channel from the app');
            return;
          }
          this.channel = channel;
          hooks.channel(channel);
        }),
      ).unSubscribe,
    );
    this.subscribe(
      this.pc.connectionStateChange.subscribe((state) =>
        this.guard('connection state', () => {
          if (state === 'connected' && this.state === 'answered') {
            this.move('connected');
            hooks.connected();
          } else if (state === 'failed') this.lose('ICE/DTLS with the app failed');
          else if (state === 'closed') this.lose('the app closed its peer connection');
        }),
      ).unSubscribe,
    );
    this.subscribe(
      this.pc.onIceCandidate.subscribe((candidate) =>
        this.guard('candidate', () => {
          if (candidate === undefined || !this.answerReturned || this.isFinished()) return;
          const json = candidate.toJSON();
          hooks.candidate({ candidate: json.candidate, sdpMid: json.sdpMid ?? null, sdpMLineIndex: json.sdpMLineIndex ?? null });
        }),
      ).unSubscribe,
    );
  }

  private readonly onVideoRtp = (rtp: RtpPacket): void => {
    const { header } = rtp;
    this.videoSsrc = header.ssrc;
    // Retransmissions arrive here too, unwrapped from RTX by werift, under their own numbers.
    const missingBefore = this.loss.pending;
    this.loss.received(header.sequenceNumber);
    if (this.loss.pending > missingBefore) this.guard('loss', () => this.hooks.loss('missing', this.loss.pending - missingBefore));
    if (startsKeyframe(rtp.payload)) this.keyframeTimestamp = header.timestamp;
    if (header.marker && header.timestamp === this.keyframeTimestamp) {
      this.keyframeTimestamp = undefined;
      this.guard('keyframe', () => this.hooks.keyframeArrived());
    }
    this.relayRtp('video', rtp);
  };

  private readonly onAudioRtp = (rtp: RtpPacket): void => {
    this.relayRtp('audio', rtp);
  };

  get currentState(): IngestState {
    return this.state;
  }

  /** Loss and repair on this leg so far. */
  lossStats(): IngestLossStats {
    return this.loss.stats();
  }

  /** The app's payload types as negotiated (undefined before accept). */
  get videoPayloadType(): number | undefined {
    return this.plan?.videoPayloadType;
  }

  get audioPayloadType(): number | undefined {
    return this.plan?.audioPayloadType;
  }

  /** The app's offer → the answer for the app. Throws RelayError (UNSUPPORTED_CODEC, NEGOTIATION_FAILED). */
  async accept(offerSdp: string, bitrate: BitrateHints): Promise<string> {
    this.move('answering');
    const plan = planStreamerOffer(offerSdp);
    this.plan = plan;
    let answer: string | undefined;
    try {
      await this.pc.setRemoteDescription({ type: 'offer', sdp: plan.sdp });
      this.disableWeriftNack();
      withoutWeriftDefaultStun(this.pc);
      const weriftAnswer = await this.pc.createAnswer();
      await this.pc.setLocalDescription({ type: 'answer', sdp: answerAsDtlsServer(weriftAnswer.sdp) });
      answer = this.pc.localDescription?.sdp;
      // werift bound its sockets while gathering: room for keyframe bursts while the relay is busy.
      this.socketBuffers = growSocketBuffers(this.pc, { recvBytes: INGEST_RECV_BUFFER_BYTES });
      if (this.socketBuffers.recvBytes < INGEST_RECV_BUFFER_BYTES) {
        this.log.warn(
          { grantedBytes: this.socketBuffers.recvBytes, wantedBytes: INGEST_RECV_BUFFER_BYTES },
          "the OS capped the ingest's UDP receive buffer: keyframe bursts may be dropped (Linux: sysctl net.core.rmem_max=4194304 or more)",
        );
      }
    } catch (err) {
      throw new RelayError('NEGOTIATION_FAILED', `werift could not answer the app's offer: ${String(err)}`);
    }
    if (this.isFinished()) throw new RelayError('NEGOTIATION_FAILED', 'The ingest was closed while its answer was being made');
    if (answer === undefined) throw new RelayError('NEGOTIATION_FAILED', 'werift produced no answer');
    const hinted = addBitrateHints(answer, plan.videoPayloadType, bitrate);
    this.answerReturned = true;
    this.move('answered');
    if (this.pc.connectionState === 'connected') {
      this.move('connected');
      this.hooks.connected();
    }
    return hinted;
  }

  async addCandidate(candidate: RelayIceCandidate): Promise<void> {
    if (this.isFinished()) return;
    try {
      await this.pc.addIceCandidate({ candidate: candidate.candidate, sdpMid: candidate.sdpMid ?? null, sdpMLineIndex: candidate.sdpMLineIndex ?? null });
    } catch (err) {
      throw new RelayError('NEGOTIATION_FAILED', `The app's candidate was refused: ${String(err)}`);
    }
  }

  /** Sends one keyframe request (PLI, or FIR for an app that offered no PLI; keyframe-request.ts); false when not possible yet. */
  requestKeyframe(): boolean {
    const target = this.rtcpTarget();
    if (target === undefined || this.plan === undefined) return false;
    const bytes = keyframeRequestBytes(this.plan, target.senderSsrc, target.mediaSsrc, this.firSequence);
    if (bytes === undefined) return false;
    if (!this.plan.pli) this.firSequence = (this.firSequence + 1) & 0xff;
    this.sendRtcp(target.receiver, [rtcpBytes(bytes)]);
    return true;
  }

  /** Sends one REMB for the video stream; false when not possible yet. */
  sendRemb(bps: number): boolean {
    const target = this.rtcpTarget();
    if (target === undefined) return false;
    this.sendRtcp(target.receiver, [rembPacket(target.senderSsrc, [target.mediaSsrc], bps)]);
    return true;
  }

  /** Releases the peer (sockets, timers). Idempotent; no event fires. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.move('closed');
    this.loss.close();
    for (const dispose of this.disposers.splice(0)) dispose();
    this.closing = this.pc.close().catch((err: unknown) => this.log.warn({ err }, 'closing the ingest peer failed'));
    return this.closing;
  }

  private rtcpTarget(): { receiver: RTCRtpReceiver; senderSsrc: number; mediaSsrc: number } | undefined {
    const mediaSsrc = this.videoSsrc ?? this.plan?.videoSsrc;
    if (this.state !== 'connected' || mediaSsrc === undefined) return undefined;
    const receiver = this.pc.getTransceivers().find((t) => t.kind === 'video')?.receiver;
    if (receiver === undefined || receiver.dtlsTransport.state !== 'connected') return undefined;
    return { receiver, senderSsrc: receiver.rtcpSsrc, mediaSsrc };
  }

  /** One generic NACK to the app for its video stream (nothing before the leg is connected). */
  private sendNack(lost: number[]): void {
    const target = this.rtcpTarget();
    if (target === undefined) return;
    const nack = new GenericNack({ senderSsrc: target.senderSsrc, mediaSourceSsrc: target.mediaSsrc, lost });
    this.sendRtcp(target.receiver, [new RtcpTransportLayerFeedback({ feedback: nack })]);
  }

  /**
   * The ingest's NACKs are this leg's own (ingest-loss.ts): werift's receiver NACK handler is made
   * inert. It is not part of werift's typed API, so its shape is checked; a werift that changed it
   * keeps its own handler (both would NACK: wasteful, not wrong) and says so once.
   */
  private disableWeriftNack(): void {
    const receiver = this.pc.getTransceivers().find((t) => t.kind === 'video')?.receiver;
    const handler: unknown = (receiver as unknown as { nack?: unknown } | undefined)?.nack;
    if (typeof handler === 'object' && handler !== null && typeof (handler as { addPacket?: unknown }).addPacket === 'function' && typeof (handler as { close?: unknown }).close === 'function') {
      (handler as { close(): void }).close();
      (handler as { addPacket: (packet: unknown) => void }).addPacket = () => undefined;
    } else {
      this.log.warn("werift's receiver NACK handler was not found; werift and the relay both NACK the app");
    }
  }

  private sendRtcp(receiver: RTCRtpReceiver, packets: RtcpPacket[]): void {
    receiver.dtlsTransport.sendRtcp(packets).catch((err: unknown) => this.log.debug({ err }, 'sending RTCP to the app failed'));
  }

  private relayRtp(kind: MediaKind, rtp: RtpPacket): void {
    try {
      this.hooks.rtp(kind, rtp);
    } catch (err) {
      this.log.error({ err, what: 'rtp' }, 'ingest event handler failed');
    }
  }

  private lose(reason: string): void {
    if (this.isFinished()) return;
    this.move('failed');
    this.hooks.failed(reason);
  }

  private isFinished(): boolean {
    return this.state === 'failed' || this.state === 'closed';
  }

  private move(next: IngestState): void {
    if (next === this.state) return;
    if (!INGEST_TRANSITIONS[this.state].includes(next)) {
      this.log.warn({ from: this.state, to: next }, 'ignored ingest state change');
      return;
    }
    this.state = next;
  }

  private subscribe(dispose: () => void): void {
    this.disposers.push(dispose);
  }

  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err, what }, 'ingest event handler failed');
    }
  }
}
