// What the analytics API reads of sessions: one session's status snapshots oldest first, and a
// project's sessions in a time window, newest first, a page at a time, with each one's status times
// and stored diagnosis; filtered by status, diagnosis, country or browser, each through an index of
// its own (migration 20), and counted exactly or, for the dashboard, up to a cap.
import type { Statement } from 'better-sqlite3';
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';
import type { Diagnosis } from '../analytics/session-diagnosis';
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
  diagnosis?: Diagnosis;
  /** The viewer's country name, as the breakdowns name it (`Germany`). */
  country?: string;
  /** The viewer's browser, as the breakdowns name it (`Chrome`). */
  browser?: string;
  limit: number;
  skip: number;
  /**
   * Count matching sessions only up to this many (the dashboard: a bounded read however many
   * millions match); omitted: the exact total (the REST API's `total`).
   */
  countCap?: number;
}

/** The filters of a SessionListQuery, in the order their statements are keyed; each has an index sessions_project_<filter> (migration 20). */
const FILTERS = ['status', 'diagnosis', 'country', 'browser'] as const;
type SessionFilter = (typeof FILTERS)[number];
/** How far a filter's matches are counted when choosing among several filters' indexes. */
const INDEX_PROBE_CAP = 10_000;

export interface SessionListEntry {
  session: SessionRecord;
  /** When each status was first recorded as a snapshot (ms since the epoch). */
  statusTimes: Partial<Record<SessionStatus, number>>;
  /** As stored with the session's telemetry (migration 20). */
  diagnosis: Diagnosis;
}

export interface SessionListPage {
  /** Sessions matching; with countCap, at most the cap (then totalExact is false). */
  total: number;
  /** False when countCap stopped the count: at least `total` match. */
  totalExact: boolean;
  sessions: SessionListEntry[];
}

export interface SessionHistoryRepository {
  /** The session's snapshots, oldest first. */
  snapshots(sessionId: string): Promise<SnapshotRecord[]>;
  list(q: SessionListQuery): Promise<SessionListPage>;
  /** The session's stored diagnosis (neverReported for an unknown session). */
  diagnosisOf(sessionId: string): Promise<Diagnosis>;
}

type ListRow = SessionRow & { diagnosis: Diagnosis };

export class SqliteSessionHistoryRepository implements Sync<SessionHistoryRepository> {
  private readonly stmts;
  /** The count and page statements of each combination of filters, prepared on first use. */
  private readonly lists = new Map<string, { count: Statement; capped: Statement; page: Statement }>();

  constructor(private readonly db: Db) {
    this.stmts = {
      snapshots: db.prepare('SELECT id, received_at, data FROM session_snapshots WHERE session_id = ? ORDER BY id'),
      statusTimes: db.prepare(
        `SELECT json_extract(data, '$.status') AS status, MIN(received_at) AS at FROM session_snapshots WHERE session_id = ? GROUP BY 1`,
      ),
      diagnosis: db.prepare('SELECT diagnosis FROM sessions WHERE id = ?'),
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
    const used = FILTERS.filter((f) => q[f] !== undefined);
    const params: Record<string, unknown> = { projectId: q.projectId, from: q.fromMs, to: q.toMs };
    for (const f of used) params[f] = q[f];
    const stmts = this.listStatements(used, this.indexFor(used, params));
    const counted = q.countCap === undefined ? (stmts.count.get(params) as { n: number }).n : (stmts.capped.get({ ...params, cap: q.countCap }) as { n: number }).n;
    const totalExact = q.countCap === undefined || counted < q.countCap;
    const rows = q.limit === 0 || (totalExact && q.skip >= counted) ? [] : (stmts.page.all({ ...params, limit: q.limit, skip: q.skip }) as ListRow[]);
    return {
      total: counted,
      totalExact,
      sessions: rows.map((r) => ({
        session: toSession(r),
        statusTimes: Object.fromEntries((this.stmts.statusTimes.all(r.id) as { status: SessionStatus; at: number }[]).map((t) => [t.status, t.at])),
        diagnosis: r.diagnosis,
      })),
    };
  }

  diagnosisOf(sessionId: string): Diagnosis {
    return (this.stmts.diagnosis.get(sessionId) as { diagnosis: Diagnosis } | undefined)?.diagnosis ?? 'neverReported';
  }

  /**
   * The index a list walks: the window's own with no filter, the filter's with one; with several,
   * the one whose filter alone matches the fewest sessions of the window (each counted from its
   * index alone, up to INDEX_PROBE_CAP), so that a rare value is never looked for along a common one.
   * Named, not left to the planner: without statistics it walks the window and tests each row.
   */
  private indexFor(used: readonly SessionFilter[], params: Record<string, unknown>): string {
    const [only] = used;
    if (only === undefined) return 'sessions_project_created';
    if (used.length === 1) return `sessions_project_${only}`;
    let best = only;
    let fewest = Infinity;
    for (const f of used) {
      const n = (this.listStatements([f], `sessions_project_${f}`).capped.get({ projectId: params.projectId, from: params.from, to: params.to, [f]: params[f], cap: INDEX_PROBE_CAP }) as { n: number }).n;
      if (n < fewest) [best, fewest] = [f, n];
    }
    return `sessions_project_${best}`;
  }

  /** The count and page statements of a combination of filters through one index, prepared on first use. */
  private listStatements(used: readonly SessionFilter[], index: string) {
    const key = `${used.join(',')}|${index}`;
    let stmts = this.lists.get(key);
    if (stmts === undefined) {
      // Each filter an equality (never `@x IS NULL OR x = @x`, which no index serves).
      // pooled = 0: a project's sessions, never its unclaimed warm instances (and the partial indexes' own term).
      const where = ['project_id = @projectId', 'pooled = 0', ...used.map((f) => `${f} = @${f}`), 'created_at >= @from', 'created_at <= @to'].join(' AND ');
      const from = `sessions INDEXED BY ${index} WHERE ${where}`;
      stmts = {
        count: this.db.prepare(`SELECT COUNT(*) AS n FROM ${from}`),
        capped: this.db.prepare(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${from} LIMIT @cap)`),
        page: this.db.prepare(`SELECT ${SELECTED}, diagnosis FROM ${from} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @skip`),
      };
      this.lists.set(key, stmts);
    }
    return stmts;
  }
}
