// What the analytics API reads of sessions: one session's status snapshots oldest first, and a
// project's sessions in a time window, newest first, a page at a time, with each one's status times.
import type { Db } from '../db/database';
import { SELECTED, toSession, type SessionRecord, type SessionRow, type SnapshotData } from './sessions';
import type { SessionStatus } from '../sessions/session-status';

export interface SnapshotRecord {
  /** The snapshot row's id (autoincrement: later rows have larger ids). */
  id: number;
  receivedAt: number;
  data: SnapshotData;
}

export interface SessionListQuery {
  projectId: string;
  /** Sessions created at or after (ms since the epoch). */
  fromMs: number;
  /** Sessions created at or before (ms since the epoch). */
  toMs: number;
  status?: SessionStatus;
  limit: number;
  skip: number;
}

export interface SessionListEntry {
  session: SessionRecord;
  /** When each status was first recorded as a snapshot (ms since the epoch). */
  statusTimes: Partial<Record<SessionStatus, number>>;
}

export interface SessionListPage {
  total: number;
  sessions: SessionListEntry[];
}

export interface SessionHistoryRepository {
  /** The session's snapshots, oldest first. */
  snapshots(sessionId: string): SnapshotRecord[];
  list(q: SessionListQuery): SessionListPage;
}

export class SqliteSessionHistoryRepository implements SessionHistoryRepository {
  private readonly stmts;

  constructor(db: Db) {
    // Through sessions_project_created (project_id, created_at DESC): the window is one range of it.
    const where = 'project_id = @projectId AND created_at >= @from AND created_at <= @to AND (@status IS NULL OR status = @status)';
    this.stmts = {
      snapshots: db.prepare('SELECT id, received_at, data FROM session_snapshots WHERE session_id = ? ORDER BY id'),
      statusTimes: db.prepare(
        `SELECT json_extract(data, '$.status') AS status, MIN(received_at) AS at FROM session_snapshots WHERE session_id = ? GROUP BY 1`,
      ),
      count: db.prepare(`SELECT COUNT(*) AS n FROM sessions WHERE ${where}`),
      page: db.prepare(`SELECT ${SELECTED} FROM sessions WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @skip`),
    };
  }

  snapshots(sessionId: string): SnapshotRecord[] {
    return (this.stmts.snapshots.all(sessionId) as { id: number; received_at: number; data: string }[]).map((r) => ({
      id: r.id,
      receivedAt: r.received_at,
      data: JSON.parse(r.data) as SnapshotData,
    }));
  }

  list(q: SessionListQuery): SessionListPage {
    const params = { projectId: q.projectId, from: q.fromMs, to: q.toMs, status: q.status ?? null };
    const total = (this.stmts.count.get(params) as { n: number }).n;
    const rows = q.skip >= total || q.limit === 0 ? [] : (this.stmts.page.all({ ...params, limit: q.limit, skip: q.skip }) as SessionRow[]);
    return {
      total,
      sessions: rows.map((r) => ({
        session: toSession(r),
        statusTimes: Object.fromEntries((this.stmts.statusTimes.all(r.id) as { status: SessionStatus; at: number }[]).map((t) => [t.status, t.at])),
      })),
    };
  }
}
