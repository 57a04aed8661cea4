// Deleting engine log records and telemetry rows by age, in PostgreSQL, a bounded batch per
// statement, and which blob digests are still named; the SQLite twin is ../log-retention.ts.
import type { PostgresPool } from '../../db/postgres-database';
import type { LogRetentionRepository } from '../log-retention';
import { changesOf, firstRowOf, rowsOf } from './postgres-sql';

export class PostgresLogRetentionRepository implements LogRetentionRepository {
  constructor(private readonly pool: PostgresPool) {}

  async deleteLogFilesBefore(beforeMs: number, limit: number): Promise<string[]> {
    const rows = await rowsOf<{ blob_sha256: string }>(
      this.pool,
      'DELETE FROM log_files WHERE id IN (SELECT id FROM log_files WHERE uploaded_at < $1 ORDER BY uploaded_at LIMIT $2) RETURNING blob_sha256',
      [beforeMs, limit],
    );
    return rows.map((r) => r.blob_sha256);
  }

  async deleteLogFilesOfSessions(sessionIds: readonly string[], limit: number): Promise<string[]> {
    const rows = await rowsOf<{ blob_sha256: string }>(
      this.pool,
      'DELETE FROM log_files WHERE id IN (SELECT id FROM log_files WHERE session_id = ANY($1::text[]) LIMIT $2) RETURNING blob_sha256',
      [sessionIds, limit],
    );
    return rows.map((r) => r.blob_sha256);
  }

  deleteTelemetryBefore(beforeMs: number, limit: number): Promise<number> {
    return changesOf(this.pool, 'DELETE FROM telemetry_rows WHERE id IN (SELECT id FROM telemetry_rows WHERE received_at < $1 ORDER BY received_at LIMIT $2)', [
      beforeMs,
      limit,
    ]);
  }

  async isBlobReferenced(sha256: string): Promise<boolean> {
    const r = await firstRowOf<{ referenced: boolean }>(
      this.pool,
      'SELECT EXISTS (SELECT 1 FROM log_files WHERE blob_sha256 = $1) OR EXISTS (SELECT 1 FROM builds WHERE archive_sha256 = $1) AS referenced',
      [sha256],
    );
    return r?.referenced === true;
  }
}
