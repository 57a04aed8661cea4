// Engine log files of sessions (metadata; the bytes are in the blob store), in PostgreSQL; the
// SQLite twin is ../log-files.ts. insertWithin locks the session's row before reading its files:
// PostgreSQL runs transactions side by side, so two uploads of one session would otherwise both
// read the same files and both pass the limits.
import type { PostgresPool } from '../../db/postgres-database';
import { logFileRecordOf, type LogFileInsertion, type LogFileRecord, type LogFileRow, type LogFilesRepository, type SessionLogLimits } from '../log-files';
import { firstRowOf, inTransaction, rowsOf, type Queryable } from './postgres-sql';

const COLUMNS = 'id, session_id, project_id, file_name, file_size, gz_size, blob_sha256, uploaded_at';

const insertSql = (db: Queryable, r: LogFileRecord) =>
  db.query(`INSERT INTO log_files (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
    r.logFileId,
    r.sessionId,
    r.projectId,
    r.fileName,
    r.fileSize,
    r.gzSize,
    r.blobSha256,
    r.uploadedAt,
  ]);

const filesOf = async (db: Queryable, sessionId: string) =>
  (await rowsOf<LogFileRow>(db, `SELECT ${COLUMNS} FROM log_files WHERE session_id = $1 ORDER BY uploaded_at, id`, [sessionId])).map(logFileRecordOf);

export class PostgresLogFilesRepository implements LogFilesRepository {
  constructor(private readonly pool: PostgresPool) {}

  async insert(r: LogFileRecord): Promise<void> {
    await insertSql(this.pool, r);
  }

  insertWithin(r: LogFileRecord, limits: SessionLogLimits): Promise<LogFileInsertion> {
    return inTransaction(this.pool, async (tx): Promise<LogFileInsertion> => {
      // The session's row first, locked to the commit: a second upload of the session waits here,
      // then reads the files this one stored. (No row: nothing to lock, and the insert fails on
      // its foreign key, as in SQLite.)
      await tx.query('SELECT 1 FROM sessions WHERE id = $1 FOR NO KEY UPDATE', [r.sessionId]);
      const stored = await filesOf(tx, r.sessionId);
      const same = stored.find((s) => s.fileName === r.fileName);
      if (same) return { kind: 'sameName', record: same };
      if (stored.length >= limits.maxFiles) return { kind: 'tooMany' };
      const heldGzBytes = stored.reduce((n, s) => n + s.gzSize, 0);
      if (heldGzBytes + r.gzSize > limits.maxGzBytes) return { kind: 'tooLarge', heldGzBytes };
      await insertSql(tx, r);
      return { kind: 'inserted' };
    });
  }

  listBySession(sessionId: string): Promise<LogFileRecord[]> {
    return filesOf(this.pool, sessionId);
  }

  async pageBySession(sessionId: string, limit: number, skip: number): Promise<{ total: number; logFiles: LogFileRecord[] }> {
    const total = (await firstRowOf<{ n: number }>(this.pool, 'SELECT COUNT(*) AS n FROM log_files WHERE session_id = $1', [sessionId]))!.n;
    if (skip >= total || limit === 0) return { total, logFiles: [] };
    const rows = await rowsOf<LogFileRow>(this.pool, `SELECT ${COLUMNS} FROM log_files WHERE session_id = $1 ORDER BY uploaded_at, id LIMIT $2 OFFSET $3`, [sessionId, limit, skip]);
    return { total, logFiles: rows.map(logFileRecordOf) };
  }

  async findById(logFileId: string): Promise<LogFileRecord | undefined> {
    const r = await firstRowOf<LogFileRow>(this.pool, `SELECT ${COLUMNS} FROM log_files WHERE id = $1`, [logFileId]);
    return r && logFileRecordOf(r);
  }
}
