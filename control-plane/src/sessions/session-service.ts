// The session lifecycle: a viewer's session is created Enqueued in its project's line, placed
// on a worker (Starting), Running once the viewer's peer connection is up, and ended for one
// cause in SESSION_END. Every status change goes through move(), the one caller of the transition
// table, which writes a snapshot row and keeps the live counts. Scheduling is asked for here, by
// name (scheduler.requestRun), wherever a session may have become placeable or a slot was freed;
// the gateway hears of each change through on(). What workers report (and what a restart left)
// is read in worker-events.ts, which asks this lifecycle to end, finish or run a session. Timers,
// worker reconcile, live counts and snapshot shaping live in modules of their own beside this one.
import type { Logger } from 'pino';
import type { ViewerToRelaySignal } from '@pixelfleet/signaling';
import { Listeners, SampledLog, type Clock, type TimerHandle } from '@pixelfleet/common';
import type { IdSource } from '../lib/ids';
import { generateSecret, sha256Hex, secretMatchesDigest } from '../lib/secrets';
import { notFound } from '../errors';
import type { EventLog } from '../events/event-log';
import type { SessionRecord, SessionsRepository } from '../repositories/sessions';
import type { Project, ProjectsRepository } from '../repositories/projects';
import type { WorkerRegistry } from '../workers/registry';
import { SNAPSHOT_STATUSES, canMoveSession, type SessionStatus } from './session-status';
import { SESSION_END, viewerCloseFor, type SessionEndCause } from './session-end';
import type { SessionEvents } from './session-events';
import { SessionQueues } from './session-queue';
import { LiveCounts } from './live-counts';
import { enqueuedSession, snapshotOf, startSessionCommand, streamingIdOf } from './session-snapshots';
import { STOP_CONFIRM_MARGIN_MS, STOP_GRACE_MS, SessionTimers } from './session-timers';
import { WorkerEvents } from './worker-events';
import { SignalRoutes } from './signal-routes';
import { Scheduler } from './scheduler';
import type { ClientDimensions } from '../repositories/session-dimensions';
import type { SessionDiagnosisRepository } from '../repositories/session-diagnosis-store';
import type { WarmPoolFailuresRepository } from '../repositories/warm-pool-failures';
import { WARM_POOL_REFRESH_MS, WarmPools, type WarmPoolView } from './warm-pool';

export interface SessionServiceDeps {
  repo: SessionsRepository;
  projects: ProjectsRepository;
  registry: WorkerRegistry;
  events: EventLog;
  clock: Clock;
  ids: IdSource;
  log: Logger;
  /** True when the worker may run sessions of that live build (it holds it, or it is a local build). */
  canRunBuild?: (workerId: string, uploadId: string) => boolean;
  /** Takes the relay's witness that video reached a session's viewer into its diagnosis. */
  diagnoses: Pick<SessionDiagnosisRepository, 'videoShown'>;
  /** From placed (Starting) to the viewer's peer connection up; past it the session ends (`sessions.connectTimeoutSeconds`; 0: none). */
  connectTimeoutMs: number;
  /** How long a Running session whose media legs dropped waits for its viewer to renegotiate (`viewers.resumeGraceSeconds`). */
  resumeGraceMs: number;
  /** Builds whose warm instances keep failing (warm-pool.ts). */
  warmFailures: WarmPoolFailuresRepository;
}

/** End reasons of an unclaimed warm instance that count against its build: its launch failed, or its app exited by itself. */
const WARM_FAILURE_REASONS: ReadonlySet<string> = new Set([SESSION_END.launchFailed.endReason, SESSION_END.appExited.endReason]);

export class SessionService {
  readonly queues = new SessionQueues();
  /** Places the heads of the lines; asked to run by this lifecycle, never by a listener. */
  readonly scheduler: Scheduler;
  /** The projects' warm instances (warm-pool.ts): launched by the scheduler, claimed by new viewers. */
  readonly warm: WarmPools;
  private warmTick: TimerHandle | undefined;
  private readonly listeners: Listeners<SessionEvents>;
  private readonly liveCounts: LiveCounts;
  private readonly timers: SessionTimers;
  private readonly routes: SignalRoutes;
  private readonly repo: SessionsRepository;
  private readonly registry: WorkerRegistry;
  private readonly events: EventLog;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  private readonly log: Logger;
  private readonly projects: ProjectsRepository;
  private readonly connectTimeoutMs: number;
  /** What workers and the control plane's restart tell the lifecycle (worker-events.ts). */
  private readonly workerEvents: WorkerEvents;

