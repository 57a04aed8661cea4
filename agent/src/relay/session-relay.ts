// One session's media and data relay between one Unreal app (the ingest, which offers) and N
// browser viewers (the relay offers): RTP forwarded undecoded, data-channel bytes unchanged both
// ways, keyframe requests and REMB to the app. SDP and candidates in and out as plain values.
// Longer than ~400 lines: the one owner of a session's legs (ingest, viewers, data channels and
// the keyframe pacing between them); each concept it uses has its own file in this folder (README).
import type { Logger } from 'pino';
import type { RtpPacket, RTCDataChannel } from 'werift';
import { ChannelOutbox, DEFAULT_OUTBOX_LIMITS, type ChannelPayload, type OutboxLimits } from './channel-outbox';
import { IngestLeg } from './ingest-leg';
import { KeyframeRequester } from './keyframe-requester';
import { viewerPeerConfig, type RelayIceServer } from './peer-config';
import { advertisePublicIp, publicIpCandidate } from './public-ip';
import { systemClock, type Clock, type TimerHandle, Listeners } from '@pixelfleet/common';
import { RelayError } from './relay-error';
import type { MediaKind, RelayIceCandidate } from './relay-types';
import { BitratePolicy, lowestFreshEstimate, viewerLegLosing, type BitratePhase, type ViewerEstimate } from './bitrate-policy';
import type { IngestLossStats } from './ingest-loss';
import { StartupReplay } from './startup-replay';
import { ViewerLeg } from './viewer-leg';

export interface RelayOptions {
  /** STUN/TURN for the viewer-facing peers. The ingest peer (loopback) always uses none. */
  iceServers: RelayIceServer[];
  /**
   * Extra host-candidate addresses for viewer peers (werift iceAdditionalHostAddresses), on top of
   * the interfaces werift finds itself; 127.0.0.1 is always added.
   */
  hostAddresses: string[];
  /** UDP port range for viewer peers (werift icePortRange), inclusive; min < max. Default: any port. */
  portRange?: { min: number; max: number };
  /**
   * Public IPv4 address behind 1:1 NAT. Every non-loopback IPv4 host candidate of a viewer peer is
   * also announced with this address and the same port (in the offer and in trickled candidates);
   * the NAT must forward the port range to this host.
   */
  publicIp?: string;
  /** The project's bitrate settings, bits per second: minBps ≤ startBps ≤ maxBps. */
  bitrate: { startBps: number; minBps: number; maxBps: number };
  log: Logger;
  /** Timers and time; default the real ones (unref'd). */
  clock?: Clock;
  /** Period of REMB sent to the app, ms (default 1000). */
  rembIntervalMs?: number;
  /** Least time between two keyframe requests to the app, ms (default 500). */
  keyframeMinIntervalMs?: number;
  /** Bounds of each data-channel queue while its channel is not open (default 10 000 messages / 8 MiB). */
  outboxLimits?: OutboxLimits;
}

export interface SessionRelayEvents extends Record<string, unknown[]> {
  /** The app's peer connection is up (ICE + DTLS). */
  ingestConnected: [];
  /** The ingest is gone (offer refused, ICE/DTLS failed, app closed). Viewers stay; a new offer may follow. */
  ingestFailed: [reason: string];
  /** The viewer's media AND data channel are up. */
  viewerConnected: [playerId: string];
  /** Video reached a viewer for the first time in this session (viewer-leg.ts: its receiver reports acknowledged a whole keyframe). */
  videoShown: [playerId: string];
  /**
   * The viewer went away on its own (ICE/DTLS failed, peer or channel closed); it is already
   * released. Not fired for removeViewer() or close().
   */
  viewerDisconnected: [playerId: string, reason: string];
}

