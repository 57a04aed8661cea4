// The player signalling gateway: one WebSocket per viewer at {share_url}/<projectId>/signalling,
// speaking Epic's player dialect (signaling's PlayerEndpoint) plus our pixelfleet* messages. It
// creates the viewer's session, tells it its place in line, and relays offer/answer/ICE between
// the browser and the session's agent over the agent's gRPC stream.
//
// A short signalling drop does not kill a healthy stream (architecture §2): when a Running or
// Starting session's socket vanishes (1006: no close frame, or the keepalive gave up) the session is held
// for `resumeGraceMs` (so is one the page closed with 4009, `resuming`, after hearing nothing
// for too long), and a socket opened with `?resume=<sessionId>` whose first message is
// `pixelfleetResume` with the session's viewer token takes its place. The media never went
// through this socket, so the browser's peer connection carries on untouched. A viewer waiting in
// line keeps its place the same way, and a session still negotiating finishes its negotiation
// on the resumed socket (below). A socket that dies loses what was in flight on it; both sides
// count what they read on the session's sockets (SignallingJournal), so the resume sends again,
// each way, exactly what the other never got (answerResume).
//
// A control plane restart is such a drop for every viewer at once: a graceful stop closes each
// socket with 1012 (`serviceRestarting`), which the page answers by resuming, and ends no
// session; at start every session the previous run left is held for its viewer (holdRestored),
// whatever its status, for the same grace. What the session's relay says while its viewer is
// away (an offer, ICE candidates, that its app is ready to be listed) waits for the resumed socket,
// so a session caught negotiating by a restart finishes its negotiation on the next run.
//
// Nothing a viewer sends may grow without bound past this gateway: PlayerEndpoint bounds the rate
// of messages and the unsent data per socket, a resuming socket gets no answer to anything before
// its token, a session's ICE candidates to the agent are capped, and an address creates sessions
// no faster than its token bucket allows (AddressRateLimit; a resume creates none).
// Longer than ~400 lines: one socket's whole life (admission, line, negotiation, resume, close)
// shares the per-viewer state held here; its pure parts already live beside it (viewer-candidates,
// signal routing in the session service). The next cut is the resume hold, when it grows.
import type { WebSocket } from 'ws';
import type { Logger } from 'pino';
import { PlayerEndpoint, SignallingJournal, SignallingUsageError, VIEWER_CLOSES, viewerClose, type RelayToViewerSignal, type ViewerToRelaySignal } from '@pixelfleet/signaling';
import type { IceServer } from '@pixelfleet/signaling';
import { SampledLog, type Clock, type TimerHandle } from '@pixelfleet/common';
import type { ProjectsRepository } from '../repositories/projects';
import type { WorkerRegistry } from '../workers/registry';
import type { SessionService } from '../sessions/session-service';
import type { SessionRecord } from '../repositories/sessions';
import { SESSION_END, closeForEndReason, type SessionEndCause, type ViewerClose } from '../sessions/session-end';
import { latestEndMs } from '../sessions/session-timers';
import { AddressRateLimit } from '../lib/address-rate-limit';
import { clientBlock } from '../lib/ip-address';
import type { ViewerOrigin } from '../enrichment/client-dimensions';
import type { ClientDimensions } from '../repositories/session-dimensions';
import { turnIceServer, withTurnServer, type TurnSettings } from './turn-credentials';
import { viewerCandidateAllowed } from './viewer-candidates';
import { ACTIVE_SUBSCRIPTION } from '../auth/project-access';
import type { QueueWaitEstimator } from '../sessions/queue-wait';

/** Our close for a resume that cannot be honoured: unknown session, wrong token, not resumable. */
export const RESUME_REFUSED: ViewerClose = viewerClose('resumeRefused');

/** Our close for a viewer from an address that already has `limits.perAddress` sockets or sessions here. */
export const TOO_MANY_FROM_ADDRESS: ViewerClose = viewerClose('tooManyConnections');

/** Our close for a viewer arriving when the project's queue already holds `limits.queuedPerProject` sessions. */
export const QUEUE_FULL: ViewerClose = viewerClose('queueFull');

/** Our close for a viewer whose address created sessions faster than `limits.sessionsPerMinute` (past `limits.sessionBurst`). */
export const TOO_MANY_SESSIONS: ViewerClose = viewerClose('tooManySessions');

/** Our close for a new viewer of a project whose subscription is not `active`. */
export const SUBSCRIPTION_INACTIVE: ViewerClose = viewerClose('subscriptionInactive');

