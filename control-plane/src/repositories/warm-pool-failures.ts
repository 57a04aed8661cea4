// Builds whose warm instances keep failing (warm_pool_failures, migration 23): the run of failures
// in a row per project and build, and when the build stopped being warmed. Written only by
// sessions/warm-pool.ts; kept across restarts, so a restart does not begin a crash loop afresh.
import type { Db } from '../db/database';

export interface WarmBuildFailures {
  projectId: string;
  uploadId: string;
  /** Warm instances of the build that failed in a row (a ready instance resets it). */
  failures: number;
  lastFailureAt: number;
  /** The latest failure's end reason. */
  lastReason: string;
  /** When the build stopped being warmed; undefined while it still is. */
  stoppedAt: number | undefined;
}

export interface WarmPoolFailuresRepository {
  find(projectId: string, uploadId: string): WarmBuildFailures | undefined;
  put(record: WarmBuildFailures): void;
  /** A ready instance, a new live build or new pool settings: the build is warmed again from a clean slate. */
  clear(projectId: string): void;
  /** Every build that stopped being warmed (admin output, metrics). */
  listStopped(): WarmBuildFailures[];
}

interface Row {
  project_id: string;
  upload_id: string;
  failures: number;
  last_failure_at: number;
  last_reason: string;
  stopped_at: number | null;
}

const toRecord = (r: Row): WarmBuildFailures => ({
  projectId: r.project_id,
  uploadId: r.upload_id,
  failures: r.failures,
  lastFailureAt: r.last_failure_at,
  lastReason: r.last_reason,
  stoppedAt: r.stopped_at ?? undefined,
});

const COLUMNS = 'project_id, upload_id, failures, last_failure_at, last_reason, stopped_at';

export class SqliteWarmPoolFailuresRepository implements WarmPoolFailuresRepository {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      find: db.prepare(`SELECT ${COLUMNS} FROM warm_pool_failures WHERE project_id = ? AND upload_id = ?`),
      put: db.prepare(
        `INSERT INTO warm_pool_failures (${COLUMNS}) VALUES (@projectId, @uploadId, @failures, @lastFailureAt, @lastReason, @stoppedAt)
         ON CONFLICT (project_id, upload_id) DO UPDATE SET failures = excluded.failures, last_failure_at = excluded.last_failure_at,
           last_reason = excluded.last_reason, stopped_at = excluded.stopped_at`,
      ),
      clear: db.prepare('DELETE FROM warm_pool_failures WHERE project_id = ?'),
      stopped: db.prepare(`SELECT ${COLUMNS} FROM warm_pool_failures WHERE stopped_at IS NOT NULL ORDER BY project_id, upload_id`),
    };
  }

  find(projectId: string, uploadId: string): WarmBuildFailures | undefined {
    const r = this.stmts.find.get(projectId, uploadId) as Row | undefined;
    return r && toRecord(r);
  }

  put(record: WarmBuildFailures): void {
    this.stmts.put.run({ ...record, stoppedAt: record.stoppedAt ?? null });
  }

  clear(projectId: string): void {
    this.stmts.clear.run(projectId);
  }

  listStopped(): WarmBuildFailures[] {
    return (this.stmts.stopped.all() as Row[]).map(toRecord);
  }
}