export interface RelayStats {
  /** Viewers currently held (any state). */
  viewers: number;
  /** RTP packets received from the app (audio and video). */
  packetsIn: number;
  /** RTP packets handed to viewers, summed over viewers. */
  packetsOut: number;
  /** RTP bytes received from the app (header + payload). */
  bytesIn: number;
  /** Packets from the app with a payload type other than the negotiated one, dropped. */
  packetsInWrongPayloadType: number;
  /** Data-channel messages handed to the app's channel. */
  dataChannelMessagesToApp: number;
  /** Data-channel messages handed to viewer channels, summed over viewers (replays included). */
  dataChannelMessagesToViewers: number;
  /**
   * Viewer messages that arrived while the relay's side of that viewer's channel was still
   * 'connecting' (before werift saw the DCEP ACK): accepted, see docs/streaming.md "start-up race".
   */
  dataChannelEarlyMessagesFromViewers: number;
  /** Data-channel messages given up (a queue overflowed while its channel was not open, or werift refused them). */
  dataChannelMessagesDropped: number;
  /** Keyframe requests made: viewers' PLI/FIR, viewers joining, the relay's own unrepairable loss. */
  keyframeRequestsMade: number;
  /** Of those, the ones from viewers (PLI/FIR). */
  keyframeRequestsFromViewers: number;
  /** Keyframe requests (PLI, plus FIR when negotiated) sent to the app. */
  keyframeRequestsToApp: number;
  /** Requests folded into a keyframe already asked for (rate limit, or one still arriving). */
  keyframeRequestsCoalesced: number;
  /** Video packets from the app found missing on this host (ingest gaps), NACKed to the app. */
  ingestPacketsMissing: number;
  /** NACK packets sent to the app. */
  ingestNacksSent: number;
  /** Missing ingest packets that arrived after all (retransmitted). */
  ingestPacketsRecovered: number;
  /** Missing ingest packets given up (the app could not resend them: a keyframe is asked for). */
  ingestPacketsAbandoned: number;
  /** The ingest socket's receive buffer as the OS granted it, bytes (0 before the first answer). */
  ingestRecvBufferBytes: number;
  /** NACK packets from viewers. */
  viewerNacksReceived: number;
  /** Packets resent to a viewer from its send history. */
  viewerPacketsResent: number;
  /** Packets a viewer NACKed that its history no longer held. */
  viewerNackMisses: number;
  /** Last REMB value sent to the app, bits per second (0 before the first). */
  rembBps: number;
  /** Viewers whose receiver reports acknowledged a whole keyframe: video reached them. */
  viewersShownVideo: number;
  /** The bitrate policy's phase in its last period (bitrate-policy.ts). */
  bitratePhase: BitratePhase;
}

const STREAMER_CANDIDATE_BUFFER = 64;

/** libwebrtc's start phase: in its first 2 s a sender takes a higher REMB at once. */
const START_PHASE_MS = 2_000;
/** REMB period during the start phase (the controller's steps come this often then). */
const START_PHASE_REMB_INTERVAL_MS = 250;

export class SessionRelay {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly listeners: Listeners<SessionRelayEvents>;
  private readonly streamerCandidateListeners = new Set<(c: RelayIceCandidate) => void>();
  private readonly viewerCandidateListeners = new Set<(playerId: string, c: RelayIceCandidate) => void>();
  private readonly viewers = new Map<string, ViewerLeg>();
  private readonly estimates = new Map<string, ViewerEstimate>();
  /** Each viewer leg's counts at the last REMB, to judge its loss and rate over one period. */
  private readonly legCounts = new Map<string, { forwarded: number; bytes: number; nacked: number }>();
  private lastRembMs: number | undefined;
  private readonly replay = new StartupReplay();
  private readonly toApp: ChannelOutbox;
  private readonly keyframes: KeyframeRequester;
  private readonly outboxLimits: OutboxLimits;
  private ingest: IngestLeg | undefined;
  /** The current ingest has sent video: its opening keyframe is past, a new viewer needs another. */
  private ingestVideoStarted = false;
  private earlyStreamerCandidates: RelayIceCandidate[] = [];
  private rembTimer: TimerHandle | undefined;
  private startPhaseTimer: TimerHandle | undefined;
  private readonly closings = new Set<Promise<void>>();
  private closed = false;
  private readonly bitrate: BitratePolicy;
  /** Loss counters of ingests already released (a re-offer replaces the leg). */
  private readonly pastIngestLoss: IngestLossStats = { packetsMissing: 0, nacksSent: 0, packetsRecovered: 0, packetsAbandoned: 0 };
  private readonly counters: Omit<RelayStats, 'viewers' | 'keyframeRequestsMade' | 'keyframeRequestsCoalesced' | 'bitratePhase' | `ingest${string}`> = {
    packetsIn: 0,
    packetsOut: 0,
    bytesIn: 0,
    packetsInWrongPayloadType: 0,
    dataChannelMessagesToApp: 0,
    dataChannelMessagesToViewers: 0,
    dataChannelEarlyMessagesFromViewers: 0,
    dataChannelMessagesDropped: 0,
    keyframeRequestsFromViewers: 0,
    keyframeRequestsToApp: 0,
    viewerNacksReceived: 0,
    viewerPacketsResent: 0,
    viewerNackMisses: 0,
    rembBps: 0,
    viewersShownVideo: 0,
  };