/** Our close for a socket opened by a page on a site the project's embedOrigins does not list. */
export const ORIGIN_REFUSED: ViewerClose = viewerClose('originRefused');

/** Our close for a resuming socket whose first message is anything but `pixelfleetResume`. */
export const RESUME_NOT_FIRST: ViewerClose = viewerClose('resumeNotFirst');

/** How long a resuming socket may take to send its `pixelfleetResume`. */
export const RESUME_HANDSHAKE_MS = 10_000;

/**
 * ICE candidates a session's viewer may send to its agent, over all its sockets. A browser
 * gathers a handful per interface and ICE server (tens at most) for the one negotiation a session
 * has; every candidate crosses the gRPC link and costs the shared agent's werift more than the last.
 */
export const MAX_ICE_CANDIDATES_PER_SESSION = 64;

/** Our close for a viewer past MAX_ICE_CANDIDATES_PER_SESSION; the session ends as the viewer leaving. */
export const TOO_MANY_ICE_CANDIDATES: ViewerClose = viewerClose('tooManyIceCandidates');

/**
 * Relay configs kept for sessions with no viewer (warm instances, a few per project): a bound, since
 * agents send them (each only for a session it holds).
 */
export const MAX_UNCLAIMED_CONFIGS = 10_000;

/** Relay signals kept for a viewer whose socket is away (a negotiation: config, offer, the relay's candidates); the oldest go past it. */
export const MAX_HELD_RELAY_SIGNALS = 128;

/** A session's viewer: its socket, or none while a dropped socket may be resumed. */
interface Viewer {
  readonly sessionId: string;
  readonly projectId: string;
  /** The client address the session was opened from (counted against `limits.perAddress`). */
  /** Set again from the resuming socket for a session held across a restart (its address is not stored). */
  address: string;
  /** clientBlock(address), worked out once: the per-client limits compare it with every arrival's. */
  block: string;
  endpoint: PlayerEndpoint | undefined;
  /** The queue message last sent (position, whether the line waits for a server, the estimate), so an unchanged one is not sent again. */
  lastQueue: string | undefined;
  /** ICE candidates the viewer sent so far, relayed or dropped (resumed sockets included). */
  iceCandidates: number;
  /** …of which were dropped for naming a non-public address (viewer-candidates.ts). */
  iceCandidatesDropped: number;
  /** Set while detached: ends the session when the grace runs out. */
  graceTimer: TimerHandle | undefined;
  /** The app's streamer id once it identified: every socket of the session may list it (a resumed one included). */
  streamerId?: string;
  /** Relay signals that arrived while no socket was attached, in order, for the resumed socket. */
  heldSignals?: RelayToViewerSignal[];
  /**
   * Frames read and written on the session's sockets in this run (signalling-journal.ts), for the
   * resumed socket to replay what a dying one lost. None for a session a previous run left, until its viewer is back.
   */
  journal: SignallingJournal | undefined;
  /** A dropped socket's `listStreamers` that was still waiting for the app: the resumed socket answers it. */
  owesStreamerList: boolean;

  readonly log: Logger;
}

export interface ViewerGatewayDeps {
  sessions: SessionService;
  projects: ProjectsRepository;
  registry: WorkerRegistry;
  clock: Clock;
  /** How long a Running session outlives a dropped signalling socket; 0 disables resuming. */
  resumeGraceMs: number;
  limits: ViewerLimits;
  /** Absolute URL the page posts telemetry to. */
  telemetryUrl: () => string;
  log: Logger;
  /** What the server derives of a new session's viewer (User-Agent, GeoIP); none when absent. */
  clientOf?: (origin: ViewerOrigin) => ClientDimensions;
  /** config.turn: each viewer's `config` gets its session's TURN credential (turn-credentials.ts); none when absent. */
  turn?: TurnSettings;
  /** network.allowPrivateViewerCandidates: relay candidates naming private addresses too (viewer-candidates.ts). */
  allowPrivateViewerCandidates: boolean;
  /** The share page's own origin: its sockets are always welcome, whatever a project's embedOrigins. */
  shareOrigin: () => string;
  /** Each queued viewer's estimated wait (queue-wait.ts); none sent when absent. */
  queueWait?: QueueWaitEstimator;
}

/**
 * Admission limits, so one client cannot fill a project's queue or the server's memory with
 * sessions nobody watches. 0 turns a limit off.
 */
