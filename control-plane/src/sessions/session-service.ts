// The session lifecycle: a viewer's session is created Enqueued in its project's line, placed
// on a worker (Starting), Running once the viewer's peer connection is up, and ended for one
// cause in SESSION_END. Every status change goes through SESSION_TRANSITIONS and writes a
// snapshot row; the gateway hears of each change through SessionListener.
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '@pixelfleet/signaling';
import { isSessionId, type IdSource } from '../lib/ids';
import { generateSecret, sha256Hex, secretMatchesDigest } from '../lib/secrets';
import { notFound } from '../errors';
import { isRegionCode, regionDisplayName } from '../regions';
import type { EventLog } from '../events/event-log';
import type { SessionRecord, SessionsRepository, SnapshotData } from '../repositories/sessions';
import type { Project } from '../repositories/projects';
import type { WorkerRegistry } from '../workers/registry';
import type { AgentAck, AgentCommand, AgentHello, AgentSessionEvent, SignalEnvelope } from '@pixelfleet/proto';
import { SNAPSHOT_STATUSES, canMoveSession, isLive, type SessionStatus } from './session-status';
import { SESSION_END, viewerCloseFor, type SessionEndCause, type ViewerClose } from './session-end';
import { SessionQueues } from './session-queue';

/** How long an agent gets to stop an app gracefully before it kills the process tree. */
export const STOP_GRACE_MS = 10_000;
/** How long sessions of an unreachable worker are kept (media can outlive a control-link blip). */
export const WORKER_LOST_GRACE_MS = 120_000;

/** What the viewer gateway and the scheduler hear about sessions. */
export interface SessionListener {
  /** The line of a project changed (someone joined, left or was placed). */
  queueChanged?(projectId: string): void;
  /** The session was placed on a worker. */
  placed?(session: SessionRecord): void;
  /** The app identified itself: viewers may subscribe to this streamer id. */
  streamerReady?(session: SessionRecord, streamerId: string): void;
  running?(session: SessionRecord): void;
  /** The session is over for its viewer (it may still be Terminating on the worker). */
  ended?(session: SessionRecord, close: ViewerClose): void;
  /** A slot was freed or a session became placeable: time to schedule. */
  capacityChanged?(): void;
  /** A signalling message from the session's relay to its viewer. */
  signal?(session: SessionRecord, json: string): void;
}

export class SessionService {
  readonly queues = new SessionQueues();
  private readonly listeners: SessionListener[] = [];
  private readonly runTimers = new Map<string, TimerHandle>();
  private readonly lostTimers = new Map<string, TimerHandle>();
  private readonly afkTimers = new Map<string, TimerHandle>();
  /** Seconds without input before a session ends, per session (the project's afkTimeout at join). */
  private readonly afkSeconds = new Map<string, number>();
  /** Control-plane time of the latest viewer input seen, and the agent's last reported value. */
  /** Starting + Running sessions per project, once counted (see counts()). */
  private readonly liveByProject = new Map<string, number>();
  private readonly lastInput = new Map<string, { atMs: number; reported: number | undefined }>();

  constructor(
    private readonly repo: SessionsRepository,
    private readonly registry: WorkerRegistry,
    private readonly events: EventLog,
    private readonly clock: Clock,
    private readonly ids: IdSource,
    private readonly log: Logger,
  ) {
    registry.subscribe({
      helloAccepted: (workerId, hello) => this.reconcile(workerId, hello),
      commandFinished: (workerId, command, ack) => this.onCommandFinished(workerId, command, ack),
      sessionEvent: (workerId, event) => this.onSessionEvent(workerId, event),
      signal: (workerId, signal) => this.onSignal(workerId, signal),
      linkChanged: (workerId, link) => this.onLinkChanged(workerId, link),
      sessionActivity: (workerId, activity) => this.onActivity(workerId, activity),
    });
  }