  constructor(private readonly options: RelayOptions) {
    validateOptions(options);
    this.log = options.log.child({ component: 'relay' });
    this.clock = options.clock ?? systemClock;
    this.outboxLimits = options.outboxLimits ?? DEFAULT_OUTBOX_LIMITS;
    this.listeners = new Listeners((event, err) => this.log.error({ err, event }, 'relay event listener threw'));
    this.toApp = new ChannelOutbox(this.outboxLimits, {
      sent: () => this.counters.dataChannelMessagesToApp++,
      dropped: (reason) => this.dropped('app', reason),
    });
    this.keyframes = new KeyframeRequester(
      () => {
        if (!this.ingest?.requestKeyframe()) return false;
        this.counters.keyframeRequestsToApp++;
        return true;
      },
      options.keyframeMinIntervalMs ?? 500,
      this.clock,
    );
    this.bitrate = new BitratePolicy(options.bitrate);
  }

  on<K extends keyof SessionRelayEvents>(event: K, listener: (...args: SessionRelayEvents[K]) => void): () => void {
    return this.listeners.on(event, listener);
  }

  // ---- ingest (the Unreal app) ----

  /**
   * The app's offer → the answer to send back (candidates included, bitrate hints added). A new
   * offer replaces the current ingest; viewers stay. Throws RelayError: UNSUPPORTED_CODEC (no H.264
   * 42e01f packetization-mode=1, or audio without Opus), NEGOTIATION_FAILED, RELAY_CLOSED; every
   * failure after the relay was open also fires ingestFailed.
   */
  async acceptStreamerOffer(sdp: string): Promise<string> {
    this.assertOpen();
    if (this.ingest) this.dropIngest(this.ingest, 'replaced by a new offer from the app', false);
    const leg: IngestLeg = new IngestLeg(
      {
        rtp: (kind, rtp) => this.onIngestRtp(leg, kind, rtp),
        channel: (channel) => this.onIngestChannel(leg, channel),
        connected: () => this.onIngestConnected(leg),
        failed: (reason) => this.dropIngest(leg, reason, true),
        candidate: (c) => {
          if (this.ingest === leg) this.emitStreamerCandidate(c);
        },
        loss: (kind) => {
          if (this.ingest !== leg) return;
          // This host dropped the packets (the app is local): the viewer's loss will be ours, not
          // the network's. Given-up packets leave a hole only a keyframe fills.
          this.bitrate.relayLoss(this.clock.now());
          if (kind === 'abandoned') this.keyframes.request();
        },
        keyframeArrived: () => {
          if (this.ingest === leg) this.keyframes.keyframeArrived();
        },
      },
      this.log.child({ leg: 'ingest' }),
      this.clock,
    );
    this.ingest = leg;
    this.ingestVideoStarted = false;
    const early = this.earlyStreamerCandidates.splice(0);
    for (const c of early) leg.addCandidate(c).catch((err: unknown) => this.log.warn({ err }, 'an early candidate from the app was refused'));
    try {
      const answer = await leg.accept(sdp, this.options.bitrate);
      if (this.ingest !== leg) throw new RelayError(this.closed ? 'RELAY_CLOSED' : 'NEGOTIATION_FAILED', 'The ingest was replaced or closed while answering');
      this.log.info({ videoPayloadType: leg.videoPayloadType, audioPayloadType: leg.audioPayloadType }, 'answered the app');
      return answer;
    } catch (err) {
      if (this.ingest === leg) this.dropIngest(leg, err instanceof Error ? err.message : String(err), true);
      throw err;
    }
  }

  /** A candidate from the app. Held until acceptStreamerOffer when it comes first. */
  async addStreamerCandidate(candidate: RelayIceCandidate): Promise<void> {
    this.assertOpen();
    if (this.ingest === undefined) {
      if (this.earlyStreamerCandidates.length < STREAMER_CANDIDATE_BUFFER) this.earlyStreamerCandidates.push({ ...candidate });
      return;
    }
    await this.ingest.addCandidate(candidate);
  }

  /** Candidates to trickle to the app; returns the unsubscribe function. */
  onStreamerCandidate(listener: (candidate: RelayIceCandidate) => void): () => void {
    this.streamerCandidateListeners.add(listener);
    return () => {
      this.streamerCandidateListeners.delete(listener);
    };
  }

  // ---- viewers (browsers), each known by its Pixel Streaming player id ----

