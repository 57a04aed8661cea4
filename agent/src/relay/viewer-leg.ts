// One viewer's werift peer: the relay offers sendonly H.264 + Opus and one ordered data channel.
// Ingest RTP is cloned onto this leg's senders (which rewrite SSRC, PT, sequence numbers); the
// browser's keyframe requests and bitrate estimates go back up to the relay.
import {
  GenericNack,
  MediaStream,
  MediaStreamTrack,
  PictureLossIndication,
  ReceiverEstimatedMaxBitrate,
  RTCPeerConnection,
  RtcpPayloadSpecificFeedback,
  RtcpRrPacket,
  RtcpSrPacket,
  RtcpTransportLayerFeedback,
  uint16Add,
  uint32Add,
  type RTCDataChannel,
  type RTCPeerConnectionConfig,
  type RTCRtpSender,
  type RtcpPacket,
  type RtpPacket,
} from 'werift';
import type { Logger } from 'pino';
import { ChannelOutbox, type ChannelPayload, type OutboxLimits } from './channel-outbox';
import { RelayError } from './relay-error';
import { withoutWeriftDefaultStun } from './peer-config';
import type { MediaKind, RelayIceCandidate } from './relay-types';
import { SendHistory } from './send-history';
import { VideoShownWitness } from './video-shown';
import { growSocketBuffers, VIEWER_SEND_BUFFER_BYTES, type SocketBufferSizes } from './socket-buffers';

/** Pixel Streaming's channel label (the app's channel has the same one). */
export const DATA_CHANNEL_LABEL = 'datachannel';

/** An RTP header without CSRCs or extensions (what the viewer leg sends). */
const RTP_HEADER_BYTES = 12;

/** RTCP PSFB FMT of a Full Intra Request (RFC 5104); werift does not export its class. */
const FIR_FMT = 4;

/**
 * Remote ICE candidates one viewer leg passes to werift. werift queues every candidate added before
 * the answer, without limit, and gets slower with each one it holds (8 000 took 51 s of the shared
 * agent's event loop); a browser trickles a handful per interface and ICE server, tens at most.
 */
export const MAX_REMOTE_CANDIDATES = 64;

/** RTP clock ticks of one frame, to keep timestamps moving when the app's stream restarts. */
const FRAME_TICKS: Record<MediaKind, number> = { video: 90_000 / 30, audio: 960 };

/**
 * Viewer states. 'connected' means media AND data channel are usable: DTLS is up (the peer
 * connection says 'connected') and the channel is 'open'. 'disconnected' is the viewer going away
 * on its own (ICE/DTLS failed, peer closed, channel closed); 'closed' is the relay releasing it.
 */
export type ViewerState = 'offering' | 'offered' | 'answered' | 'connected' | 'disconnected' | 'closed';

export const VIEWER_TRANSITIONS: Readonly<Record<ViewerState, readonly ViewerState[]>> = {
  offering: ['offered', 'disconnected', 'closed'],
  offered: ['answered', 'disconnected', 'closed'],
  answered: ['connected', 'disconnected', 'closed'],
  connected: ['disconnected', 'closed'],
  disconnected: ['closed'],
  closed: [],
};

export interface ViewerLegHooks {
  /** A message from the viewer, for the app; early = it arrived before this side's channel was 'open'. */
  message(payload: ChannelPayload, early: boolean): void;
  /** A message handed to this viewer's channel. */
  messageSent(): void;
  messageDropped(reason: string): void;
  /** PLI or FIR from the browser for the video stream. */
  keyframeRequest(kind: 'PLI' | 'FIR'): void;
  /** REMB from the browser, bits per second. */
  estimate(bps: number): void;
  /** A NACK from the browser: `resent` packets answered from this leg's history, `missed` no longer held. */
  nack(resent: number, missed: number): void;
  /** DTLS is up: packets written from now on reach the viewer. */
  mediaReady(): void;
  connected(): void;
  /** Video reached this viewer: its receiver reports acknowledged a whole keyframe (video-shown.ts). Once. */
  videoShown(): void;
  disconnected(reason: string): void;
  /** A local candidate gathered after the offer was returned (earlier ones are in the offer). */
  candidate(candidate: RelayIceCandidate): void;
}

interface Output {
  sender: RTCRtpSender;
  /** SSRC of the ingest stream last forwarded, to notice the app restarting its stream. */
  sourceSsrc: number | undefined;
}

