// Deleting the history of sessions that ended long ago, in PostgreSQL, a bounded batch per
// statement; the SQLite twin is ../session-retention.ts. Ids travel as one text[] parameter.
import type { PostgresPool } from '../../db/postgres-database';
import type { SessionChildTable, SessionRetentionRepository } from '../session-retention';
import { changesOf, rowsOf } from './postgres-sql';

/** Each child table's delete, written out: table names are never spliced from a value. */
const DELETE_CHILD_ROWS: Record<SessionChildTable, string> = {
  telemetry_rows: 'DELETE FROM telemetry_rows WHERE id IN (SELECT id FROM telemetry_rows WHERE session_id = ANY($1::text[]) LIMIT $2)',
  session_snapshots: 'DELETE FROM session_snapshots WHERE id IN (SELECT id FROM session_snapshots WHERE session_id = ANY($1::text[]) LIMIT $2)',
  log_files: 'DELETE FROM log_files WHERE id IN (SELECT id FROM log_files WHERE session_id = ANY($1::text[]) LIMIT $2)',
};

export class PostgresSessionRetentionRepository implements SessionRetentionRepository {
  constructor(private readonly pool: PostgresPool) {}

  async listEndedBefore(endedBeforeMs: number, limit: number): Promise<string[]> {
    // `status = 'Terminated'` spelled out so that the partial index sessions_ended applies.
    const rows = await rowsOf<{ id: string }>(this.pool, `SELECT id FROM sessions WHERE status = 'Terminated' AND updated_at < $1 ORDER BY updated_at LIMIT $2`, [
      endedBeforeMs,
      limit,
    ]);
    return rows.map((r) => r.id);
  }

  deleteChildRows(table: SessionChildTable, sessionIds: readonly string[], limit: number): Promise<number> {
    return changesOf(this.pool, DELETE_CHILD_ROWS[table], [sessionIds, limit]);
  }

  deleteEnded(sessionIds: readonly string[]): Promise<number> {
    return changesOf(this.pool, `DELETE FROM sessions WHERE id = ANY($1::text[]) AND status = 'Terminated'`, [sessionIds]);
  }
}