  /** A viewer subscribed: creates its peer and returns the relay's offer. Throws RelayError. */
  async addViewer(playerId: string): Promise<string> {
    this.assertOpen();
    if (this.viewers.has(playerId)) throw new RelayError('DUPLICATE_VIEWER', `Viewer ${playerId} already exists`);
    const leg = new ViewerLeg(
      playerId,
      viewerPeerConfig(this.options),
      this.outboxLimits,
      this.replay.snapshot(),
      {
        message: (payload, early) => {
          if (early) this.counters.dataChannelEarlyMessagesFromViewers++;
          this.toApp.send(payload);
        },
        messageSent: () => this.counters.dataChannelMessagesToViewers++,
        messageDropped: (reason) => this.dropped(playerId, reason),
        keyframeRequest: () => {
          this.counters.keyframeRequestsFromViewers++;
          this.keyframes.request();
        },
        estimate: (bps) => this.estimates.set(playerId, { bps, atMs: this.clock.now() }),
        nack: (resent, missed) => {
          this.counters.viewerNacksReceived++;
          this.counters.viewerPacketsResent += resent;
          this.counters.viewerNackMisses += missed;
          if (missed > 0) this.bitrate.relayLoss(this.clock.now());
        },
        // This viewer's media just came up. An app that has not sent video yet starts with a
        // keyframe anyway (asking for another would double the start-up burst); one that has needs
        // to send one, and a keyframe already arriving reaches this viewer only in part.
        mediaReady: () => {
          if (this.ingestVideoStarted) this.keyframes.request(false);
        },
        connected: () => {
          this.log.info({ playerId }, 'viewer connected');
          this.listeners.emit('viewerConnected', playerId);
        },
        videoShown: () => {
          if (this.counters.viewersShownVideo++ === 0) this.listeners.emit('videoShown', playerId);
        },
        disconnected: (reason) => this.onViewerLost(leg, reason),
        candidate: (c) => this.emitViewerCandidate(playerId, c),
      },
      this.log.child({ playerId }),
    );
    this.viewers.set(playerId, leg);
    // A viewer joining mid-stream needs a keyframe, but it is asked for only once this viewer's
    // media is up (mediaReady): one that arrived before then could not reach it, and would make the
    // app ignore the request that can (libwebrtc honours one per 300 ms) and this relay hold it back
    // for keyframeMinIntervalMs (measured: 250 ms more to a warm viewer's first frame).
    try {
      const sdp = await leg.offer();
      if (this.viewers.get(playerId) !== leg) throw new RelayError('VIEWER_REMOVED', `Viewer ${playerId} was removed while its offer was being made`);
      return this.options.publicIp ? advertisePublicIp(sdp, this.options.publicIp) : sdp;
    } catch (err) {
      if (this.viewers.get(playerId) === leg) this.releaseViewer(playerId, leg);
      throw err;
    }
  }

  async acceptViewerAnswer(playerId: string, sdp: string): Promise<void> {
    this.assertOpen();
    await this.viewer(playerId).acceptAnswer(sdp);
  }

  async addViewerCandidate(playerId: string, candidate: RelayIceCandidate): Promise<void> {
    this.assertOpen();
    await this.viewer(playerId).addCandidate(candidate);
  }

  /** Candidates to trickle to viewers; returns the unsubscribe function. */
  onViewerCandidate(listener: (playerId: string, candidate: RelayIceCandidate) => void): () => void {
    this.viewerCandidateListeners.add(listener);
    return () => {
      this.viewerCandidateListeners.delete(listener);
    };
  }

  /** Releases a viewer. No event fires; unknown ids are ignored (it may have disconnected already). */
  removeViewer(playerId: string): void {
    const leg = this.viewers.get(playerId);
    if (leg) this.releaseViewer(playerId, leg);
  }

  stats(): RelayStats {
    const keyframes = this.keyframes.stats();
    const current = this.ingest?.lossStats();
    const loss = (key: keyof IngestLossStats): number => this.pastIngestLoss[key] + (current?.[key] ?? 0);
    return {
      viewers: this.viewers.size,
      ...this.counters,
      keyframeRequestsMade: keyframes.requested,
      keyframeRequestsCoalesced: keyframes.coalesced,
      ingestPacketsMissing: loss('packetsMissing'),
      ingestNacksSent: loss('nacksSent'),
      ingestPacketsRecovered: loss('packetsRecovered'),
      ingestPacketsAbandoned: loss('packetsAbandoned'),
      ingestRecvBufferBytes: this.ingest?.socketBuffers?.recvBytes ?? 0,
      bitratePhase: this.bitrate.phase,
    };
  }

