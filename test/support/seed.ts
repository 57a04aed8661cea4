// Test fixtures written straight into a control plane's database, for state that no public
// API creates yet (sessions arrive through the share page in the streaming issue).
import type { ControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';

let counter = 0;

/** Inserts a session in the given status, assigned to a worker from Starting on (or ended on one). */
export function seedSession(cp: ControlPlaneWithDb, s: { projectId: string; status: 'Enqueued' | 'Starting' | 'Running' | 'Terminated'; workerId?: string }): string {
  counter += 1;
  const sessionId = `session_${Date.now()}_${counter}`;
  const now = Date.now();
  cp.db
    .prepare(
      `INSERT INTO sessions (id, project_id, region, status, assigned_worker, created_at, updated_at)
       VALUES (?, ?, 'europe', ?, ?, ?, ?)`,
    )
    .run(sessionId, s.projectId, s.status, s.workerId ?? null, now, now);
  return sessionId;
}

/**
 * Inserts `count` Terminated sessions of the project in one statement, each newer than every
 * session seeded before: history that costs milliseconds to make.
 */
export function seedEndedSessions(cp: ControlPlaneWithDb, projectId: string, count: number): void {
  counter += 1;
  const batch = counter;
  const after = Date.now() + 1_000;
  cp.db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO sessions (id, project_id, region, status, end_reason, created_at, updated_at)
       SELECT 'session_' || ? || '_' || i, ?, 'europe', 'Terminated', 'viewer left', ? + i, ? + i FROM n`,
    )
    .run(count, `${after}${batch}`, projectId, after, after);
}

/** A user and a project in europe, through the real account service. */
export function seedProject(cp: ControlPlaneWithDb): { userId: string; projectId: string } {
  counter += 1;
  const user = cp.accounts.createUser(`owner${counter}-${Date.now()}@example.com`);
  const project = cp.accounts.createProject(user.userId, `Project ${counter}`, 'europe');
  return { userId: user.userId, projectId: project.projectId };
}

export function sessionStatus(cp: ControlPlaneWithDb, sessionId: string): { status: string; endReason: string | null } {
  return cp.db.prepare('SELECT status, end_reason AS endReason FROM sessions WHERE id = ?').get(sessionId) as { status: string; endReason: string | null };
}

/** The statuses of a session's snapshot rows, oldest first. */
export function statusHistory(cp: ControlPlaneWithDb, sessionId: string): string[] {
  const rows = cp.db.prepare('SELECT data FROM session_snapshots WHERE session_id = ? ORDER BY id').all(sessionId) as { data: string }[];
  return rows.map((r) => (JSON.parse(r.data) as { status: string }).status);
}

/** Every status a session went through, oldest first, from the fleet event log (Terminating included). */
export function statusEvents(cp: ControlPlaneWithDb, sessionId: string): string[] {
  const rows = cp.db.prepare(`SELECT data FROM events WHERE type = 'session.status' AND session_id = ? ORDER BY id`).all(sessionId) as { data: string }[];
  return rows.map((r) => (JSON.parse(r.data) as { status: string }).status);
}

export function commandPhase(cp: ControlPlaneWithDb, commandId: string): string {
  return (cp.db.prepare('SELECT phase FROM worker_commands WHERE command_id = ?').get(commandId) as { phase: string }).phase;
}