  constructor(deps: SessionServiceDeps) {
    ({ repo: this.repo, registry: this.registry, events: this.events, clock: this.clock, ids: this.ids, log: this.log } = deps);
    ({ projects: this.projects, connectTimeoutMs: this.connectTimeoutMs } = deps);
    this.listeners = new Listeners((event, err) => this.log.error({ err, event }, 'session listener failed'));
    this.liveCounts = new LiveCounts((projectId) => this.repo.countLive(projectId));
    this.routes = new SignalRoutes((workerId, envelope) => this.registry.signalToAgent(workerId, envelope), this.log);
    this.timers = new SessionTimers(this.clock, {
      sessionExpired: (sessionId, cause) => this.end(sessionId, cause),
      stopUnconfirmed: (sessionId) => this.workerEvents.onStopUnconfirmed(sessionId),
      workerLost: (workerId) => this.workerEvents.onWorkerLost(workerId),
    }, this.registry.lostGraceMs);
    this.warm = new WarmPools(this.clock, deps.warmFailures, () => deps.projects.listWithWarmPools(), this.events, this.log.child({ component: 'warm-pool' }));
    this.listeners.on('streamerReady', (s) => this.warm.identified(s.sessionId));
    this.scheduler = new Scheduler(this, deps.projects, this.registry, this.log.child({ component: 'scheduler' }), deps.canRunBuild);
    this.workerEvents = new WorkerEvents({
      lifecycle: { end: (id, cause, detail) => this.end(id, cause, detail), finishOnWorker: (s, cause) => this.finishOnWorker(s, cause), markRunning: (s) => this.markRunning(s) },
      listeners: this.listeners,
      repo: this.repo,
      projects: this.projects,
      registry: this.registry,
      queues: this.queues,
      timers: this.timers,
      warm: this.warm,
      routes: this.routes,
      scheduler: this.scheduler,
      clock: this.clock,
      log: this.log,
      agentWarnings: new SampledLog(this.clock, this.log),
      diagnoses: deps.diagnoses,
      connectTimeoutMs: deps.connectTimeoutMs,
      resumeGraceMs: deps.resumeGraceMs,
    });
  }

  /** Adds a listener; returns its unsubscribe function. A throwing listener is logged and skipped. */
  on<K extends keyof SessionEvents>(event: K, listener: (...args: SessionEvents[K]) => void): () => void {
    return this.listeners.on(event, listener);
  }

  get(sessionId: string): SessionRecord {
    const s = this.repo.findById(sessionId);
    if (!s) throw notFound(`session ${sessionId} not found`);
    return s;
  }

  list(filter: { projectId?: string; limit: number }): SessionRecord[] {
    return this.repo.list(filter);
  }

  /**
   * True when no streaming server of the project's region takes sessions right now (none
   * connected and undrained): its queued viewers wait for one to come back within its grace.
   */
  awaitsServer(projectId: string): boolean {
    const region = this.projects.findById(projectId)?.region;
    return region !== undefined && this.registry.placeable(region).length === 0;
  }

  /** Live counts of a project: sessions past Enqueued that have not begun ending, and the line. Reads no SQL once the project was counted. */
  counts(projectId: string): { liveUser: number; queueUser: number } {
    return { liveUser: this.liveCounts.live(projectId), queueUser: this.queues.length(projectId) };
  }

  /**
   * A new viewer of the project: an Enqueued session at the back of the line. It is placed on
   * the scheduler's next run, one turn later, once the caller (the gateway) has registered the
   * viewer and told it its session.
   */
  create(project: Project, client?: ClientDimensions): { session: SessionRecord; viewerToken: string } {
    const now = this.clock.now();
    const sessionId = this.ids.nextSessionId(now);
    const viewerToken = generateSecret('pfv');
    const session = enqueuedSession(sessionId, project, now, client);
    this.repo.insert(session, snapshotOf(session), sha256Hex(viewerToken));
    this.queues.enqueue(project.projectId, sessionId);
    this.timers.setAfkTimeout(sessionId, project.settings.afkTimeout);
    this.events.record('session.status', { sessionId, projectId: project.projectId }, { status: 'Enqueued' });
    this.log.info({ sessionId, projectId: project.projectId }, 'session enqueued');
    this.listeners.emit('queueChanged', project.projectId);
    this.scheduler.requestRun();
    return { session, viewerToken };
  }