  /** Releases everything (peers, sockets, timers, listeners). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.keyframes.close();
    this.stopRemb();
    for (const [playerId, leg] of [...this.viewers]) this.releaseViewer(playerId, leg);
    if (this.ingest) this.dropIngest(this.ingest, 'relay closed', false);
    this.toApp.close();
    this.replay.clear();
    this.listeners.clear();
    this.streamerCandidateListeners.clear();
    this.viewerCandidateListeners.clear();
    this.log.info('relay closed');
  }

  /** Resolves once every werift peer this relay created has finished closing. */
  async whenClosed(): Promise<void> {
    while (this.closings.size > 0) await Promise.all([...this.closings]);
  }

  // ---- internals ----

  private onIngestRtp(leg: IngestLeg, kind: MediaKind, rtp: RtpPacket): void {
    if (this.ingest !== leg) return;
    if (kind === 'video') this.ingestVideoStarted = true;
    this.counters.packetsIn++;
    this.counters.bytesIn += rtp.serializeSize;
    // werift already drops payload types it did not negotiate; this keeps that promise explicit.
    const expected = kind === 'video' ? leg.videoPayloadType : leg.audioPayloadType;
    if (rtp.header.payloadType !== expected) {
      if (this.counters.packetsInWrongPayloadType++ === 0) this.log.warn({ kind, payloadType: rtp.header.payloadType, expected }, 'dropping RTP with an unexpected payload type');
      return;
    }
    for (const viewer of this.viewers.values()) if (viewer.forward(kind, rtp)) this.counters.packetsOut++;
  }

  private onIngestChannel(leg: IngestLeg, channel: RTCDataChannel): void {
    if (this.ingest !== leg) return;
    if (channel.label !== 'datachannel') this.log.warn({ label: channel.label }, "the app's data channel has an unexpected label; relaying it anyway");
    // Subscribed synchronously inside werift's ondatachannel: the messages the app sends right
    // after opening (Protocol, InitialSettings) arrive in the same SCTP packet burst.
    channel.onMessage.subscribe((payload: ChannelPayload) => {
      if (this.ingest !== leg) return;
      try {
        this.fanOut(payload);
      } catch (err) {
        this.log.error({ err }, 'relaying an app message failed');
      }
    });
    channel.stateChanged.subscribe((state) => {
      if (state === 'closed' && this.ingest === leg) this.toApp.detach();
    });
    this.toApp.attach(channel);
  }

  private fanOut(payload: ChannelPayload): void {
    this.replay.record(payload);
    for (const viewer of this.viewers.values()) viewer.send(payload);
  }

  private onIngestConnected(leg: IngestLeg): void {
    if (this.ingest !== leg) return;
    this.log.info('ingest connected');
    this.stopRemb();
    this.lastRembMs = undefined;
    // libwebrtc takes a higher REMB at once only in its first ~2 s (its start phase), then climbs
    // by 8 %/s: the controller steps every START_PHASE_REMB_INTERVAL_MS until then, so the app can
    // reach what a clean path carries while it still listens.
    const period = this.options.rembIntervalMs ?? 1_000;
    const startPeriod = Math.min(period, START_PHASE_REMB_INTERVAL_MS);
    this.rembTimer = this.clock.setInterval(() => this.sendRemb(), startPeriod);
    if (startPeriod < period) {
      this.startPhaseTimer = this.clock.setTimeout(() => {
        this.startPhaseTimer = undefined;
        this.rembTimer?.cancel();
        this.rembTimer = this.clock.setInterval(() => this.sendRemb(), period);
      }, START_PHASE_MS);
    }
    this.sendRemb();
    this.listeners.emit('ingestConnected');
  }

  /** One REMB period ended: the bitrate policy takes a step from what each viewer leg got and lost in it. */
  private sendRemb(): void {
    const now = this.clock.now();
    const seconds = this.lastRembMs === undefined ? 0 : (now - this.lastRembMs) / 1000;
    this.lastRembMs = now;
    let viewerLost = false;
    let forwardedBps = Infinity;
    for (const [playerId, leg] of this.viewers) {
      const counts = { ...leg.counts };
      const before = this.legCounts.get(playerId);
      this.legCounts.set(playerId, counts);
      if (before === undefined || seconds <= 0) continue;
      if (viewerLegLosing(before, counts)) viewerLost = true;
      forwardedBps = Math.min(forwardedBps, ((counts.bytes - before.bytes) * 8) / seconds);
    }
    const bps = this.bitrate.step({
      nowMs: now,
      forwardedBps: Number.isFinite(forwardedBps) ? forwardedBps : 0,
      viewerLost,
      lowestEstimateBps: lowestFreshEstimate(this.estimates.values(), now),
    });
    if (this.ingest?.sendRemb(bps)) this.counters.rembBps = bps;
  }

