// What workers, and the control plane's own restart, tell the session lifecycle: an agent's
// session events, acks, relay signals and input activity, a worker's link coming and going or
// lost past its grace, its Hello reconciled; and, at start, the sessions and deadlines the previous
// run left. Each report is believed only from the worker that holds the session. Status changes
// still go through the lifecycle (session-service.ts): this room decides what a report means and
// asks the lifecycle to end, finish or run the session.
import type { Logger } from 'pino';
import { decodeRelayToViewer } from '@pixelfleet/signaling';
import type { Listeners } from '@pixelfleet/common';
import type { AgentAck, AgentCommand, AgentSessionEvent, SessionActivity, SignalEnvelope } from '@pixelfleet/proto';
import type { SessionRecord, SessionsRepository } from '../repositories/sessions';
import type { ProjectsRepository } from '../repositories/projects';
import type { WorkerRegistry } from '../workers/registry';
import type { Clock, SampledLog } from '@pixelfleet/common';
import type { SessionEndCause } from './session-end';
import type { SessionEvents } from './session-events';
import type { SessionDiagnosisRepository } from '../repositories/session-diagnosis-store';
import type { SessionQueues } from './session-queue';
import { STOP_CONFIRM_MARGIN_MS, STOP_GRACE_MS, type SessionTimers } from './session-timers';
import { reconcileWorker } from './worker-reconcile';
import type { SignalRoutes } from './signal-routes';
import type { Scheduler } from './scheduler';
import type { WarmPools } from './warm-pool';

/** What this room may ask of the lifecycle, which alone changes a session's status. */
export interface SessionLifecycle {
  end(sessionId: string, cause: SessionEndCause, detail?: string): SessionRecord;
  /** The app is gone on the worker: Terminated now, with a cause if it was not asked to end. */
  finishOnWorker(s: SessionRecord, cause: SessionEndCause | undefined): void;
  /** The viewer's peer is up: Starting → Running. */
  markRunning(s: SessionRecord): SessionRecord;
}

export interface WorkerEventsDeps {
  lifecycle: SessionLifecycle;
  listeners: Pick<Listeners<SessionEvents>, 'emit'>;
  repo: SessionsRepository;
  projects: ProjectsRepository;
  registry: WorkerRegistry;
  queues: SessionQueues;
  timers: SessionTimers;
  warm: WarmPools;
  routes: SignalRoutes;
  scheduler: Scheduler;
  clock: Clock;
  log: Logger;
  /** Warn lines an agent can cause at will (reports about sessions it does not hold), sampled per worker. */
  agentWarnings: SampledLog;
  diagnoses: Pick<SessionDiagnosisRepository, 'videoShown'>;
  connectTimeoutMs: number;
  resumeGraceMs: number;
}

export class WorkerEvents {
  /**
   * Per worker, since its latest Hello: the Starting sessions it did not list, kept for their resent
   * StartSession (reconcileWorker), until the agent reports anything of them. A launch reports
   * appStarted before its start finishes; a start that finishes without a word since was answered
   * from the journal of an earlier run of the agent, and that run's crash took the app.
   */
  private readonly unlistedStarts = new Map<string, Set<string>>();

  constructor(private readonly d: WorkerEventsDeps) {
    const { registry } = d;
    registry.on('helloAccepted', (workerId, hello) => {
      this.unlistedStarts.set(workerId, reconcileWorker({ repo: d.repo, registry, log: d.log, sessionGoneFromWorker: (s) => this.sessionGoneFromWorker(s) }, workerId, hello));
      this.sendPendingSignals(workerId);
      // A worker (back) with free slots.
      d.scheduler.requestRun();
    });
    registry.on('linkChanged', (workerId, link) => this.onLinkChanged(workerId, link));
    registry.on('drainChanged', () => d.scheduler.requestRun());
    registry.on('commandFinished', (workerId, command, ack) => this.onCommandFinished(workerId, command, ack));
    registry.on('sessionEvent', (workerId, event) => this.onSessionEvent(workerId, event));
    registry.on('signal', (workerId, signal) => this.onSignal(workerId, signal));
    registry.on('sessionActivity', (workerId, activity) => this.onActivity(workerId, activity));
  }