  /** The session whose viewer was handed this token, if any (a token presented for another session). */
  sessionOfViewerToken(token: string): string | undefined {
    return this.repo.sessionIdOfViewerTokenHash(sha256Hex(token));
  }

  /** True when the token is the one handed to this session's viewer. */
  viewerTokenMatches(sessionId: string, token: string): boolean {
    const digest = this.repo.viewerTokenHash(sessionId);
    return digest !== undefined && secretMatchesDigest(token, digest);
  }

  /** Places the head of a line on a worker (the scheduler's call): Starting, and StartSession goes to the agent. */
  place(sessionId: string, workerId: string, project: Project): SessionRecord {
    const s = this.get(sessionId);
    this.queues.remove(s.projectId, sessionId);
    const streamingId = s.streamingId ?? streamingIdOf(sessionId);
    const now = this.clock.now();
    const placed = this.move({ ...s, assignedWorker: workerId, streamingId, placedAt: now, uploadId: project.liveUploadId }, 'Starting', undefined);
    // A viewer of a project with a pool who had to wait for a launch: a miss, and past the target the pool grows.
    this.warm.viewerWaited(project, now - s.createdAt, () => this.regionSlots(project.region));
    // The slot is held from now on: the run time counts, and the viewer has the connect timeout to connect.
    this.timers.placed(sessionId, placed.maxRunTime, this.connectTimeoutMs);
    this.registry.sendCommand(workerId, startSessionCommand(placed, project));
    this.log.info({ sessionId, workerId }, 'session placed');
    this.listeners.emit('queueChanged', s.projectId);
    this.listeners.emit('placed', placed);
    return placed;
  }

  /**
   * Launches a warm instance of the project's live build on the worker (the scheduler's call): a
   * pooled session, Starting with no viewer and no snapshot, its slot held from now on. Unclaimed
   * past the project's warmInstanceMaxAgeMinutes it is replaced.
   */
  launchWarm(project: Project, workerId: string): SessionRecord {
    const now = this.clock.now();
    const sessionId = this.ids.nextSessionId(now);
    const session: SessionRecord = { ...enqueuedSession(sessionId, project, now, undefined), status: 'Starting', assignedWorker: workerId, placedAt: now, uploadId: project.liveUploadId, pooled: true };
    this.repo.insert(session, undefined);
    this.routes.track(session);
    this.warm.tracked(session);
    this.timers.warmInstancePlaced(sessionId, project.settings.warmInstanceMaxAgeMinutes * 60_000);
    this.registry.sendCommand(workerId, startSessionCommand(session, project));
    this.events.record('session.status', { sessionId, projectId: project.projectId, workerId }, { status: 'Starting', pooled: true });
    this.log.info({ sessionId, projectId: project.projectId, workerId }, 'warm instance launched');
    return session;
  }

  /**
   * A new viewer of the project takes a warm instance, when the project has one to give and nobody
   * of it waits in line (a claim never jumps the line, nor the project's concurrency limit): the
   * instance becomes the viewer's session, Starting as of now (its snapshots say it queued for no
   * time and was assigned at once), with the viewer's token and its own run, connect and idle
   * timers. The scheduler's next run launches its replacement. Undefined when there is none to take.
   */
  claimWarm(project: Project, client?: ClientDimensions): { session: SessionRecord; viewerToken: string } | undefined {
    const { projectId } = project;
    if (this.queues.length(projectId) > 0) return undefined;
    const limit = project.settings.maxConcurrentSessions;
    if (limit > 0 && this.counts(projectId).liveUser >= limit) return undefined;
    // Every new viewer comes here: a project without instances reads nothing more (placeable() reads each worker's slots).
    if (this.warm.ofProject(projectId).length === 0) return undefined;
    const takesSessions = new Set(this.registry.placeable(project.region).map((w) => w.workerId));
    const instance = this.warm.claimable(projectId, project.liveUploadId, (workerId) => takesSessions.has(workerId));
    if (instance === undefined) return undefined;
    const s = this.get(instance.sessionId);
    const now = this.clock.now();
    const viewerToken = generateSecret('pfv');
    const claimed: SessionRecord = { ...s, pooled: false, claimedAt: now, createdAt: now, placedAt: now, updatedAt: now, maxRunTime: project.settings.maxRunTime, ...(client === undefined ? {} : { client }) };
    const snapshots = [snapshotOf({ ...claimed, assignedWorker: undefined, status: 'Enqueued' }), snapshotOf(claimed)];
    if (!this.repo.claim(claimed, snapshots, sha256Hex(viewerToken))) return undefined;
    this.warm.claimed(s.sessionId);
    this.liveCounts.moved(projectId, 'Enqueued', claimed.status);
    this.routes.track(claimed);
    this.timers.clear(s.sessionId);
    this.timers.setAfkTimeout(s.sessionId, project.settings.afkTimeout);
    this.timers.placed(s.sessionId, claimed.maxRunTime, this.connectTimeoutMs);
    this.events.record('session.status', { sessionId: s.sessionId, projectId, workerId: s.assignedWorker }, { status: claimed.status, warm: true });
    this.log.info({ sessionId: s.sessionId, projectId, workerId: s.assignedWorker, ready: instance.ready, idleMs: now - instance.placedAt }, 'session served by a warm instance');
    // Its replacement.
    this.scheduler.requestRun();
    return { session: claimed, viewerToken };
  }