  private stopRemb(): void {
    this.rembTimer?.cancel();
    this.rembTimer = undefined;
    this.startPhaseTimer?.cancel();
    this.startPhaseTimer = undefined;
  }

  /** Releases the ingest; `report` fires ingestFailed (not for a replacement or close()). */
  private dropIngest(leg: IngestLeg, reason: string, report: boolean): void {
    if (this.ingest !== leg) return;
    this.ingest = undefined;
    const loss = leg.lossStats();
    for (const key of Object.keys(loss) as (keyof IngestLossStats)[]) this.pastIngestLoss[key] += loss[key];
    this.stopRemb();
    this.toApp.detach();
    this.track(leg.close());
    if (report) {
      this.log.warn({ reason }, 'ingest failed');
      this.listeners.emit('ingestFailed', reason);
    }
  }

  private onViewerLost(leg: ViewerLeg, reason: string): void {
    if (this.viewers.get(leg.playerId) !== leg) return;
    this.releaseViewer(leg.playerId, leg);
    this.log.info({ playerId: leg.playerId, reason }, 'viewer disconnected');
    this.listeners.emit('viewerDisconnected', leg.playerId, reason);
  }

  private releaseViewer(playerId: string, leg: ViewerLeg): void {
    this.viewers.delete(playerId);
    this.estimates.delete(playerId);
    this.legCounts.delete(playerId);
    this.track(leg.close());
  }

  private viewer(playerId: string): ViewerLeg {
    const leg = this.viewers.get(playerId);
    if (leg === undefined) throw new RelayError('UNKNOWN_VIEWER', `No viewer ${playerId}`);
    return leg;
  }

  private emitStreamerCandidate(candidate: RelayIceCandidate): void {
    for (const listener of [...this.streamerCandidateListeners]) this.callListener(() => listener(candidate));
  }

  private emitViewerCandidate(playerId: string, candidate: RelayIceCandidate): void {
    const twin = this.options.publicIp ? publicIpCandidate(candidate.candidate, this.options.publicIp) : undefined;
    for (const c of twin === undefined ? [candidate] : [candidate, { ...candidate, candidate: twin }]) {
      for (const listener of [...this.viewerCandidateListeners]) this.callListener(() => listener(playerId, c));
    }
  }

  private callListener(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err }, 'candidate listener threw');
    }
  }

  private dropped(target: string, reason: string): void {
    if (this.counters.dataChannelMessagesDropped++ === 0) this.log.warn({ target, reason }, 'dropping data-channel messages');
  }

  private track(closing: Promise<void>): void {
    this.closings.add(closing);
    void closing.finally(() => this.closings.delete(closing));
  }

  private assertOpen(): void {
    if (this.closed) throw new RelayError('RELAY_CLOSED', 'The relay is closed');
  }
}

function validateOptions(options: RelayOptions): void {
  const { startBps, minBps, maxBps } = options.bitrate;
  const positive = (n: number): boolean => Number.isFinite(n) && n > 0;
  if (!positive(minBps) || !positive(startBps) || !positive(maxBps) || !(minBps <= startBps && startBps <= maxBps)) {
    throw new RelayError('INVALID_OPTIONS', `bitrate must satisfy 0 < minBps ≤ startBps ≤ maxBps (got ${minBps}, ${startBps}, ${maxBps})`);
  }
  const range = options.portRange;
  if (range && !(Number.isInteger(range.min) && Number.isInteger(range.max) && range.min >= 1 && range.max <= 65_535 && range.min < range.max)) {
    throw new RelayError('INVALID_OPTIONS', `portRange must be 1 ≤ min < max ≤ 65535 (got ${range.min}–${range.max})`);
  }
  const ipv4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
  for (const address of [...options.hostAddresses, ...(options.publicIp ? [options.publicIp] : [])]) {
    const m = ipv4.exec(address);
    if (!m || m.slice(1).some((octet) => Number(octet) > 255)) throw new RelayError('INVALID_OPTIONS', `${address} is not an IPv4 address`);
  }
}