export interface ViewerLimits {
  /**
   * New sessions: a client address may have this many viewers (waiting, watching, or away while
   * their session is held) plus resuming sockets. Resuming sockets: this many per address that
   * have not yet sent their token (a held session does not count against its own resume).
   */
  perAddress: number;
  /** Sessions waiting in one project's queue. */
  queuedPerProject: number;
  /** New sessions per client address per minute, after a full bucket of `sessionBurst`; resumes are not new sessions. 0 = no limit. */
  sessionsPerMinute: number;
  /** New sessions a client address may create back to back (the bucket's size, at least 1). */
  sessionBurst: number;
}

/** A resuming socket's request, once it sent `pixelfleetResume`. */
interface ResumeRequest {
  readonly address: string;
  readonly projectId: string;
  readonly sessionId: string;
  readonly viewerToken: string;
  /** Frames the page has read from the session's sockets, when it keeps count. */
  readonly pageReceived: number | undefined;
}

/** Where a viewer socket comes from and what it asks for. */
export interface ViewerArrival {
  /** The client address (the socket's peer, or X-Forwarded-For from a trusted proxy). */
  address: string;
  /** Set for `?resume=<sessionId>` ('' when the value was malformed): the socket must prove it is that session's viewer. */
  resumeSessionId?: string;
  /** The upgrade request's User-Agent. */
  userAgent?: string;
  /** The upgrade request's Origin (every browser sends one): checked against the project's embedOrigins. */
  origin?: string | undefined;
}

export class ViewerGateway {
  private readonly viewers = new Map<string, Viewer>();
  /** Resuming sockets that have not yet sent their token, with their client block (clientBlock). */
  private readonly pending = new Map<PlayerEndpoint, string>();
  /** Set by close(): sockets closing now are the shutdown's, not viewers leaving. */
  private closing = false;
  /**
   * The relay's `config` for sessions with no viewer yet (warm instances: the relay sends it when the
   * session starts), passed on to the viewer who claims one. At most MAX_UNCLAIMED_CONFIGS, the oldest
   * dropped; gone when the session ends.
   */
  private readonly unclaimedConfigs = new Map<string, RelayToViewerSignal>();
  private readonly sessionRate: AddressRateLimit;
  private readonly refusals: SampledLog;

  constructor(private readonly deps: ViewerGatewayDeps) {
    this.refusals = new SampledLog(deps.clock, deps.log);
    this.sessionRate = new AddressRateLimit(deps.clock, { burst: deps.limits.sessionBurst, perMinute: deps.limits.sessionsPerMinute });
    const sessions = deps.sessions;
    sessions.on('queueChanged', (projectId) => this.sendPositions(projectId));
    sessions.on('placed', (s) => this.viewers.get(s.sessionId)?.endpoint?.sendCustom({ type: 'pixelfleetStatus', status: 'starting' }));
    sessions.on('streamerReady', (s, streamerId) => {
      const viewer = this.viewers.get(s.sessionId);
      if (viewer === undefined) return;
      // Kept for a socket that is away now (a restart, a drop): it lists the streamer once back.
      viewer.streamerId = streamerId;
      viewer.endpoint?.setStreamerAvailable(streamerId);
    });
    sessions.on('signal', (sessionId, signal) => {
      if (signal.type === 'config' && !this.viewers.has(sessionId)) return this.keepUnclaimedConfig(sessionId, signal);
      this.relayToViewer(sessionId, signal);
    });
    sessions.on('ended', (s, close) => {
      this.unclaimedConfigs.delete(s.sessionId);
      const viewer = this.viewers.get(s.sessionId);
      if (!viewer) return;
      this.viewers.delete(s.sessionId);
      viewer.graceTimer?.cancel();
      viewer.endpoint?.close(close.code, close.reason);
    });
  }

  /** Number of viewers (waiting, watching, or holding their session while their socket is away). */
  get size(): number {
    return this.viewers.size;
  }

  /** Number of viewers whose socket dropped and whose session waits for them to resume. */
  get detached(): number {
    let n = 0;
    for (const viewer of this.viewers.values()) if (viewer.endpoint === undefined) n += 1;
    return n;
  }

