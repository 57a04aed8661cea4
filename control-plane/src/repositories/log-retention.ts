// Deleting engine log file records and telemetry rows by age (retention.logDays,
// retention.telemetryDays), a bounded batch per statement; and which blob digests a record
// still names, so the retention sweep deletes a log's blob only once nothing refers to it.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

export interface LogRetentionRepository {
  /** Deletes at most limit log file records uploaded before beforeMs, oldest first; returns the blob digests they named (one per record). */
  deleteLogFilesBefore(beforeMs: number, limit: number): Promise<string[]>;
  /** Deletes at most limit log file records of the given sessions; returns the blob digests they named. */
  deleteLogFilesOfSessions(sessionIds: readonly string[], limit: number): Promise<string[]>;
  /** Deletes at most limit telemetry rows received before beforeMs, oldest first; returns how many. */
  deleteTelemetryBefore(beforeMs: number, limit: number): Promise<number>;
  /** True while a log file record or a build's archive names the digest (content-addressed blobs may be shared). */
  isBlobReferenced(sha256: string): Promise<boolean>;
}

export class SqliteLogRetentionRepository implements Sync<LogRetentionRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      logsBefore: db.prepare(
        'DELETE FROM log_files WHERE rowid IN (SELECT rowid FROM log_files WHERE uploaded_at < ? ORDER BY uploaded_at LIMIT ?) RETURNING blob_sha256',
      ),
      logsOfSessions: db.prepare(
        'DELETE FROM log_files WHERE rowid IN (SELECT rowid FROM log_files WHERE session_id IN (SELECT value FROM json_each(?)) LIMIT ?) RETURNING blob_sha256',
      ),
      telemetryBefore: db.prepare(
        'DELETE FROM telemetry_rows WHERE rowid IN (SELECT rowid FROM telemetry_rows WHERE received_at < ? ORDER BY received_at LIMIT ?)',
      ),
      logReference: db.prepare('SELECT 1 FROM log_files WHERE blob_sha256 = ? LIMIT 1'),
      buildReference: db.prepare('SELECT 1 FROM builds WHERE archive_sha256 = ? LIMIT 1'),
    };
  }

  deleteLogFilesBefore(beforeMs: number, limit: number): string[] {
    return (this.stmts.logsBefore.all(beforeMs, limit) as { blob_sha256: string }[]).map((r) => r.blob_sha256);
  }

  deleteLogFilesOfSessions(sessionIds: readonly string[], limit: number): string[] {
    return (this.stmts.logsOfSessions.all(JSON.stringify(sessionIds), limit) as { blob_sha256: string }[]).map((r) => r.blob_sha256);
  }

  deleteTelemetryBefore(beforeMs: number, limit: number): number {
    return this.stmts.telemetryBefore.run(beforeMs, limit).changes;
  }

  isBlobReferenced(sha256: string): boolean {
    return this.stmts.logReference.get(sha256) !== undefined || this.stmts.buildReference.get(sha256) !== undefined;
  }
}
