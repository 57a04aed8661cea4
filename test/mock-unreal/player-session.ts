// One player of the mock Unreal app, as PS2 handles it: a werift peer connection with a sendonly
// H.264 track and the `datachannel` created before the offer, trickled ICE, the looping clip as
// video, and the data-channel protocol (announcement, InitialSettings, input, UIInteraction → Response).
import {
  MediaStream,
  MediaStreamTrack,
  RTCPeerConnection,
  useH264,
  useNACK,
  usePLI,
  useREMB,
  type PeerConfig,
  type RTCDataChannel,
  type RTCRtpSender,
  type RtpPacket,
} from 'werift';
import { ClipVideoFeed } from './clip-video-feed';
import {
  describeInput,
  encodeTextMessage,
  encodeUint8Message,
  FROM_STREAMER,
  initialSettingsJson,
  MalformedMessageError,
  MessageDirection,
  parseToStreamerMessage,
  protocolAnnouncement,
  type InitialSettingsValues,
  type ToStreamerMessage,
} from './data-channel-protocol';
import type { FrameTick } from './frame-clock';
import type { H264Clip } from './h264-clip';
import type { IceCandidateInit, StreamerMessage } from './signalling-connection';
import type { UnrealLog } from './unreal-log';

/** The announcement is re-sent on RequestInitialSettings only this long after the previous one… */
export const ANNOUNCEMENT_RESEND_MIN_INTERVAL_MS = 1000;
/** …and at most this often per player: the stock frontend answers every 255 with a 7, so an
 *  unconditional re-send would loop (and double each round). */
export const MAX_ANNOUNCEMENT_RESENDS = 2;

const CLOSE_TIMEOUT_MS = 2000;

/** werift settings for loopback-only sessions (design/werift-notes.md §5, §7.3). */
export function streamerPeerConfig(icePortRange: readonly [number, number] | undefined): Partial<PeerConfig> {
  return {
    codecs: {
      video: [
        useH264({
          payloadType: 96,
          parameters: 'profile-level-id=42e01f;packetization-mode=1;level-asymmetry-allowed=1',
          rtcpFeedback: [useNACK(), usePLI(), useREMB()],
        }),
      ],
    },
    iceServers: [],
    bundlePolicy: 'max-bundle',
    iceUseIpv4: true,
    iceUseIpv6: false,
    iceAdditionalHostAddresses: ['127.0.0.1'],
    ...(icePortRange ? { icePortRange: [icePortRange[0], icePortRange[1]] as [number, number] } : {}),
  };
}

/**
 * libwebrtc asks no STUN server it was not given; werift would ask Google's (its default, even for
 * `iceServers: []`: see agent/src/relay/peer-config.ts withoutWeriftDefaultStun). The mock's peers
 * are given none. Call once the peer's transport exists, before setLocalDescription.
 */
export function askNoDefaultStun(pc: RTCPeerConnection): void {
  for (const transport of pc.iceTransports) transport.connection.stunServer = undefined;
}

/**
 * libwebrtc, as the DTLS client (the relay answers `a=setup:passive`), sends its ClientHello as soon
 * as ICE connects; werift's client waits 100 ms first (its RTCDtlsTransport start, a margin for a
 * server still getting ready), 100 ms of every first frame that the app this mock stands in for
 * does not spend. So the mock starts its handshake at once, and werift's own later call gets the
 * handshake already under way. Call once the peer's transport exists.
 */
export function sendClientHelloAtOnce(pc: RTCPeerConnection): void {
  for (const transport of pc.dtlsTransports) {
    transport.onStateChange.subscribe((state) => {
      if (state !== 'connecting') return;
      // werift creates its DTLS socket right after announcing 'connecting', before its wait.
      queueMicrotask(() => {
        const socket: unknown = transport.dtls;
        if (transport.role !== 'client' || !hasConnect(socket)) return;
        const started = socket.connect();
        // werift's own call, 100 ms on, returns this and handles its failure as it would its own.
        started.catch(() => undefined);
        socket.connect = () => started;
      });
    });
  }
}