  /**
   * Takes a new viewer socket (already open) for a project: a new session, or, with resumeSessionId,
   * a socket that must prove with its first message that it is that session's viewer.
   */
  accept(socket: WebSocket, projectId: string, arrival: ViewerArrival): void {
    const { address, resumeSessionId } = arrival;
    const block = clientBlock(address);
    // A resuming socket belongs to no session until its token has been checked: until then it may
    // only send the token, and hears nothing back (not even a pong) for any project id it names.
    const endpoint = new PlayerEndpoint(socket, { peerConnectionOptions: 'deferred', ...(resumeSessionId === undefined ? {} : { resumeFirst: RESUME_NOT_FIRST }) });
    // Stopping: the page resumes against the next run.
    if (this.closing) return endpoint.close(VIEWER_CLOSES.serviceRestarting.code, VIEWER_CLOSES.serviceRestarting.reason);
    const { perAddress, queuedPerProject } = this.deps.limits;
    const turnAway = (close: ViewerClose, why: string) => {
      this.deps.log.warn({ projectId, address }, why);
      endpoint.close(close.code, close.reason);
    };
    const project = this.deps.projects.findById(projectId);
    // New sockets and resumes alike: a page on another site may not drive the stream, even one it resumed.
    if (project !== undefined && !this.originAllowed(arrival.origin, project.settings.embedOrigins)) {
      // Anyone may put the link in a page of their own: one line a minute per project.
      this.refusals.for(`origin:${projectId}`).warn({ projectId, origin: arrival.origin }, "viewer refused: its page's origin is not in the project's embedOrigins");
      return endpoint.close(ORIGIN_REFUSED.code, ORIGIN_REFUSED.reason);
    }
    if (resumeSessionId !== undefined) {
      if (perAddress > 0 && this.resumingFrom(block) >= perAddress) return turnAway(TOO_MANY_FROM_ADDRESS, 'resuming socket refused: too many from its address');
      return this.awaitResume(endpoint, address, block, projectId, resumeSessionId);
    }
    const refuse = (cause: SessionEndCause) => endpoint.close(SESSION_END[cause].close.code, SESSION_END[cause].close.reason);
    if (!project) return endpoint.close(VIEWER_CLOSES.projectNotFound.code, VIEWER_CLOSES.projectNotFound.reason);
    if (!project.enabled) return refuse('projectDisabled');
    // GPU time is what a subscription pays for: none for a new viewer while it is not active.
    if (project.subscriptionStatus !== ACTIVE_SUBSCRIPTION) {
      // Anyone may open the link in a loop: one line a minute per project.
      this.refusals.for(projectId).warn({ projectId, subscriptionStatus: project.subscriptionStatus }, "viewer refused: the project's subscription is not active");
      return endpoint.close(SUBSCRIPTION_INACTIVE.code, SUBSCRIPTION_INACTIVE.reason);
    }
    if (project.liveUploadId === undefined) return refuse('appNotFound');
    if (!this.deps.registry.hasServiceableWorker(project.region)) return refuse('noWorker');
    if (perAddress > 0 && this.viewersFrom(block) + this.resumingFrom(block) >= perAddress) return turnAway(TOO_MANY_FROM_ADDRESS, 'viewer refused: too many from its address');
    if (queuedPerProject > 0 && this.deps.sessions.queues.length(projectId) >= queuedPerProject) return turnAway(QUEUE_FULL, 'viewer refused: the queue is full');
    // Last, so that only a session about to be created takes a token.
    const admission = this.sessionRate.take(address);
    if (!admission.admitted) {
      // One line per run of refusals: a loop refused at the socket's pace must not become a loop of log lines.
      if (admission.refusedInRow === 1) this.deps.log.warn({ projectId, address }, 'viewer refused: too many new sessions from its address (not logged again until it gets one)');
      return endpoint.close(TOO_MANY_SESSIONS.code, TOO_MANY_SESSIONS.reason);
    }
    if (admission.refusedBefore > 0) this.deps.log.warn({ projectId, address, refused: admission.refusedBefore }, 'address gets a session again after refusals over the session rate limit');

    const client = this.deps.clientOf?.({ address, userAgent: arrival.userAgent });
    // A warm instance when the project has one to give (warm-pool.ts); otherwise a place in line.
    const warm = this.deps.sessions.claimWarm(project, client);
    const { session, viewerToken } = warm ?? this.deps.sessions.create(project, client);
    const journal = new SignallingJournal();
    const viewer: Viewer = {
      sessionId: session.sessionId,
      projectId,
      address,
      block,
      endpoint: undefined,
      lastQueue: undefined,
      iceCandidates: 0,
      iceCandidatesDropped: 0,
      graceTimer: undefined,
      journal,
      owesStreamerList: false,
      log: this.deps.log.child({ sessionId: session.sessionId, projectId }),
    };
    this.viewers.set(session.sessionId, viewer);
    // From its first frame: the page counts `pixelfleetSession` too.
    endpoint.keepJournal(journal);
    endpoint.sendCustom({
      type: 'pixelfleetSession',
      sessionId: session.sessionId,
      viewerToken,
      telemetryUrl: this.deps.telemetryUrl(),
      resumeWindowSeconds: Math.floor(this.deps.resumeGraceMs / 1000),
    });
    // Served warm: its server is assigned already, which the page hears before the streamer list
    // (attach sends that at once when the app is ready, and the page would go back to "starting" after it).
    if (warm !== undefined) endpoint.sendCustom({ type: 'pixelfleetStatus', status: 'starting' });
    this.attach(viewer, endpoint);
    if (warm === undefined) return this.sendPosition(viewer);
    // The relay's config, which it sent when the instance started, then the streamer when its app is
    // ready: Epic's frontend subscribes only once it has its config.
    const config = this.unclaimedConfigs.get(session.sessionId);
    this.unclaimedConfigs.delete(session.sessionId);
    if (config !== undefined) this.relayToViewer(session.sessionId, config);
    if (session.identifiedAt !== undefined && session.streamingId !== undefined) {
      viewer.streamerId = session.streamingId;
      endpoint.setStreamerAvailable(session.streamingId);
    }
  }