  /** A project's pool settings changed: which projects have pools is read again, its failures forgotten, and the pools tended now. */
  warmPoolSettingsChanged(projectId: string): void {
    this.warm.refreshProjects();
    this.warm.forgetFailures(projectId);
    this.scheduler.requestRun();
  }

  /** One project's warm pool (admin output). */
  warmPoolOf(project: Project): WarmPoolView {
    return this.warm.view(project);
  }

  /**
   * From now on the pools are tended every WARM_POOL_REFRESH_MS as well as on every session event:
   * a new live build replaces idle instances, a retry time passes, the list of pools is read again.
   */
  startWarmPools(): void {
    this.warm.refreshProjects();
    const tick = () => {
      this.warm.refreshProjects();
      this.scheduler.requestRun();
      this.warmTick = this.clock.setTimeout(tick, WARM_POOL_REFRESH_MS);
    };
    this.warmTick = this.clock.setTimeout(tick, WARM_POOL_REFRESH_MS);
    this.scheduler.requestRun();
  }

  /** Slots of the region's workers that take sessions now. */
  regionSlots(region: string): number {
    return this.registry.placeable(region).reduce((n, w) => n + w.slots, 0);
  }

  /** Relays a viewer's signalling message to the session's relay (signal-routes.ts); false when it has none (not placed yet, or ending). */
  signalToAgent(sessionId: string, signal: ViewerToRelaySignal): boolean {
    return this.routes.toAgent(sessionId, signal);
  }

  /**
   * Ends a session for a cause. Idempotent: an ending or ended session is returned as it is.
   * A session without an app yet ends at once; one with an app moves to Terminating until the
   * agent confirms the stop. The viewer hears the cause's close code at once either way, its
   * reason followed by detail when one is given (viewerCloseFor); the recorded endReason is the table's.
   */
  end(sessionId: string, cause: SessionEndCause, detail?: string): SessionRecord {
    const s = this.get(sessionId);
    if (s.status === 'Terminated' || s.status === 'Terminating') return s;
    const { endReason } = SESSION_END[cause];
    const close = viewerCloseFor(cause, detail);
    this.timers.clear(sessionId);
    let ended: SessionRecord;
    if (s.status === 'Enqueued' || s.assignedWorker === undefined) {
      this.queues.remove(s.projectId, sessionId);
      ended = this.move(s, 'Terminated', endReason);
      this.listeners.emit('queueChanged', s.projectId);
    } else {
      ended = this.move(s, 'Terminating', endReason);
      this.registry.sendCommand(s.assignedWorker, { kind: 'stopSession', sessionId, reason: endReason, graceMs: STOP_GRACE_MS });
      this.timers.stopping(sessionId, STOP_GRACE_MS + STOP_CONFIRM_MARGIN_MS);
    }
    this.log.info({ sessionId, cause }, 'session ending');
    this.listeners.emit('ended', ended, close);
    // A place in the line or under the project's concurrency limit was freed.
    this.scheduler.requestRun();
    return ended;
  }