function hasConnect(socket: unknown): socket is { connect: () => Promise<void> } {
  return typeof socket === 'object' && socket !== null && typeof (socket as { connect?: unknown }).connect === 'function';
}

export interface PlayerSessionOptions {
  readonly playerId: string;
  readonly clip: H264Clip;
  readonly settings: InitialSettingsValues;
  readonly icePortRange: readonly [number, number] | undefined;
  /** A UIInteraction `{"kick": "<reason>"}` makes the app send disconnectPlayer for this player (-MockKickOnUIInteraction). */
  readonly kickOnUIInteraction: boolean;
  readonly log: UnrealLog;
  /** Sends a message to the signalling server. */
  readonly signal: (message: StreamerMessage) => void;
  /** Called once when the session ends on its own (peer connection failed or closed). */
  readonly onEnded: (playerId: string, reason: string) => void;
}

export class PlayerSession {
  readonly playerId: string;
  readonly feed: ClipVideoFeed;
  private readonly pc: RTCPeerConnection;
  private readonly sender: RTCRtpSender;
  private readonly channel: RTCDataChannel;
  private readonly log: UnrealLog;
  /** Data-channel messages waiting for the channel's stateChanged 'open' (werift-notes §5.8). */
  private outbox: Buffer[] = [];
  private channelOpen = false;
  private offerSent = false;
  private localCandidates: IceCandidateInit[] = [];
  private lastAnnouncementAt = Number.NEGATIVE_INFINITY;
  private announcementResends = 0;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: PlayerSessionOptions) {
    this.playerId = options.playerId;
    this.log = options.log;
    this.pc = new RTCPeerConnection(streamerPeerConfig(options.icePortRange));
    const track = new MediaStreamTrack({ kind: 'video' });
    // A stream id gives the offer an a=msid line; the frontend plays event.streams[0].
    const transceiver = this.pc.addTransceiver(track, { direction: 'sendonly', streams: [new MediaStream([track])] });
    askNoDefaultStun(this.pc);
    sendClientHelloAtOnce(this.pc);
    this.sender = transceiver.sender;
    this.channel = this.pc.createDataChannel('datachannel', { ordered: true });
    this.feed = new ClipVideoFeed(options.clip, (packet) => this.sendRtp(packet));

    this.pc.onIceCandidate.subscribe((candidate) => {
      if (candidate === undefined || candidate.candidate === '') return;
      const init: IceCandidateInit = { candidate: candidate.candidate, sdpMid: candidate.sdpMid, sdpMLineIndex: candidate.sdpMLineIndex };
      // werift gathers inside setLocalDescription; hold candidates until the offer is out.
      if (this.offerSent) this.options.signal({ type: 'iceCandidate', playerId: this.playerId, candidate: init });
      else this.localCandidates.push(init);
    });
    this.pc.connectionStateChange.subscribe((state) => this.onConnectionState(state));
    this.sender.onPictureLossIndication.subscribe(() => this.requestKeyframe('PLI'));
    this.channel.stateChanged.subscribe((state) => {
      if (state === 'open') this.onChannelOpen();
      else if (state === 'closed') this.log.log('LogPixelStreaming', `Data channel for ${this.playerId} closed`);
    });
    this.channel.onMessage.subscribe((data) => this.onChannelMessage(data));
  }

  /** Creates the offer and sends it, then the candidates gathered meanwhile. */
  async start(): Promise<void> {
    const offer = await this.pc.createOffer();
    await this.pc.setLocalDescription(offer);
    const sdp = this.pc.localDescription?.sdp;
    if (this.closed) return;
    if (sdp === undefined) throw new Error('werift produced no local description');
    this.options.signal({ type: 'offer', playerId: this.playerId, sdp });
    this.offerSent = true;
    this.log.log('LogPixelStreaming', `Sent offer to ${this.playerId}`);
    for (const candidate of this.localCandidates) {
      this.options.signal({ type: 'iceCandidate', playerId: this.playerId, candidate });
    }
    this.localCandidates = [];
  }

  async acceptAnswer(sdp: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp });
    const codec = this.sender.codec;
    this.log.log('LogPixelStreaming', `Received answer from ${this.playerId}; video codec ${codec ? `${codec.mimeType} pt=${codec.payloadType} ${codec.parameters ?? ''}`.trim() : 'none'}`);
  }

  async addRemoteCandidate(candidate: { candidate: string; sdpMid?: string | null; sdpMLineIndex?: number | null }): Promise<void> {
    if (candidate.candidate === '') return; // end-of-candidates
    await this.pc.addIceCandidate({
      candidate: candidate.candidate,
      sdpMid: candidate.sdpMid ?? undefined,
      sdpMLineIndex: candidate.sdpMLineIndex ?? undefined,
    });
  }

  onTick(tick: FrameTick): void {
    if (!this.closed) this.feed.onTick(tick);
  }

  /** Closes the peer connection (bounded by a 2 s timeout). Idempotent. */
  close(reason: string): Promise<void> {
    this.closing ??= this.doClose(reason);
    return this.closing;
  }

  private async doClose(reason: string): Promise<void> {
    this.closed = true;
    this.feed.deactivate();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
    });
    await Promise.race([this.pc.close().catch(() => undefined), timeout]);
    clearTimeout(timer);
    const s = this.feed.stats;
    this.log.log('LogPixelStreaming', `Closed peer connection for ${this.playerId} (${reason}); sent ${s.framesSent} frames, ${s.keyframesSent} keyframes, ${s.packetsSent} RTP packets`);
  }

  private onConnectionState(state: string): void {
    this.log.log('LogPixelStreaming', `${this.playerId} peer connection state: ${state}`);
    if (state === 'connected') {
      this.feed.activate();
    } else if ((state === 'failed' || state === 'closed') && !this.closed) {
      this.options.onEnded(this.playerId, `peer connection ${state}`);
    }
  }

  private sendRtp(packet: RtpPacket): void {
    this.sender.sendRtp(packet).catch((error: unknown) => {
      if (!this.closed) this.log.warning('LogPixelStreaming', `RTP send to ${this.playerId} failed: ${String(error)}`);
    });
  }

  private requestKeyframe(source: string): void {
    const honoured = this.feed.requestKeyframe();
    this.log.log('LogPixelStreaming', `${this.playerId} requested a keyframe (${source})${honoured ? '' : '; one is coming or was asked for within 300 ms, ignored'}`);
  }

  private onChannelOpen(): void {
    this.channelOpen = true;
    this.log.log('LogPixelStreaming', `Data channel for ${this.playerId} open`);
    // The announcement goes first, ahead of any replies queued while the channel was connecting.
    const queued = this.outbox;
    this.outbox = [];
    this.sendAnnouncement();
    this.sendInitialSettings();
    for (const message of queued) this.sendData(message);
  }

  private sendAnnouncement(): void {
    this.lastAnnouncementAt = performance.now();
    this.sendData(encodeTextMessage(FROM_STREAMER.Protocol.id, protocolAnnouncement(MessageDirection.ToStreamer)));
    this.sendData(encodeTextMessage(FROM_STREAMER.Protocol.id, protocolAnnouncement(MessageDirection.FromStreamer)));
  }

  private sendInitialSettings(): void {
    this.sendData(encodeTextMessage(FROM_STREAMER.InitialSettings.id, initialSettingsJson(this.options.settings)));
  }

  private sendData(message: Buffer): void {
    if (!this.channelOpen) {
      this.outbox.push(message);
      return;
    }
    try {
      this.channel.send(message);
    } catch (error) {
      this.log.warning('LogPixelStreaming', `Data channel send to ${this.playerId} failed: ${String(error)}`);
    }
  }

  private onChannelMessage(data: string | Buffer): void {
    if (typeof data === 'string') {
      this.log.warning('LogPixelStreamingInput', `Ignoring a text data-channel message from ${this.playerId}; the protocol is binary`);
      return;
    }
    let message: ToStreamerMessage;
    try {
      message = parseToStreamerMessage(data);
    } catch (error) {
      if (!(error instanceof MalformedMessageError)) throw error;
      this.log.warning('LogPixelStreamingInput', `Malformed message from ${this.playerId}: ${error.message}`);
      return;
    }
    for (const line of describeInput(message)) this.log.log('LogPixelStreamingInput', line);
    this.respond(message);
  }

  private respond(message: ToStreamerMessage): void {
    switch (message.type) {
      case 'UIInteraction': {
        const kick = this.options.kickOnUIInteraction ? kickRequest(message.text) : undefined;
        if (kick === undefined) {
          this.sendData(encodeTextMessage(FROM_STREAMER.Response.id, message.text));
          break;
        }
        // As a game kicking a player: the signalling server drops it and answers with playerDisconnected.
        this.log.log('LogPixelStreaming', `Kicking player ${this.playerId}${kick.reason === undefined ? '' : `: ${kick.reason}`}`);
        this.options.signal({ type: 'disconnectPlayer', playerId: this.playerId, ...kick });
        break;
      }
      case 'RequestInitialSettings': {
        const sinceLast = performance.now() - this.lastAnnouncementAt;
        if (sinceLast >= ANNOUNCEMENT_RESEND_MIN_INTERVAL_MS && this.announcementResends < MAX_ANNOUNCEMENT_RESENDS) {
          this.announcementResends++;
          this.sendAnnouncement();
        }
        this.sendInitialSettings();
        break;
      }
      case 'RequestQualityControl':
        this.sendData(encodeUint8Message(FROM_STREAMER.QualityControlOwnership.id, 1));
        break;
      case 'IFrameRequest':
        this.requestKeyframe('IFrameRequest');
        break;
      case 'TestEcho':
        this.sendData(encodeTextMessage(FROM_STREAMER.TestEcho.id, message.text));
        break;
      case 'LatencyTest': {
        const now = Date.now();
        const timings = { ReceiptTimeMs: now, PreCaptureTimeMs: now, PostCaptureTimeMs: now, PreEncodeTimeMs: now, PostEncodeTimeMs: now, TransmissionTimeMs: now };
        this.sendData(encodeTextMessage(FROM_STREAMER.LatencyTest.id, JSON.stringify(timings)));
        break;
      }
      case 'Command':
        if (!this.options.settings.allowPixelStreamingCommands && message.text.includes('ConsoleCommand')) {
          this.log.warning('LogPixelStreaming', `Console command from ${this.playerId} refused: -AllowPixelStreamingCommands is not set`);
        }
        break;
      case 'Unknown':
        this.log.warning('LogPixelStreamingInput', `Unhandled message id=${message.id} (${message.length} bytes) from ${this.playerId}`);
        break;
      case 'FpsRequest':
      case 'AverageBitrateRequest':
      case 'StartStreaming':
      case 'StopStreaming':
        this.log.log('LogPixelStreaming', `${this.playerId} sent ${message.type}`);
        break;
      default:
        break; // input: logged by the caller, nothing to answer
    }
  }
}

/** `{"kick": "<reason>"}` → the disconnectPlayer fields (no reason for a missing or empty one); undefined for anything else. */
function kickRequest(text: string): { reason?: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || !Object.hasOwn(value, 'kick')) return undefined;
  const reason = (value as { kick: unknown }).kick;
  return typeof reason === 'string' && reason !== '' ? { reason } : {};
}