  /**
   * At start: holds each session a previous run left (holdRestored's caller: SessionService.restoreAtStart)
   * for its viewer to resume, as after a drop. With no resume grace nobody can come back: they end.
   */
  holdRestored(sessions: readonly SessionRecord[]): void {
    for (const s of sessions) {
      if (this.deps.resumeGraceMs === 0) {
        this.deps.sessions.end(s.sessionId, 'controlPlaneRestarted');
        continue;
      }
      const viewer: Viewer = {
        sessionId: s.sessionId,
        projectId: s.projectId,
        // Not stored: a held session counts against no address until its viewer is back.
        address: '',
        block: '',
        endpoint: undefined,
        lastQueue: undefined,
        iceCandidates: 0,
        iceCandidatesDropped: 0,
        graceTimer: undefined,
        // What the last run's sockets carried is gone with it: the resumed socket starts a count of its own.
        journal: undefined,
        owesStreamerList: false,
        log: this.deps.log.child({ sessionId: s.sessionId, projectId: s.projectId }),
      };
      this.viewers.set(s.sessionId, viewer);
      this.detach(viewer, 'control plane restarted', 'controlPlaneRestarted');
    }
  }

  /**
   * Shutdown (a deploy, SIGTERM): every viewer socket is closed with 1012, which the page answers
   * by resuming against the next run; no session ends, and held sessions stay held in the store.
   */
  close(): void {
    this.closing = true;
    for (const endpoint of [...this.pending.keys()]) endpoint.close(VIEWER_CLOSES.serviceRestarting.code, VIEWER_CLOSES.serviceRestarting.reason);
    for (const viewer of [...this.viewers.values()]) {
      viewer.graceTimer?.cancel();
      viewer.graceTimer = undefined;
      viewer.endpoint?.close(VIEWER_CLOSES.serviceRestarting.code, VIEWER_CLOSES.serviceRestarting.reason);
    }
    this.viewers.clear();
  }

  /**
   * An empty list is open to every site. Otherwise the share page's own origin (publicUrls.share's)
   * and the listed ones pass. Not an Origin that merely names the Host the socket was opened on: a
   * name an attacker points at this server (DNS rebinding) would make their page "same-origin". A
   * socket without Origin is no browser's (a browser always sends one, and anything else can write
   * whatever Origin it likes), so the list cannot bind it and it passes.
   */
  private originAllowed(origin: string | undefined, embedOrigins: readonly string[]): boolean {
    if (embedOrigins.length === 0 || origin === undefined) return true;
    return origin === this.deps.shareOrigin() || embedOrigins.includes(origin);
  }