export class ViewerLeg {
  private state: ViewerState = 'offering';
  private readonly pc: RTCPeerConnection;
  private readonly channel: RTCDataChannel;
  private readonly outbox: ChannelOutbox;
  private readonly outputs: Record<MediaKind, Output>;
  /** Video packets as this viewer got them, to answer its NACKs (audio is not NACKed). */
  private readonly history = new SendHistory();
  private readonly videoShown = new VideoShownWitness();
  private mediaReady = false;
  private offerReturned = false;
  /** The answer applied (or being applied): the same one read again (a page resending it to a control plane that restarted) is ignored. */
  private appliedAnswer: string | undefined;
  /** Video packets (and their RTP bytes) written to this viewer, and sequence numbers it NACKed (answered or not). */
  readonly counts = { forwarded: 0, bytes: 0, nacked: 0 };
  /** What the kernel granted this leg's sockets (undefined before the offer). */
  socketBuffers: SocketBufferSizes | undefined;
  /** Remote candidates received, those dropped over MAX_REMOTE_CANDIDATES included. */
  private remoteCandidates = 0;
  private readonly disposers: (() => void)[] = [];
  private closing: Promise<void> | undefined;

  constructor(
    readonly playerId: string,
    config: RTCPeerConnectionConfig,
    outboxLimits: OutboxLimits,
    /** App messages that predate this viewer (Protocol, InitialSettings): sent first, once the channel opens. */
    replay: readonly ChannelPayload[],
    private readonly hooks: ViewerLegHooks,
    private readonly log: Logger,
  ) {
    this.pc = new RTCPeerConnection(config);
    const stream = new MediaStream();
    const video = this.pc.addTransceiver(new MediaStreamTrack({ kind: 'video' }), { direction: 'sendonly', streams: [stream] });
    const audio = this.pc.addTransceiver(new MediaStreamTrack({ kind: 'audio' }), { direction: 'sendonly', streams: [stream] });
    withoutWeriftDefaultStun(this.pc);
    this.outputs = { video: { sender: video.sender, sourceSsrc: undefined }, audio: { sender: audio.sender, sourceSsrc: undefined } };
    this.answerNacksFromHistory(video.sender);

    // Start-up race guard (README "Data-channel start-up race"): the channel exists before the
    // offer, and its listeners are attached now, not on 'open'. werift delivers the browser's first
    // messages while this side is still 'connecting' (they can overtake the DCEP ACK), so every
    // message is accepted whatever readyState says; outgoing ones queue until 'open'.
    this.channel = this.pc.createDataChannel(DATA_CHANNEL_LABEL, { ordered: true });
    this.outbox = new ChannelOutbox(outboxLimits, { sent: () => hooks.messageSent(), dropped: (r) => hooks.messageDropped(r) }, replay);
    this.outbox.attach(this.channel);
    this.subscribe(this.channel.onMessage.subscribe((data) => this.guard('message', () => hooks.message(data, this.channel.readyState !== 'open'))).unSubscribe);
    this.subscribe(
      this.channel.stateChanged.subscribe((state) =>
        this.guard('channel state', () => {
          if (state === 'open') this.maybeConnected();
          else if (state === 'closed') this.lost('data channel closed');
        }),
      ).unSubscribe,
    );
    this.subscribe(
      this.pc.connectionStateChange.subscribe((state) =>
        this.guard('connection state', () => {
          if (state === 'connected') this.onTransportUp();
          else if (state === 'failed') this.lost('ICE/DTLS failed');
          else if (state === 'closed') this.lost('peer connection closed');
        }),
      ).unSubscribe,
    );
    this.subscribe(
      this.pc.onIceCandidate.subscribe((candidate) =>
        this.guard('candidate', () => {
          // Candidates gathered while the offer was being made are already written in it.
          if (candidate === undefined || !this.offerReturned || this.isFinished()) return;
          const json = candidate.toJSON();
          hooks.candidate({ candidate: json.candidate, sdpMid: json.sdpMid ?? null, sdpMLineIndex: json.sdpMLineIndex ?? null });
        }),
      ).unSubscribe,
    );
  }

  get currentState(): ViewerState {
    return this.state;
  }

  /** The offer SDP (candidates included: werift gathers them all inside setLocalDescription). */
  async offer(): Promise<string> {
    try {
      await this.pc.setLocalDescription(await this.pc.createOffer());
    } catch (err) {
      throw new RelayError('NEGOTIATION_FAILED', `Could not create the offer for viewer ${this.playerId}: ${String(err)}`);
    }
    // werift bound its sockets while gathering: room for a keyframe leaving at once.
    this.socketBuffers = growSocketBuffers(this.pc, { sendBytes: VIEWER_SEND_BUFFER_BYTES });
    const sdp = this.pc.localDescription?.sdp;
    if (this.isFinished()) throw new RelayError('VIEWER_REMOVED', `Viewer ${this.playerId} was removed while its offer was being made`);
    if (sdp === undefined) throw new RelayError('NEGOTIATION_FAILED', `werift produced no offer for viewer ${this.playerId}`);
    this.offerReturned = true;
    this.move('offered');
    return sdp;
  }

