// What the analytics API reads of sessions, in PostgreSQL; the SQLite twin is ../session-history.ts.
// A page of the session list is one statement: the page's sessions with their status times, each
// session's read from its snapshots after the page is cut (SQLite reads them session by session).
// No index is named: PostgreSQL has no INDEXED BY, and its planner has statistics to choose among
// the sessions_project_<filter> indexes, which SQLite's probe-and-choose stands in for.
import type { PostgresPool } from '../../db/postgres-database';
import type { Diagnosis } from '../../analytics/session-diagnosis';
import type { SessionStatus } from '../../sessions/session-status';
import type { SessionHistoryRepository, SessionListPage, SessionListQuery, SnapshotRecord } from '../session-history';
import { SELECTED, toSession, type SessionRow, type SnapshotData } from '../sessions';
import { firstRowOf, rowsOf } from './postgres-sql';

/** The filters of a SessionListQuery, each an equality on its own column (and index). */
const FILTERS = ['status', 'diagnosis', 'country', 'browser'] as const;

type PageRow = SessionRow & {
  diagnosis: Diagnosis;
  /** [status, first received_at] per status the session's snapshots hold, status in byte order; null with no snapshot. */
  status_times: [SessionStatus, number][] | null;
};

/**
 * A session's status times as SQLite's per-session statement gives them: the snapshots grouped by
 * their data's status (a snapshot without one groups under null, as json_extract's NULL does),
 * each with its earliest received_at. `->>` reads what json_extract does for a string status.
 */
const STATUS_TIMES = `(SELECT json_agg(json_build_array(t.status, t.at) ORDER BY t.status COLLATE "C" NULLS FIRST)
   FROM (SELECT data::jsonb ->> 'status' AS status, MIN(received_at) AS at FROM session_snapshots WHERE session_id = page.id GROUP BY 1) t)`;

export class PostgresSessionHistoryRepository implements SessionHistoryRepository {
  constructor(private readonly pool: PostgresPool) {}

  async snapshots(sessionId: string): Promise<SnapshotRecord[]> {
    const rows = await rowsOf<{ id: number; received_at: number; data: string }>(
      this.pool,
      'SELECT id, received_at, data FROM session_snapshots WHERE session_id = $1 ORDER BY id',
      [sessionId],
    );
    return rows.map((r) => ({ id: r.id, receivedAt: r.received_at, data: JSON.parse(r.data) as SnapshotData }));
  }

  async list(q: SessionListQuery): Promise<SessionListPage> {
    const used = FILTERS.filter((f) => q[f] !== undefined);
    const params: unknown[] = [q.projectId, q.fromMs, q.toMs];
    // Each filter an equality (never `$n IS NULL OR x = $n`, which no index serves); pooled = 0: a
    // project's sessions, never its unclaimed warm instances (and the partial indexes' own term).
    const terms = ['project_id = $1', 'pooled = 0', 'created_at >= $2', 'created_at <= $3'];
    for (const f of used) {
      params.push(q[f]);
      terms.push(`${f} = $${params.length}`);
    }
    const from = `sessions WHERE ${terms.join(' AND ')}`;
    const n = params.length;
    const counted =
      q.countCap === undefined
        ? (await firstRowOf<{ n: number }>(this.pool, `SELECT COUNT(*) AS n FROM ${from}`, params))!.n
        : (await firstRowOf<{ n: number }>(this.pool, `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${from} LIMIT $${n + 1}) capped`, [...params, q.countCap]))!.n;
    const totalExact = q.countCap === undefined || counted < q.countCap;
    const rows =
      q.limit === 0 || (totalExact && q.skip >= counted)
        ? []
        : await rowsOf<PageRow>(
            this.pool,
            // The page first, then the status times of its sessions only.
            `SELECT page.*, ${STATUS_TIMES} AS status_times
             FROM (SELECT ${SELECTED}, diagnosis FROM ${from} ORDER BY created_at DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}) page
             ORDER BY page.created_at DESC, page.id DESC`,
            [...params, q.limit, q.skip],
          );
    return {
      total: counted,
      totalExact,
      sessions: rows.map(({ diagnosis, status_times, ...session }) => ({
        session: toSession(session),
        statusTimes: Object.fromEntries(status_times ?? []),
        diagnosis,
      })),
    };
  }

  async diagnosisOf(sessionId: string): Promise<Diagnosis> {
    return (await firstRowOf<{ diagnosis: Diagnosis }>(this.pool, 'SELECT diagnosis FROM sessions WHERE id = $1', [sessionId]))?.diagnosis ?? 'neverReported';
  }
}
