// Engine log files of sessions (metadata; the bytes are in the blob store).
import type { Db } from '../db/database';

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

export interface LogFilesRepository {
  insert(r: LogFileRecord): void;
  listBySession(sessionId: string): LogFileRecord[];
  /** One page of the session's files, oldest first, and how many it has in all. */
  pageBySession(sessionId: string, limit: number, skip: number): { total: number; logFiles: LogFileRecord[] };
  findById(logFileId: string): LogFileRecord | undefined;
}

interface LogFileRow {
  id: string;
  session_id: string;
  project_id: string;
  file_name: string;
  file_size: number;
  gz_size: number;
  blob_sha256: string;
  uploaded_at: number;
}

export class SqliteLogFilesRepository implements LogFilesRepository {
  private readonly stmts;

  constructor(db: Db) {
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

  listBySession(sessionId: string): LogFileRecord[] {
    return (this.stmts.bySession.all(sessionId) as LogFileRow[]).map(toLogFile);
  }

  pageBySession(sessionId: string, limit: number, skip: number): { total: number; logFiles: LogFileRecord[] } {
    const total = (this.stmts.countBySession.get(sessionId) as { n: number }).n;
    const rows = skip >= total || limit === 0 ? [] : (this.stmts.pageBySession.all(sessionId, limit, skip) as LogFileRow[]);
    return { total, logFiles: rows.map(toLogFile) };
  }

  findById(logFileId: string): LogFileRecord | undefined {
    const r = this.stmts.byId.get(logFileId) as LogFileRow | undefined;
    return r && toLogFile(r);
  }
}

const toLogFile = (r: LogFileRow): LogFileRecord => ({
  logFileId: r.id,
  sessionId: r.session_id,
  projectId: r.project_id,
  fileName: r.file_name,
  fileSize: r.file_size,
  gzSize: r.gz_size,
  blobSha256: r.blob_sha256,
  uploadedAt: r.uploaded_at,
});
