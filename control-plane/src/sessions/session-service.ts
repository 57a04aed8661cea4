// Session lifecycle that the fleet drives: ending sessions (operator or API), reconciling a
// worker's reported sessions on every Hello, and finishing stops when the agent acks them.
// Every status change goes through SESSION_TRANSITIONS and writes a snapshot row.
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock';
import { notFound } from '../errors';
import { isRegionCode, regionDisplayName } from '../regions';
import type { EventLog } from '../events/event-log';
import type { SessionRecord, SessionsRepository, SnapshotData } from '../repositories/sessions';
import type { WorkerRegistry } from '../workers/registry';
import type { AgentAck, AgentCommand, AgentHello } from '../workers/agent-messages';
import { canMoveSession, type SessionStatus } from './session-status';

/** How long an agent gets to stop an app gracefully before it kills the process tree. */
export const STOP_GRACE_MS = 10_000;

export class SessionService {
  constructor(
    private readonly repo: SessionsRepository,
    private readonly registry: WorkerRegistry,
    private readonly events: EventLog,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    registry.subscribe({
      helloAccepted: (workerId, hello) => this.reconcile(workerId, hello),
      commandFinished: (workerId, command, ack) => this.onCommandFinished(workerId, command, ack),
    });
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
   * Ends a session. Idempotent: an ending or ended session is returned as it is. A session
   * without an app yet ends at once; one with an app moves to Terminating until the agent
   * confirms the stop.
   */
  end(sessionId: string, reason: string): SessionRecord {
    const s = this.get(sessionId);
    if (s.status === 'Terminated' || s.status === 'Terminating') return s;
    if (s.status === 'Enqueued' || s.assignedWorker === undefined) return this.move(s, 'Terminated', reason);
    const ending = this.move(s, 'Terminating', reason);
    this.registry.sendCommand(s.assignedWorker, { kind: 'stopSession', sessionId, reason, graceMs: STOP_GRACE_MS });
    return ending;
  }

  /**
   * After a Hello: sessions we place on this worker that the agent does not run are over
   * (it restarted or lost them); sessions it runs that we consider ended are stopped.
   */
  private reconcile(workerId: string, hello: AgentHello): void {
    const reported = new Set(hello.runningSessions.map((r) => r.sessionId));
    for (const s of this.repo.listHoldingWorker(workerId)) {
      if (!reported.has(s.sessionId)) {
        this.log.warn({ sessionId: s.sessionId, workerId }, 'worker no longer runs session; ending it');
        this.move(s, 'Terminated', 'worker lost the session');
      }
    }
    for (const r of hello.runningSessions) {
      const s = this.repo.findById(r.sessionId);
      if (!s || s.status === 'Terminated' || s.assignedWorker !== workerId) {
        this.log.warn({ sessionId: r.sessionId, workerId }, 'worker runs a session that has ended; stopping it');
        this.registry.sendCommand(workerId, { kind: 'stopSession', sessionId: r.sessionId, reason: 'session already ended', graceMs: STOP_GRACE_MS });
      }
    }
  }

  private onCommandFinished(_workerId: string, command: AgentCommand, ack: AgentAck): void {
    if (command.kind !== 'stopSession') return;
    const s = this.repo.findById(command.sessionId);
    if (!s || s.status === 'Terminated') return;
    // A failed stop still ends the session for the viewer; the agent reports the app's fate.
    this.move(s, 'Terminated', ack.phase === 'SUCCEEDED' ? s.endReason ?? command.reason : `stop failed: ${ack.errorMessage}`);
  }

  private move(s: SessionRecord, to: SessionStatus, reason: string | undefined): SessionRecord {
    if (!canMoveSession(s.status, to)) throw new Error(`session ${s.sessionId}: ${s.status} → ${to} is not allowed`);
    const next: SessionRecord = { ...s, status: to, endReason: s.endReason ?? reason, updatedAt: this.clock.now() };
    this.repo.update(next, snapshotOf(next));
    this.events.record('session.status', { sessionId: s.sessionId, projectId: s.projectId, workerId: s.assignedWorker }, { status: to, reason });
    return next;
  }
}

/** The spec's snapshot `data` for a session in its current state. */
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