  /**
   * An operator's end: always ends the session. One already Terminating (its worker unreachable, or
   * its stop unconfirmed) is Terminated now and its slot freed; the stop stays queued for the
   * worker, and a late confirmation changes nothing.
   */
  endByOperator(sessionId: string): SessionRecord {
    const s = this.get(sessionId);
    if (s.status !== 'Terminating') return this.end(sessionId, 'endedByOperator');
    this.log.warn({ sessionId, workerId: s.assignedWorker }, 'an operator ended a session whose worker has not confirmed its stop');
    this.finishOnWorker(s, undefined);
    return this.get(sessionId);
  }

  /** True when the worker holds the session and it is not yet Terminated (its reports about it count). */
  heldBy(sessionId: string, workerId: string): boolean {
    return this.routes.heldBy(sessionId, workerId);
  }

  /**
   * Before an operator moves or removes a worker: every session it holds ends as ended by
   * operator, its app told to stop while the worker's stream lasts, and is Terminated at once (no
   * confirmation will come from a worker that is going). Returns how many ended.
   */
  releaseWorker(workerId: string): number {
    const held = this.repo.listHoldingWorker(workerId);
    for (const s of held) {
      this.end(s.sessionId, 'endedByOperator');
      this.finishOnWorker(this.get(s.sessionId), undefined);
    }
    if (held.length > 0) this.log.info({ workerId, sessions: held.length }, 'sessions on a worker an operator moves or removes ended');
    return held.length;
  }

  /** At start: the deadlines the previous run left, armed again (worker-events.ts). */
  armStoredDeadlines(workers: readonly { workerId: string; link: string; leaseExpiresAt: number | undefined }[]): void {
    this.workerEvents.armStoredDeadlines(workers);
  }

  /** Ends every session of the project that has not begun ending, however old (project disabled). */
  endProjectSessions(projectId: string, cause: SessionEndCause): SessionRecord[] {
    return this.repo.listNotEndingOfProject(projectId).map((s) => this.end(s.sessionId, cause));
  }

  /** At start: the sessions a previous run left, taken up where they stood (worker-events.ts); returns those whose viewers may come back. */
  restoreAtStart(): SessionRecord[] {
    return this.workerEvents.restoreAtStart();
  }

  /** Stops the scheduler and the timers; sessions stay as recorded. Idempotent. */
  close(): void {
    this.scheduler.close();
    this.timers.close();
    this.warmTick?.cancel();
    this.warmTick = undefined;
  }

  /** The app is gone on the worker: the session ends now (with a cause if it was not asked to). */
  private finishOnWorker(s: SessionRecord, cause: SessionEndCause | undefined): void {
    if (s.status === 'Terminated') return;
    this.timers.clear(s.sessionId);
    const wasEnding = s.status === 'Terminating';
    const ended = this.move(s, 'Terminated', cause === undefined ? undefined : SESSION_END[cause].endReason);
    if (!wasEnding && cause !== undefined) this.listeners.emit('ended', ended, SESSION_END[cause].close);
    // The worker's slot is free.
    this.scheduler.requestRun();
  }

  /** The viewer's peer is up (the agent's viewerConnected): Running, its run timers started. */
  private markRunning(s: SessionRecord): SessionRecord {
    const running = this.move(s, 'Running', undefined);
    this.timers.startRunning(running.sessionId);
    this.listeners.emit('running', running);
    return running;
  }

  /** The one place a session's status changes: asked of the transition table, recorded with its snapshot and fleet event. */
  private move(s: SessionRecord, to: SessionStatus, reason: string | undefined): SessionRecord {
    if (!canMoveSession(s.status, to)) throw new Error(`session ${s.sessionId}: ${s.status} → ${to} is not allowed`);
    const next: SessionRecord = { ...s, status: to, endReason: s.endReason ?? reason, updatedAt: this.clock.now() };
    if (next.pooled === true) {
      // An unclaimed warm instance: no customer's session, so no snapshot and no live count.
      this.repo.update(next, undefined);
      this.warm.tracked(next);
      if (s.status !== 'Terminating' && reason !== undefined && WARM_FAILURE_REASONS.has(reason)) this.warm.failed(next, reason);
    } else {
      this.repo.update(next, SNAPSHOT_STATUSES.has(to) ? snapshotOf(next) : undefined);
      this.liveCounts.moved(s.projectId, s.status, to);
    }
    this.routes.track(next);
    this.events.record('session.status', { sessionId: s.sessionId, projectId: s.projectId, workerId: s.assignedWorker }, { status: to, reason });
    return next;
  }
}