  /** Wires a socket to its session: the browser's signalling goes to the agent, its loss to detach(). */
  private attach(viewer: Viewer, endpoint: PlayerEndpoint): void {
    viewer.endpoint = endpoint;
    const { sessionId } = viewer;
    if (viewer.journal !== undefined) endpoint.keepJournal(viewer.journal);
    if (viewer.owesStreamerList) endpoint.oweStreamerList();
    viewer.owesStreamerList = false;
    // A resumed socket may list (and subscribe to) the app that identified before it came back.
    if (viewer.streamerId !== undefined) endpoint.setStreamerAvailable(viewer.streamerId);
    const toAgent = (signal: ViewerToRelaySignal) => {
      if (!this.deps.sessions.signalToAgent(sessionId, signal)) {
        viewer.log.debug({ type: signal.type }, 'viewer signal not relayed: the session has no relay (not placed, or ending)');
      }
    };
    endpoint.on('subscribe', (streamerId) => toAgent({ type: 'subscribe', streamerId }));
    endpoint.on('unsubscribe', () => toAgent({ type: 'unsubscribe' }));
    endpoint.on('answer', (a) => toAgent({ type: 'answer', ...a }));
    endpoint.on('iceCandidate', (candidate) => {
      viewer.iceCandidates += 1;
      if (viewer.iceCandidates > MAX_ICE_CANDIDATES_PER_SESSION) {
        viewer.log.warn({ limit: MAX_ICE_CANDIDATES_PER_SESSION }, 'viewer closed: too many ICE candidates');
        endpoint.close(TOO_MANY_ICE_CANDIDATES.code, TOO_MANY_ICE_CANDIDATES.reason);
        return;
      }
      if (viewerCandidateAllowed(candidate.candidate, this.deps.allowPrivateViewerCandidates)) return toAgent({ type: 'iceCandidate', candidate });
      // Every browser on the Internet sends a few (its LAN addresses, mDNS names): not worth more than debug.
      if (viewer.iceCandidatesDropped++ === 0) viewer.log.debug('viewer ICE candidate naming a non-public address dropped');
    });
    endpoint.on('resume', () => endpoint.close(VIEWER_CLOSES.resumeNotResuming.code, VIEWER_CLOSES.resumeNotResuming.reason));
    endpoint.on('protocolError', (reason) => viewer.log.warn({ reason }, 'viewer signalling rejected'));
    endpoint.on('closed', (code, reason) => {
      // Ours when the session ended, a resumed socket replaced this one, or the control plane is stopping.
      if (this.closing || this.viewers.get(sessionId) !== viewer || viewer.endpoint !== endpoint) return;
      viewer.endpoint = undefined;
      viewer.owesStreamerList = endpoint.owesStreamerList;
      // 1006: the socket vanished (no close frame, or our keepalive gave up). 4009 (resuming): the
      // page gave the socket up as silent and is already resuming. Any other close is the viewer leaving.
      const dropped = code === VIEWER_CLOSES.connectionLost.code || code === VIEWER_CLOSES.resuming.code;
      if (dropped && this.resumable(sessionId)) return this.detach(viewer, reason);
      this.viewers.delete(sessionId);
      viewer.log.info({ code, reason }, 'viewer left');
      this.deps.sessions.end(sessionId, 'viewerLeft');
    });
  }

  /**
   * A stream that is up survives its signalling socket, a viewer in line keeps its place, and a
   * session still negotiating picks up where it stood: what its relay says meanwhile is held for
   * the resumed socket (heldRelaySignals) and the page asks again for what it never got.
   */
  private resumable(sessionId: string): boolean {
    const status = this.deps.sessions.get(sessionId).status;
    return this.deps.resumeGraceMs > 0 && (status === 'Running' || status === 'Enqueued' || status === 'Starting');
  }

  /** Holds the session for `resumeGraceMs`; past it the session ends for `cause`. */
  private detach(viewer: Viewer, reason: string, cause: SessionEndCause = 'viewerLeft'): void {
    viewer.log.info({ reason, graceMs: this.deps.resumeGraceMs }, 'viewer signalling dropped; holding the session for a resume');
    viewer.graceTimer = this.deps.clock.setTimeout(() => {
      viewer.graceTimer = undefined;
      if (this.viewers.get(viewer.sessionId) !== viewer || viewer.endpoint !== undefined) return;
      this.viewers.delete(viewer.sessionId);
      viewer.log.info('viewer did not resume in time');
      this.deps.sessions.end(viewer.sessionId, cause);
    }, this.deps.resumeGraceMs);
  }

  /** Viewers (any state, held ones included) whose session was opened from a client block (clientBlock). */
  private viewersFrom(block: string): number {
    let n = 0;
    for (const viewer of this.viewers.values()) if (viewer.block === block) n += 1;
    return n;
  }

  /** Resuming sockets from a client block still waiting for their token. */
  private resumingFrom(block: string): number {
    let n = 0;
    for (const from of this.pending.values()) if (from === block) n += 1;
    return n;
  }

