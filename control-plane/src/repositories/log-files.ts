// Engine log files of sessions (metadata; the bytes are in the blob store).
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

export interface LogFileRecord {
  logFileId: string;
  sessionId: string;
  projectId: string;
  fileName: string;
  fileSize: number;
  gzSize: number;
  blobSha256: string;
  uploadedAt: number;
}

/** A session's limits on its log files, all of them together. */
export interface SessionLogLimits {
  /** Files a session keeps at most. */
  maxFiles: number;
  /** Compressed bytes (gzSize) a session's files hold at most. */
  maxGzBytes: number;
}

/** What insertWithin did: recorded the file, or found why not (then nothing was written). */
export type LogFileInsertion =
  | { kind: 'inserted' }
  /** The session already has a file of that name (a retry whose first answer was lost): that record. */
  | { kind: 'sameName'; record: LogFileRecord }
  /** The session already has maxFiles files. */
  | { kind: 'tooMany' }
  /** The file does not fit: the session's files already hold heldGzBytes. */
  | { kind: 'tooLarge'; heldGzBytes: number };

export interface LogFilesRepository {
  insert(r: LogFileRecord): Promise<void>;
  /**
   * Records the file unless its session already has one of that name, or has no room left for it
   * under limits: the check and the insert in one transaction, so two uploads of one session
   * never both pass the check (nor one file get two records). A store whose transactions may run
   * side by side (PostgreSQL) locks the session's row before reading its files.
   */
  insertWithin(r: LogFileRecord, limits: SessionLogLimits): Promise<LogFileInsertion>;
  listBySession(sessionId: string): Promise<LogFileRecord[]>;
  /** One page of the session's files, oldest first, and how many it has in all. */
  pageBySession(sessionId: string, limit: number, skip: number): Promise<{ total: number; logFiles: LogFileRecord[] }>;
  findById(logFileId: string): Promise<LogFileRecord | undefined>;
}

export interface LogFileRow {
  id: string;
  session_id: string;
  project_id: string;
  file_name: string;
  file_size: number;
  gz_size: number;
  blob_sha256: string;
  uploaded_at: number;
}

export class SqliteLogFilesRepository implements Sync<LogFilesRepository> {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO log_files (id, session_id, project_id, file_name, file_size, gz_size, blob_sha256, uploaded_at)
         VALUES (@logFileId, @sessionId, @projectId, @fileName, @fileSize, @gzSize, @blobSha256, @uploadedAt)`,
      ),
      bySession: db.prepare(
        'SELECT id, session_id, project_id, file_name, file_size, gz_size, blob_sha256, uploaded_at FROM log_files WHERE session_id = ? ORDER BY uploaded_at, id',
      ),
      countBySession: db.prepare('SELECT COUNT(*) AS n FROM log_files WHERE session_id = ?'),
      pageBySession: db.prepare(
        'SELECT id, session_id, project_id, file_name, file_size, gz_size, blob_sha256, uploaded_at FROM log_files WHERE session_id = ? ORDER BY uploaded_at, id LIMIT ? OFFSET ?',
      ),
      byId: db.prepare('SELECT id, session_id, project_id, file_name, file_size, gz_size, blob_sha256, uploaded_at FROM log_files WHERE id = ?'),
    };
  }

  insert(r: LogFileRecord): void {
    this.stmts.insert.run(r);
  }

  insertWithin(r: LogFileRecord, limits: SessionLogLimits): LogFileInsertion {
    return this.db.transaction((): LogFileInsertion => {
      const stored = this.listBySession(r.sessionId);
      const same = stored.find((s) => s.fileName === r.fileName);
      if (same) return { kind: 'sameName', record: same };
      if (stored.length >= limits.maxFiles) return { kind: 'tooMany' };
      const heldGzBytes = stored.reduce((n, s) => n + s.gzSize, 0);
      if (heldGzBytes + r.gzSize > limits.maxGzBytes) return { kind: 'tooLarge', heldGzBytes };
      this.stmts.insert.run(r);
      return { kind: 'inserted' };
    })();
  }

  listBySession(sessionId: string): LogFileRecord[] {
    return (this.stmts.bySession.all(sessionId) as LogFileRow[]).map(logFileRecordOf);
  }

  pageBySession(sessionId: string, limit: number, skip: number): { total: number; logFiles: LogFileRecord[] } {
    const total = (this.stmts.countBySession.get(sessionId) as { n: number }).n;
    const rows = skip >= total || limit === 0 ? [] : (this.stmts.pageBySession.all(sessionId, limit, skip) as LogFileRow[]);
    return { total, logFiles: rows.map(logFileRecordOf) };
  }

  findById(logFileId: string): LogFileRecord | undefined {
    const r = this.stmts.byId.get(logFileId) as LogFileRow | undefined;
    return r && logFileRecordOf(r);
  }
}

export const logFileRecordOf = (r: LogFileRow): LogFileRecord => ({
  logFileId: r.id,
  sessionId: r.session_id,
  projectId: r.project_id,
  fileName: r.file_name,
  fileSize: r.file_size,
  gzSize: r.gz_size,
  blobSha256: r.blob_sha256,
  uploadedAt: r.uploaded_at,
});