  /**
   * At start: the sessions a previous run left are taken up where they stood, so a restart is
   * invisible to a viewer who is watching. The line is rebuilt in join order; each placed session
   * gets its route and its deadlines back from what is stored (run time and connect timeout from
   * its placement, idle time from now); Terminating ones finish as their workers confirm (or at
   * their stop deadline, armStoredDeadlines). A worker that comes back with a session in its Hello
   * keeps it; one that does not is lost after its grace. Returns the sessions whose viewers may
   * come back (the gateway holds them for a resume). Unclaimed warm instances have no viewer: they
   * go back into their pool's index with what is left of their maximum age, so the scheduler's first
   * run counts them and launches none twice.
   */
  restoreAtStart(): SessionRecord[] {
    const { d } = this;
    const now = d.clock.now();
    const restored: SessionRecord[] = [];
    for (const s of d.repo.listNotTerminated()) {
      // An unclaimed instance stopping still holds its slot: the pools count it as ending.
      if (s.pooled === true) d.warm.tracked(s);
      if (s.status === 'Terminating') continue;
      const project = d.projects.findById(s.projectId);
      if (project === undefined) continue; // a deleted project's sessions went with it (ON DELETE CASCADE)
      d.routes.track(s);
      if (s.pooled === true) {
        d.timers.warmInstancePlaced(s.sessionId, project.settings.warmInstanceMaxAgeMinutes * 60_000, now - (s.placedAt ?? s.updatedAt));
        continue;
      }
      d.timers.setAfkTimeout(s.sessionId, project.settings.afkTimeout);
      if (s.status === 'Enqueued') d.queues.enqueue(s.projectId, s.sessionId);
      else {
        d.timers.placed(s.sessionId, s.maxRunTime, d.connectTimeoutMs, now - (s.placedAt ?? s.updatedAt));
        if (s.status === 'Running') d.timers.startRunning(s.sessionId);
      }
      restored.push(s);
    }
    if (restored.length > 0) d.log.info({ sessions: restored.length }, 'sessions taken up after a restart');
    const warm = d.warm.countByState();
    if (warm.starting + warm.ready > 0) d.log.info(warm, 'warm instances taken up after a restart');
    d.scheduler.requestRun();
    return restored;
  }

  /**
   * At start, deadlines that outlived the previous run are armed again from what is stored: a worker
   * already unreachable gets what is left of its grace (counted from its lease's end), and a
   * Terminating session what is left of its stop deadline (counted from when it began ending).
   */
  armStoredDeadlines(workers: readonly { workerId: string; link: string; leaseExpiresAt: number | undefined }[]): void {
    const { d } = this;
    const now = d.clock.now();
    for (const w of workers) {
      if (w.link !== 'unreachable') continue;
      const remainingMs = (w.leaseExpiresAt ?? now) + d.registry.lostGraceMs - now;
      d.log.info({ workerId: w.workerId, remainingMs }, 'worker unreachable at start; its grace goes on');
      d.timers.workerUnreachable(w.workerId, remainingMs);
    }
    for (const s of d.repo.listNotTerminated()) {
      if (s.status === 'Terminating') d.timers.stopping(s.sessionId, Math.max(0, s.updatedAt + STOP_GRACE_MS + STOP_CONFIRM_MARGIN_MS - now));
    }
  }

  /** The stop deadline passed without the worker's confirmation: the slot is freed. */
  onStopUnconfirmed(sessionId: string): void {
    const s = this.d.repo.findById(sessionId);
    if (s?.status !== 'Terminating') return;
    this.d.log.warn({ sessionId, workerId: s.assignedWorker }, 'the worker did not confirm the stop in time; the slot is freed');
    this.d.lifecycle.finishOnWorker(s, undefined);
  }

  /** The worker stayed unreachable past its grace: its sessions are lost. */
  onWorkerLost(workerId: string): void {
    for (const s of this.d.repo.listHoldingWorker(workerId)) {
      this.d.log.warn({ sessionId: s.sessionId, workerId }, 'worker unreachable past the grace; session lost');
      this.sessionGoneFromWorker(s);
    }
    // Its region's queued viewers waited for it through the grace; with no other worker they hear 4001 now.
    this.d.scheduler.requestRun();
  }

  private onSessionEvent(workerId: string, event: AgentSessionEvent): void {
    const { d } = this;
    const s = d.repo.findById(event.sessionId);
    if (!s || s.assignedWorker !== workerId) {
      d.agentWarnings.for(workerId).warn({ sessionId: event.sessionId, workerId, kind: event.kind }, 'session event for a session this worker does not hold; ignored');
      return;
    }
    this.unlistedStarts.get(workerId)?.delete(s.sessionId);
    switch (event.kind) {
      case 'appStarted':
        break;
      case 'viewerDisconnected':
        // The media legs dropped (a network change, a frozen worker): the viewer may renegotiate within the grace.
        if (s.status === 'Running') {
          d.log.info({ sessionId: s.sessionId, graceMs: d.resumeGraceMs }, 'viewer media disconnected; waiting for it to reconnect');
          d.timers.viewerDisconnected(s.sessionId, d.resumeGraceMs);
        }
        break;
      case 'appIdentified':
        if (s.status === 'Starting' || s.status === 'Running') {
          d.repo.markIdentified(s.sessionId, d.clock.now());
          d.listeners.emit('streamerReady', s, event.streamingId || s.streamingId || '');
        }
        break;
      case 'viewerConnected':
        if (s.status === 'Starting') d.lifecycle.markRunning(s);
        else if (s.status === 'Running') d.timers.viewerReconnected(s.sessionId);
        break;
      case 'launchFailed':
        d.lifecycle.finishOnWorker(s, 'launchFailed');
        break;
      case 'appDisconnectedViewer':
        // The app is still running: stop it as for any other end, and tell the viewer in the app's words.
        d.log.info({ sessionId: s.sessionId, reason: event.message }, 'the app disconnected the viewer');
        d.lifecycle.end(s.sessionId, 'appDisconnectedViewer', event.message);
        break;
      case 'appExited':
        d.lifecycle.finishOnWorker(s, 'appExited');
        break;
      case 'videoShown':
        // Whatever the session's status: it may have ended already (a viewer who left at once), and
        // its diagnosis is about what happened while it ran.
        if (d.diagnoses.videoShown(s.sessionId, d.clock.now())) {
          d.log.info({ sessionId: s.sessionId }, 'the relay saw video reach the viewer');
          d.listeners.emit('videoShown', s, d.clock.now());
        }
        break;
      case 'appStopped':
        if (s.status !== 'Terminated') d.lifecycle.finishOnWorker(s, s.status === 'Terminating' ? undefined : 'appExited');
        break;
      default: {
        const unreachable: never = event.kind;
        d.log.warn({ kind: String(unreachable) }, 'unknown session event');
      }
    }
  }