  private awaitResume(endpoint: PlayerEndpoint, address: string, block: string, projectId: string, sessionId: string): void {
    this.pending.set(endpoint, block);
    const handshake = this.deps.clock.setTimeout(() => endpoint.close(VIEWER_CLOSES.resumeNotRequested.code, VIEWER_CLOSES.resumeNotRequested.reason), RESUME_HANDSHAKE_MS);
    endpoint.on('closed', () => {
      handshake.cancel();
      this.pending.delete(endpoint);
    });
    endpoint.on('protocolError', (reason) => this.deps.log.warn({ sessionId, reason }, 'resuming viewer signalling rejected'));
    // The endpoint closes a socket whose first message is anything else (RESUME_NOT_FIRST).
    endpoint.once('resume', (viewerToken, received) => {
      handshake.cancel();
      this.pending.delete(endpoint);
      this.resume(endpoint, { address, projectId, sessionId, viewerToken, pageReceived: received });
    });
  }

  private resume(endpoint: PlayerEndpoint, request: ResumeRequest): void {
    const { address, projectId, sessionId, viewerToken } = request;
    const log = this.deps.log.child({ sessionId, projectId });
    if (!this.deps.sessions.viewerTokenMatches(sessionId, viewerToken)) {
      log.warn('resume refused: unknown session or wrong viewer token');
      return endpoint.close(RESUME_REFUSED.code, RESUME_REFUSED.reason);
    }
    const viewer = this.viewers.get(sessionId);
    if (viewer === undefined || viewer.projectId !== projectId) {
      // The session ended meanwhile: its own viewer may learn why.
      const s = this.deps.sessions.get(sessionId);
      const close = s.projectId === projectId && s.endReason !== undefined ? closeForEndReason(s.endReason) : undefined;
      log.info({ status: s.status }, s.projectId === projectId ? 'resume refused: the session is over' : 'resume refused: the session is not of this project');
      return endpoint.close(close?.code ?? RESUME_REFUSED.code, close?.reason ?? RESUME_REFUSED.reason);
    }
    if (viewer.endpoint !== undefined) {
      // The browser saw its socket die before we did: the token holder wins, as a newer Hello does for workers.
      if (!this.resumable(sessionId)) return endpoint.close(RESUME_REFUSED.code, RESUME_REFUSED.reason);
      const old = viewer.endpoint;
      viewer.endpoint = undefined;
      viewer.owesStreamerList = old.owesStreamerList;
      old.close(VIEWER_CLOSES.resumeReplaced.code, VIEWER_CLOSES.resumeReplaced.reason);
    }
    viewer.graceTimer?.cancel();
    viewer.graceTimer = undefined;
    // A session held across a restart counts against its viewer's address again.
    if (viewer.address === '') {
      viewer.address = address;
      viewer.block = clientBlock(address);
    }
    const replayed = this.answerResume(viewer, endpoint, request.pageReceived, log);
    this.attach(viewer, endpoint);
    // What the page may have missed while away: its place in line, or that its server is assigned.
    const status = this.deps.sessions.get(sessionId).status;
    viewer.lastQueue = undefined;
    if (status === 'Enqueued') this.sendPosition(viewer);
    else if (status === 'Starting') endpoint.sendCustom({ type: 'pixelfleetStatus', status: 'starting' });
    // Then what the relay said while the page was away, in order (a negotiation caught by a restart).
    const held = viewer.heldSignals ?? [];
    viewer.heldSignals = undefined;
    for (const signal of held) this.relayToViewer(sessionId, signal);
    log.info({ status, heldSignals: held.length, ...replayed }, 'viewer signalling resumed');
  }

  /**
   * `pixelfleetResumed`, then what the page never got. With both sides' counts (the page's in its
   * request, ours in the journal) each side sends again what the other missed: the answer carries
   * how many of the page's frames we read. Without them (a page that keeps no count, a session a
   * previous run left, a count that cannot be ours) the answer carries none and both start counting
   * afresh from here: the page then sends what it held and asks again for what it still needs.
   */
  private answerResume(viewer: Viewer, endpoint: PlayerEndpoint, pageReceived: number | undefined, log: Logger): { replayedFrames?: number; framesNoLongerKept?: number } {
    const replay = pageReceived === undefined ? undefined : viewer.journal?.since(pageReceived);
    if (viewer.journal === undefined || replay === undefined) {
      if (viewer.journal !== undefined && pageReceived !== undefined) log.warn({ pageReceived, sent: viewer.journal.sent }, 'resume: the page counts more frames than this session sent; counting afresh');
      viewer.journal = new SignallingJournal();
      endpoint.sendCustom({ type: 'pixelfleetResumed' });
      return {};
    }
    endpoint.sendCustom({ type: 'pixelfleetResumed', received: viewer.journal.received });
    endpoint.replay(replay.frames);
    if (replay.missed > 0) log.warn({ missed: replay.missed }, 'resume: frames the page never got are no longer kept');
    return { replayedFrames: replay.frames.length, ...(replay.missed > 0 ? { framesNoLongerKept: replay.missed } : {}) };
  }