  async acceptAnswer(sdp: string): Promise<void> {
    if (sdp === this.appliedAnswer) {
      this.log.debug({ playerId: this.playerId }, 'viewer answer read again; it was applied already');
      return;
    }
    if (this.state !== 'offered') throw new RelayError('NEGOTIATION_FAILED', `Viewer ${this.playerId} is ${this.state}, not waiting for an answer`);
    try {
      this.appliedAnswer = sdp;
      await this.pc.setRemoteDescription({ type: 'answer', sdp });
    } catch (err) {
      this.appliedAnswer = undefined;
      throw new RelayError('NEGOTIATION_FAILED', `Viewer ${this.playerId}'s answer was refused: ${String(err)}`);
    }
    if (this.state !== 'offered') return;
    this.move('answered');
    // DTLS and the channel may have come up while setRemoteDescription was finishing.
    this.maybeConnected();
  }

  /**
   * Passes a remote candidate to werift. Past MAX_REMOTE_CANDIDATES they are dropped, with one
   * warning, rather than failing the viewer: the first 64 hold every candidate a browser has, so a
   * stream that works keeps working, and the viewer's signalling (where a close can say why) is the
   * control plane's, which closes a viewer over its own cap before this one is reached.
   */
  async addCandidate(candidate: RelayIceCandidate): Promise<void> {
    if (this.isFinished()) return;
    this.remoteCandidates += 1;
    if (this.remoteCandidates > MAX_REMOTE_CANDIDATES) {
      if (this.remoteCandidates === MAX_REMOTE_CANDIDATES + 1) {
        this.log.warn({ playerId: this.playerId, limit: MAX_REMOTE_CANDIDATES }, 'viewer sent too many ICE candidates; dropping the rest');
      }
      return;
    }
    try {
      await this.pc.addIceCandidate({ candidate: candidate.candidate, sdpMid: candidate.sdpMid ?? null, sdpMLineIndex: candidate.sdpMLineIndex ?? null });
    } catch (err) {
      throw new RelayError('NEGOTIATION_FAILED', `Viewer ${this.playerId}'s candidate was refused: ${String(err)}`);
    }
  }

  /**
   * Writes one ingest packet to this viewer: a clone (werift's sender rewrites the header in place
   * and keeps the object for NACK), without the ingest's header extensions (werift-notes §5.5).
   * Returns false while DTLS is not up.
   */
  forward(kind: MediaKind, rtp: RtpPacket): boolean {
    if (!this.mediaReady) return false;
    const output = this.outputs[kind];
    const { ssrc, sequenceNumber, timestamp } = rtp.header;
    if (output.sourceSsrc !== ssrc) {
      // A new ingest stream: continue this viewer's sequence numbers and timestamps where they were,
      // one frame later, instead of jumping to the new stream's random origin.
      if (output.sourceSsrc !== undefined) {
        output.sender.replaceRTP({ sequenceNumber: uint16Add(sequenceNumber, -1), timestamp: uint32Add(timestamp, -FRAME_TICKS[kind]) });
      }
      output.sourceSsrc = ssrc;
    }
    // The one copy for this viewer: a new header (the payload bytes are shared, never written),
    // which werift's sender then rewrites in place (SSRC, PT, sequence number, timestamp).
    const packet = rtp.clone();
    packet.header.extensions = [];
    packet.header.extension = false;
    output.sender.sendRtp(packet).catch(this.onSendFailed);
    // sendRtp rewrote the header synchronously (before its first await): this is the packet as
    // the viewer gets it. It returns early, unchanged, when werift's DTLS is not up: not sent.
    if (kind === 'video' && packet.header.ssrc === output.sender.ssrc) {
      this.history.put(packet);
      this.videoShown.sent(packet.header.sequenceNumber, packet.header.marker, packet.payload);
      this.counts.forwarded++;
      this.counts.bytes += packet.payload.length + RTP_HEADER_BYTES;
    }
    return true;
  }