  /** A session the worker no longer runs (reconcile, or the worker lost past its grace): workerLost unless it was ending anyway. */
  private sessionGoneFromWorker(s: SessionRecord): void {
    this.d.lifecycle.finishOnWorker(s, s.status === 'Terminating' ? undefined : 'workerLost');
  }

  /** The worker is connected again (its Hello reconciled): the viewer signals held for its sessions still negotiating go now. */
  private sendPendingSignals(workerId: string): void {
    const sent = this.d.routes.sendHeldFor(workerId);
    if (sent > 0) this.d.log.info({ workerId, signals: sent }, 'viewer signals held while the worker was away sent');
  }

  /** A relay's signal for its viewer: only from the worker holding the session, and only the types a viewer may receive. */
  private onSignal(workerId: string, envelope: SignalEnvelope): void {
    const { d } = this;
    if (!d.routes.heldBy(envelope.sessionId, workerId)) return;
    const decoded = decodeRelayToViewer(envelope.json);
    if (!decoded.ok) {
      d.agentWarnings.for(workerId).warn({ sessionId: envelope.sessionId, workerId, reason: decoded.reason }, 'agent sent a signal a viewer may not receive; dropped');
      return;
    }
    d.listeners.emit('signal', envelope.sessionId, decoded.signal);
  }

  private onLinkChanged(workerId: string, link: string): void {
    const { d } = this;
    if (link === 'connected') d.timers.workerConnected(workerId);
    else if (link === 'unreachable') d.timers.workerUnreachable(workerId);
    // Queued viewers are told whether their line now waits for a server (the gateway sends only what changed).
    for (const projectId of d.queues.projectsWaiting()) d.listeners.emit('queueChanged', projectId);
    // Connected: its free slots are placeable again; otherwise the region may have lost its last worker.
    d.scheduler.requestRun();
  }

  private onCommandFinished(workerId: string, command: AgentCommand, ack: AgentAck): void {
    const { d } = this;
    if (command.kind === 'stopSession') {
      const s = d.repo.findById(command.sessionId);
      // A failed stop still ends the session for the viewer; the agent reports the app's fate.
      if (s && s.status !== 'Terminated') d.lifecycle.finishOnWorker(s, undefined);
    } else if (command.kind === 'startSession') {
      const unlisted = this.unlistedStarts.get(workerId)?.delete(command.sessionId) === true;
      const s = d.repo.findById(command.sessionId);
      if (ack.phase === 'FAILED') {
        if (s && (s.status === 'Starting' || s.status === 'Running')) {
          d.log.warn({ sessionId: s.sessionId, errorCode: ack.errorCode, errorMessage: ack.errorMessage }, 'session failed to start');
          d.lifecycle.finishOnWorker(s, 'launchFailed');
        }
      } else if (unlisted && s?.status === 'Starting' && s.assignedWorker === workerId) {
        // Left Starting, it would hold its slot with no app (a warm instance until its maximum age, and claimable meanwhile).
        d.log.warn({ sessionId: s.sessionId, workerId, status: s.status, startAnsweredFromJournal: true }, 'worker no longer runs session; ending it');
        this.sessionGoneFromWorker(s);
      }
    }
  }

  /** Viewer input per session from a heartbeat: the AFK timer counts from the latest input. */
  private onActivity(workerId: string, activity: readonly SessionActivity[]): void {
    const { d } = this;
    for (const a of activity) {
      if (a.lastInputAtMs === undefined || !d.timers.isNewInput(a.sessionId, a.lastInputAtMs)) continue;
      if (!d.routes.heldBy(a.sessionId, workerId)) continue;
      d.timers.inputReported(a.sessionId, a.lastInputAtMs);
    }
  }
}