  private keepUnclaimedConfig(sessionId: string, signal: RelayToViewerSignal): void {
    this.unclaimedConfigs.delete(sessionId);
    this.unclaimedConfigs.set(sessionId, signal);
    if (this.unclaimedConfigs.size <= MAX_UNCLAIMED_CONFIGS) return;
    const [oldest] = this.unclaimedConfigs.keys();
    if (oldest !== undefined) this.unclaimedConfigs.delete(oldest);
  }

  private relayToViewer(sessionId: string, signal: RelayToViewerSignal): void {
    const viewer = this.viewers.get(sessionId);
    if (!viewer) return;
    const endpoint = viewer.endpoint;
    if (endpoint === undefined) {
      const held = (viewer.heldSignals ??= []);
      held.push(signal);
      viewer.log.debug({ type: signal.type, held: held.length }, 'relay signal held for a viewer who is away');
      if (held.length > MAX_HELD_RELAY_SIGNALS) {
        held.shift();
        viewer.log.warn({ limit: MAX_HELD_RELAY_SIGNALS }, 'relay signal dropped: too many held for a viewer that is away');
      }
      return;
    }
    try {
      switch (signal.type) {
        case 'config':
          // One per socket: an agent that redialled a restarted control plane sends its config again.
          if (endpoint.configSent) break;
          endpoint.sendConfig(this.deps.turn ? withTurnServer(signal.peerConnectionOptions, this.turnServerFor(sessionId, this.deps.turn)) : signal.peerConnectionOptions);
          break;
        case 'offer':
          endpoint.sendOffer(signal.sdp);
          break;
        case 'iceCandidate':
          endpoint.sendIceCandidate(signal.candidate);
          break;
        default: {
          const unreachable: never = signal;
          throw new Error(`unknown relay signal ${String(unreachable)}`);
        }
      }
    } catch (err) {
      if (!(err instanceof SignallingUsageError)) throw err;
      viewer.log.warn({ err: err.message }, 'relay signal out of order; dropped');
    }
  }

  /** The session's TURN credential, signed now: good until the earlier of the TTL and the session's latest end (turn-credentials.ts). */
  private turnServerFor(sessionId: string, turn: TurnSettings): IceServer {
    return turnIceServer(turn, sessionId, this.deps.clock.now(), latestEndMs(this.deps.sessions.get(sessionId)));
  }

  private sendPositions(projectId: string): void {
    const waitingForServer = this.deps.sessions.awaitsServer(projectId);
    const estimate = this.waitEstimator(projectId);
    for (const sessionId of this.deps.sessions.queues.waiting(projectId)) {
      const viewer = this.viewers.get(sessionId);
      if (viewer) this.sendPosition(viewer, waitingForServer, estimate);
    }
  }

  /** The estimate of the project's line for a position, with the region's capacity read once. */
  private waitEstimator(projectId: string): (position: number) => number | undefined {
    const queueWait = this.deps.queueWait;
    const region = queueWait === undefined ? undefined : this.deps.projects.findById(projectId)?.region;
    if (queueWait === undefined || region === undefined) return () => undefined;
    const workers = this.deps.registry.placeable(region);
    const capacity = { slots: workers.reduce((n, w) => n + w.slots, 0), freeSlots: workers.reduce((n, w) => n + Math.max(0, w.slots - w.usedSlots), 0) };
    return queueWait.forRegion(region, capacity);
  }

  /**
   * The viewer's place in line, whether the line waits for a streaming server to come back (a
   * short outage), and the estimated wait when there is data for one.
   */
  private sendPosition(viewer: Viewer, waitingForServer = this.deps.sessions.awaitsServer(viewer.projectId), estimate = this.waitEstimator(viewer.projectId)): void {
    const position = this.deps.sessions.queues.position(viewer.projectId, viewer.sessionId);
    if (viewer.endpoint === undefined || position === undefined) return;
    const estimatedWaitSeconds = estimate(position);
    const key = `${position}/${waitingForServer}/${estimatedWaitSeconds ?? ''}`;
    if (key === viewer.lastQueue) return;
    viewer.lastQueue = key;
    viewer.endpoint.sendCustom({
      type: 'pixelfleetQueue',
      position,
      queueLength: this.deps.sessions.queues.length(viewer.projectId),
      waitingForServer,
      ...(estimatedWaitSeconds === undefined ? {} : { estimatedWaitSeconds }),
    });
  }
}
