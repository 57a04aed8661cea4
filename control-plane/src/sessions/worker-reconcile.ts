// After a worker's Hello, what we believe it runs and what it says it runs are made to agree:
// sessions we placed there that it no longer runs are over; apps it runs for sessions that are
// over, unknown or not its own are orphans holding a GPU, and are stopped. A Starting session it
// did not list is kept for its resent StartSession, which settles it (WorkerEvents).
import type { Logger } from 'pino';
import { isSessionId } from '../lib/ids';
import type { SessionRecord, SessionsRepository } from '../repositories/sessions';
import type { AgentHello } from '@pixelfleet/proto';
import type { WorkerRegistry } from '../workers/registry';
import { STOP_GRACE_MS } from './session-timers';

export interface WorkerReconcileDeps {
  repo: SessionsRepository;
  registry: WorkerRegistry;
  log: Logger;
  /** The lifecycle's end for a session whose app is gone on the worker (workerLost unless it was already ending). */
  sessionGoneFromWorker(s: SessionRecord): void;
}

/**
 * Reconciles the worker's sessions with its Hello. Returns the Starting sessions it did not list
 * that are kept for their resent StartSession: the agent launches them now, or, when a run of it
 * that has since crashed finished the start, answers from its journal for an app that is gone.
 */
export function reconcileWorker(deps: WorkerReconcileDeps, workerId: string, hello: AgentHello): Set<string> {
  const { repo, registry, log } = deps;
  const reported = new Set(hello.runningSessions.map((r) => r.sessionId));
  const pending = registry.pendingSessionCommands(workerId);
  const keptForResentStart = new Set<string>();
  for (const s of repo.listHoldingWorker(workerId)) {
    if (reported.has(s.sessionId)) continue;
    // A Starting session may not have reached the agent yet: its StartSession is resent after this
    // Hello. One whose StartSession is no longer pending (its stored row no longer decodes and was
    // failed) would hold the slot for good: it is over too.
    if (s.status === 'Starting' && pending.starts.has(s.sessionId)) {
      keptForResentStart.add(s.sessionId);
      continue;
    }
    log.warn({ sessionId: s.sessionId, workerId, status: s.status }, 'worker no longer runs session; ending it');
    deps.sessionGoneFromWorker(s);
  }
  // An app the worker runs for a session that has ended, that we do not know (a database restored
  // from an older backup) or that is not this worker's is an orphan holding a GPU: stop it there.
  // Malformed ids are ignored. The registry caps the list's length, and one pending stop per
  // session is enough (unfinished commands are resent on every Hello), so a Hello cannot make us
  // queue commands at will.
  const pendingStops = pending.stops;
  let malformed = 0;
  for (const r of hello.runningSessions) {
    if (!isSessionId(r.sessionId)) {
      malformed += 1;
      continue;
    }
    const s = repo.findById(r.sessionId);
    const orphan = !s || s.status === 'Terminated' || s.assignedWorker !== workerId;
    if (!orphan || pendingStops.has(r.sessionId)) continue;
    log.warn({ sessionId: r.sessionId, workerId, known: s !== undefined }, 'worker runs a session that has ended or is not its own; stopping it');
    registry.sendCommand(workerId, { kind: 'stopSession', sessionId: r.sessionId, reason: 'session already ended', graceMs: STOP_GRACE_MS });
    pendingStops.add(r.sessionId);
  }
  if (malformed > 0) log.warn({ workerId, malformed }, 'Hello lists malformed session ids; ignored');
  return keptForResentStart;
}