  subscribe(listener: SessionListener): void {
    this.listeners.push(listener);
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
   * Live counts of a project: sessions past Enqueued that have not begun ending, and the line.
   * Polled by many clients, so neither reads SQL: the line is in memory, and the live count is
   * read from the table once per project and then kept by move(), the one place statuses change.
   */
  counts(projectId: string): { liveUser: number; queueUser: number } {
    let live = this.liveByProject.get(projectId);
    if (live === undefined) this.liveByProject.set(projectId, (live = this.repo.countLive(projectId)));
    return { liveUser: live, queueUser: this.queues.length(projectId) };
  }

  /** A new viewer of the project: an Enqueued session at the back of the line. */
  create(project: Project): { session: SessionRecord; viewerToken: string } {
    const now = this.clock.now();
    const sessionId = this.ids.nextSessionId(now);
    const viewerToken = generateSecret('pfv');
    const session: SessionRecord = {
      sessionId,
      projectId: project.projectId,
      region: project.region,
      status: 'Enqueued',
      assignedWorker: undefined,
      // Known from the start (the app is launched with it), so every snapshot carries it.
      streamingId: streamingIdOf(sessionId),
      playerId: `player_${sessionId.slice('session_'.length)}`,
      maxRunTime: project.settings.maxRunTime,
      endReason: undefined,
      createdAt: now,
      updatedAt: now,
    };
    this.repo.insert(session, snapshotOf(session), sha256Hex(viewerToken));
    this.queues.enqueue(project.projectId, sessionId);
    if (project.settings.afkTimeout > 0) this.afkSeconds.set(sessionId, project.settings.afkTimeout);
    this.events.record('session.status', { sessionId, projectId: project.projectId }, { status: 'Enqueued' });
    this.log.info({ sessionId, projectId: project.projectId }, 'session enqueued');
    this.emit((l) => l.queueChanged?.(project.projectId));
    this.emit((l) => l.capacityChanged?.());
    return { session, viewerToken };
  }

  /** True when the token is the one handed to this session's viewer. */
  viewerTokenMatches(sessionId: string, token: string): boolean {
    const digest = this.repo.viewerTokenHash(sessionId);
    return digest !== undefined && secretMatchesDigest(token, digest);
  }

  /** Places the head of a line on a worker: Starting, and StartSession goes to the agent. */
  place(sessionId: string, workerId: string, project: Project): SessionRecord {
    const s = this.get(sessionId);
    this.queues.remove(s.projectId, sessionId);
    const streamingId = s.streamingId ?? streamingIdOf(sessionId);
    const placed = this.move({ ...s, assignedWorker: workerId, streamingId }, 'Starting', undefined);
    const settings = project.settings;
    this.registry.sendCommand(workerId, {
      kind: 'startSession',
      sessionId,
      projectId: s.projectId,
      uploadId: project.liveUploadId ?? '',
      streamingId,
      playerId: placed.playerId ?? '',
      codec: settings.codec,
      minBitrateBps: settings.minBitrate,
      maxBitrateBps: settings.maxBitrate,
      resX: settings.resX,
      resY: settings.resY,
      fps: settings.fps,
      launchArgs: [...settings.launchArgs],
      maxRunTimeMinutes: settings.maxRunTime,
      startupTimeoutSeconds: settings.startupTimeoutSeconds,
    });
    this.log.info({ sessionId, workerId }, 'session placed');
    this.emit((l) => l.queueChanged?.(s.projectId));
    this.emit((l) => l.placed?.(placed));
    return placed;
  }

  /** Relays a viewer's signalling message to the session's agent; false when it cannot. */
  signalToAgent(sessionId: string, json: string): boolean {
    const s = this.repo.findById(sessionId);
    if (!s?.assignedWorker || s.status === 'Terminated' || s.status === 'Terminating') return false;
    return this.registry.signalToAgent(s.assignedWorker, { sessionId, playerId: s.playerId ?? '', json });
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
    this.clearTimers(sessionId);
    let ended: SessionRecord;
    if (s.status === 'Enqueued' || s.assignedWorker === undefined) {
      this.queues.remove(s.projectId, sessionId);
      ended = this.move(s, 'Terminated', endReason);
      this.emit((l) => l.queueChanged?.(s.projectId));
    } else {
      ended = this.move(s, 'Terminating', endReason);
      this.registry.sendCommand(s.assignedWorker, { kind: 'stopSession', sessionId, reason: endReason, graceMs: STOP_GRACE_MS });
    }
    this.log.info({ sessionId, cause }, 'session ending');
    this.emit((l) => l.ended?.(ended, close));
    this.emit((l) => l.capacityChanged?.());
    return ended;
  }

  /** Ends every session of the project that has not begun ending, however old (project disabled). */
  endProjectSessions(projectId: string, cause: SessionEndCause): SessionRecord[] {
    return this.repo.listNotEndingOfProject(projectId).map((s) => this.end(s.sessionId, cause));
  }

  /** At start: sessions of a previous run whose viewers are gone cannot continue. */
  endOrphansAtStart(): void {
    for (const s of this.repo.listNotTerminated()) {
      if (s.status === 'Enqueued') this.move(s, 'Terminated', SESSION_END.controlPlaneRestarted.endReason);
      // Placed sessions lost their viewer's socket with the restart: stop their apps.
      else if (s.status !== 'Terminating') this.end(s.sessionId, 'controlPlaneRestarted');
    }
  }

  /** Stops timers; sessions stay as recorded. Idempotent. */
  close(): void {
    for (const t of [...this.runTimers.values(), ...this.lostTimers.values(), ...this.afkTimers.values()]) t.cancel();
    this.runTimers.clear();
    this.afkTimers.clear();
    this.lostTimers.clear();
  }

  private onSessionEvent(workerId: string, event: AgentSessionEvent): void {
    const s = this.repo.findById(event.sessionId);
    if (!s || s.assignedWorker !== workerId) {
      this.log.warn({ sessionId: event.sessionId, workerId, kind: event.kind }, 'session event for a session this worker does not hold; ignored');
      return;
    }
    switch (event.kind) {
      case 'appStarted':
      case 'viewerDisconnected':
        break;
      case 'appIdentified':
        if (s.status === 'Starting' || s.status === 'Running') this.emit((l) => l.streamerReady?.(s, event.streamingId || s.streamingId || ''));
        break;
      case 'viewerConnected':
        if (s.status === 'Starting') {
          const running = this.move(s, 'Running', undefined);
          this.startRunTimer(running);
          this.startAfkTimer(running);
          this.emit((l) => l.running?.(running));
        }
        break;
      case 'launchFailed':
        this.finishOnWorker(s, 'launchFailed');
        break;
      case 'appDisconnectedViewer':
        // The app is still running: stop it as for any other end, and tell the viewer in the app's words.
        this.log.info({ sessionId: s.sessionId, reason: event.message }, 'the app disconnected the viewer');
        this.end(s.sessionId, 'appDisconnectedViewer', event.message);
        break;
      case 'appExited':
        this.finishOnWorker(s, 'appExited');
        break;
      case 'appStopped':
        if (s.status !== 'Terminated') this.finishOnWorker(s, s.status === 'Terminating' ? undefined : 'appExited');
        break;
      default: {
        const unreachable: never = event.kind;
        this.log.warn({ kind: String(unreachable) }, 'unknown session event');
      }
    }
  }

  /** The app is gone on the worker: the session ends now (with a cause if it was not asked to). */
  private finishOnWorker(s: SessionRecord, cause: SessionEndCause | undefined): void {
    if (s.status === 'Terminated') return;
    this.clearTimers(s.sessionId);
    const wasEnding = s.status === 'Terminating';
    const ended = this.move(s, 'Terminated', cause === undefined ? undefined : SESSION_END[cause].endReason);
    if (!wasEnding && cause !== undefined) this.emit((l) => l.ended?.(ended, SESSION_END[cause].close));
    this.emit((l) => l.capacityChanged?.());
  }

  private onSignal(workerId: string, signal: SignalEnvelope): void {
    const s = this.repo.findById(signal.sessionId);
    if (!s || s.assignedWorker !== workerId || s.status === 'Terminated') return;
    this.emit((l) => l.signal?.(s, signal.json));
  }

  private onLinkChanged(workerId: string, link: string): void {
    if (link === 'connected') {
      this.lostTimers.get(workerId)?.cancel();
      this.lostTimers.delete(workerId);
      this.emit((l) => l.capacityChanged?.());
      return;
    }
    if (link !== 'unreachable' || this.lostTimers.has(workerId)) return;
    this.lostTimers.set(
      workerId,
      this.clock.setTimeout(() => {
        this.lostTimers.delete(workerId);
        for (const s of this.repo.listHoldingWorker(workerId)) {
          this.log.warn({ sessionId: s.sessionId, workerId }, 'worker unreachable past the grace; session lost');
          this.finishOnWorker(s, s.status === 'Terminating' ? undefined : 'workerLost');
        }
      }, WORKER_LOST_GRACE_MS),
    );
  }

  /**
   * After a Hello: sessions we place on this worker that the agent does not run are over
   * (it restarted or lost them); sessions it runs that we consider ended are stopped.
   */
  private reconcile(workerId: string, hello: AgentHello): void {
    const reported = new Set(hello.runningSessions.map((r) => r.sessionId));
    for (const s of this.repo.listHoldingWorker(workerId)) {
      // Starting sessions may not have reached the agent yet; their StartSession is resent.
      if (!reported.has(s.sessionId) && s.status !== 'Starting') {
        this.log.warn({ sessionId: s.sessionId, workerId }, 'worker no longer runs session; ending it');
        this.finishOnWorker(s, s.status === 'Terminating' ? undefined : 'workerLost');
      }
    }
    // An app the worker runs for a session that has ended, that we do not know (a database restored
    // from an older backup) or that is not this worker's is an orphan holding a GPU: stop it there.
    // Malformed ids are ignored. The registry caps the list's length, and one pending stop per
    // session is enough (unfinished commands are resent on every Hello), so a Hello cannot make us
    // queue commands at will.
    const pendingStops = this.registry.pendingStops(workerId);
    let malformed = 0;
    for (const r of hello.runningSessions) {
      if (!isSessionId(r.sessionId)) {
        malformed += 1;
        continue;
      }
      const s = this.repo.findById(r.sessionId);
      const orphan = !s || s.status === 'Terminated' || s.assignedWorker !== workerId;
      if (!orphan || pendingStops.has(r.sessionId)) continue;
      this.log.warn({ sessionId: r.sessionId, workerId, known: s !== undefined }, 'worker runs a session that has ended or is not its own; stopping it');
      this.registry.sendCommand(workerId, { kind: 'stopSession', sessionId: r.sessionId, reason: 'session already ended', graceMs: STOP_GRACE_MS });
      pendingStops.add(r.sessionId);
    }
    if (malformed > 0) this.log.warn({ workerId, malformed }, 'Hello lists malformed session ids; ignored');
  }

  private onCommandFinished(_workerId: string, command: AgentCommand, ack: AgentAck): void {
    if (command.kind === 'stopSession') {
      const s = this.repo.findById(command.sessionId);
      // A failed stop still ends the session for the viewer; the agent reports the app's fate.
      if (s && s.status !== 'Terminated') this.finishOnWorker(s, undefined);
    } else if (command.kind === 'startSession' && ack.phase === 'FAILED') {
      const s = this.repo.findById(command.sessionId);
      if (s && (s.status === 'Starting' || s.status === 'Running')) {
        this.log.warn({ sessionId: s.sessionId, errorCode: ack.errorCode, errorMessage: ack.errorMessage }, 'session failed to start');
        this.finishOnWorker(s, 'launchFailed');
      }
    }
  }

  private startRunTimer(s: SessionRecord): void {
    if (!s.maxRunTime || s.maxRunTime <= 0) return;
    this.runTimers.set(
      s.sessionId,
      this.clock.setTimeout(() => {
        this.runTimers.delete(s.sessionId);
        this.end(s.sessionId, 'maxRunTime');
      }, s.maxRunTime * 60_000),
    );
  }

  /** Ends the session once its viewer has sent no input for the project's afkTimeout. */
  private startAfkTimer(s: SessionRecord): void {
    const seconds = this.afkSeconds.get(s.sessionId);
    if (seconds === undefined) return;
    this.lastInput.set(s.sessionId, { atMs: this.clock.now(), reported: undefined });
    const check = (): void => {
      const idleMs = this.clock.now() - (this.lastInput.get(s.sessionId)?.atMs ?? 0);
      if (idleMs >= seconds * 1000) {
        this.afkTimers.delete(s.sessionId);
        this.end(s.sessionId, 'afkTimeout');
      } else {
        this.afkTimers.set(s.sessionId, this.clock.setTimeout(check, seconds * 1000 - idleMs));
      }
    };
    this.afkTimers.set(s.sessionId, this.clock.setTimeout(check, seconds * 1000));
  }

  /** A changed last-input value from the worker means input arrived since its last heartbeat. */
  private onActivity(workerId: string, activity: readonly { sessionId: string; lastInputAtMs: number | undefined }[]): void {
    for (const a of activity) {
      const seen = this.lastInput.get(a.sessionId);
      if (!seen || a.lastInputAtMs === undefined || a.lastInputAtMs === seen.reported) continue;
      if (this.repo.findById(a.sessionId)?.assignedWorker !== workerId) continue;
      this.lastInput.set(a.sessionId, { atMs: this.clock.now(), reported: a.lastInputAtMs });
    }
  }

  private clearTimers(sessionId: string): void {
    this.runTimers.get(sessionId)?.cancel();
    this.runTimers.delete(sessionId);
    this.afkTimers.get(sessionId)?.cancel();
    this.afkTimers.delete(sessionId);
    this.lastInput.delete(sessionId);
    this.afkSeconds.delete(sessionId);
  }

  private move(s: SessionRecord, to: SessionStatus, reason: string | undefined): SessionRecord {
    if (!canMoveSession(s.status, to)) throw new Error(`session ${s.sessionId}: ${s.status} → ${to} is not allowed`);
    const next: SessionRecord = { ...s, status: to, endReason: s.endReason ?? reason, updatedAt: this.clock.now() };
    this.repo.update(next, SNAPSHOT_STATUSES.has(to) ? snapshotOf(next) : undefined);
    const live = this.liveByProject.get(s.projectId);
    if (live !== undefined) this.liveByProject.set(s.projectId, live + Number(isLive(to)) - Number(isLive(s.status)));
    this.events.record('session.status', { sessionId: s.sessionId, projectId: s.projectId, workerId: s.assignedWorker }, { status: to, reason });
    return next;
  }

  private emit(fn: (l: SessionListener) => void): void {
    for (const l of this.listeners) {
      try {
        fn(l);
      } catch (err) {
        this.log.error({ err }, 'session listener failed');
      }
    }
  }
}

/** The spec's snapshot `data` for a session in its current state. */
/** The Pixel Streaming streamer id a session's app is launched with. */
function streamingIdOf(sessionId: string): string {
  return `streamer_${sessionId.slice('session_'.length)}`;
}

export function snapshotOf(s: SessionRecord): SnapshotData {
  const data: SnapshotData = {
    sessionId: s.sessionId,
    projectId: s.projectId,
    status: s.status,
    region: isRegionCode(s.region) ? regionDisplayName(s.region) : s.region,
  };
  if (s.assignedWorker !== undefined) data.assignedWorker = s.assignedWorker;
  if (s.streamingId !== undefined) data.streamingId = s.streamingId;
  if (s.playerId !== undefined) data.playerId = s.playerId;
  if (s.maxRunTime !== undefined) data.maxRunTime = s.maxRunTime;
  return data;
}