  /**
   * Answers the viewer's NACKs from this leg's history instead of werift's (128 packets, less than
   * half a 1080p keyframe). werift routes a generic NACK to the sender by its media SSRC and calls
   * handleRtcpPacket; everything else still goes to werift's own handling (SR/RR bookkeeping).
   */
  private answerNacksFromHistory(sender: RTCRtpSender): void {
    const werift = sender.handleRtcpPacket.bind(sender);
    sender.handleRtcpPacket = (packet: RtcpPacket): void => {
      if (packet instanceof RtcpTransportLayerFeedback && packet.feedback instanceof GenericNack) {
        this.guard('nack', () => this.resend(sender, packet.feedback as GenericNack));
        return;
      }
      werift(packet);
    };
  }

  /** Resends what this viewer lost, to this viewer only (same SSRC and sequence number). */
  private resend(sender: RTCRtpSender, nack: GenericNack): void {
    if (!this.mediaReady || nack.mediaSourceSsrc !== sender.ssrc) return;
    let resent = 0;
    let missed = 0;
    for (const lost of nack.lost) {
      // werift's parser adds bit offsets without wrapping them (65535 + 1 = 65536).
      const packet = this.history.takeForResend(lost & 0xffff);
      if (packet === 'gone') missed++;
      if (typeof packet === 'string') continue; // 'spent': resent enough; a viewer asking on is ignored
      resent++;
      sender.dtlsTransport.sendRtp(packet.payload, packet.header).catch(this.onSendFailed);
    }
    this.counts.nacked += resent + missed;
    this.hooks.nack(resent, missed);
  }

  /** One handler for every packet's send promise (none is allocated per packet). */
  private readonly onSendFailed = (err: unknown): void => {
    this.log.debug({ err }, 'viewer sendRtp failed');
  };

  /** An app message for this viewer: sent now if the channel is open, else queued in order. */
  send(payload: ChannelPayload): void {
    if (!this.isFinished()) this.outbox.send(payload);
  }

  /** Releases the peer (sockets, timers). Idempotent; no event fires. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.move('closed');
    this.mediaReady = false;
    for (const dispose of this.disposers.splice(0)) dispose();
    this.outbox.close();
    this.history.clear();
    this.closing = this.pc.close().catch((err: unknown) => this.log.warn({ err }, 'closing a viewer peer failed'));
    return this.closing;
  }

  private onTransportUp(): void {
    if (this.isFinished() || this.mediaReady) return;
    this.mediaReady = true;
    // RTCP from the browser, taken from the transport: werift routes a PSFB packet to a sender by
    // its media SSRC field, which is 0 in a FIR (RFC 5104), so FIRs never reach sender.onRtcp.
    const transport = this.outputs.video.sender.dtlsTransport;
    this.subscribe(transport.onRtcp.subscribe((packet) => this.guard('rtcp', () => this.onRtcp(packet))).unSubscribe);
    this.hooks.mediaReady();
    this.maybeConnected();
  }

  private onRtcp(packet: RtcpPacket): void {
    const videoSsrc = this.outputs.video.sender.ssrc;
    if (packet instanceof RtcpRrPacket || packet instanceof RtcpSrPacket) {
      for (const block of packet.reports) {
        if (block.ssrc === videoSsrc && this.videoShown.report(block.highestSequence, block.packetsLost)) this.hooks.videoShown();
      }
      return;
    }
    if (!(packet instanceof RtcpPayloadSpecificFeedback)) return;
    const { feedback } = packet;
    if (feedback instanceof ReceiverEstimatedMaxBitrate) {
      this.hooks.estimate(Number(feedback.bitrate));
    } else if (feedback instanceof PictureLossIndication) {
      if (feedback.mediaSsrc === videoSsrc) this.hooks.keyframeRequest('PLI');
    } else if (feedback.count === FIR_FMT && feedback.fir.some((entry) => entry.ssrc === videoSsrc)) {
      this.hooks.keyframeRequest('FIR');
    }
  }

  private maybeConnected(): void {
    if (this.state === 'answered' && this.mediaReady && this.channel.readyState === 'open') {
      this.move('connected');
      this.hooks.connected();
    }
  }

  private lost(reason: string): void {
    if (this.isFinished()) return;
    this.move('disconnected');
    this.hooks.disconnected(reason);
  }

  private isFinished(): boolean {
    return this.state === 'disconnected' || this.state === 'closed';
  }

  private move(next: ViewerState): void {
    if (next === this.state) return;
    if (!VIEWER_TRANSITIONS[this.state].includes(next)) {
      this.log.warn({ playerId: this.playerId, from: this.state, to: next }, 'ignored viewer state change');
      return;
    }
    this.state = next;
  }

  private subscribe(dispose: () => void): void {
    this.disposers.push(dispose);
  }

  /** werift calls our listeners from inside its own code: an exception must not escape into it. */
  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err, playerId: this.playerId, what }, 'viewer event handler failed');
    }
  }
}
