// Builds (uploads) of a project. Statuses change only through builds/build-service.ts, which asks
// the stage table; the table's CHECK holds the same list.
import type { Db } from '../db/database';
import type { BuildStatus } from '../builds/build-stages';

export interface BuildRecord {
  uploadId: string;
  projectId: string;
  fileUrl: string | undefined;
  status: BuildStatus;
  objection: string | undefined;
  autoRelease: boolean;
  live: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface BuildsRepository {
  insert(b: Omit<BuildRecord, 'live'>): void;
  /** Newest first; `live` is true for the project's live build. */
  listByProject(projectId: string): BuildRecord[];
  findById(uploadId: string): BuildRecord | undefined;
  /**
   * Moves the build from `from` to `to` with `objection` (cleared when undefined) and
   * `updated_at = nowMs`, only if its status is still `from`; false when it was not (or no such build).
   */
  moveStatus(uploadId: string, from: BuildStatus, to: BuildStatus, objection: string | undefined, nowMs: number): boolean;
}

interface BuildRow {
  upload_id: string;
  project_id: string;
  file_url: string | null;
  status: BuildStatus;
  objection: string | null;
  auto_release: number;
  live: number;
  created_at: number;
  updated_at: number;
}

const toBuild = (r: BuildRow): BuildRecord => ({
  uploadId: r.upload_id,
  projectId: r.project_id,
  fileUrl: r.file_url ?? undefined,
  status: r.status,
  objection: r.objection ?? undefined,
  autoRelease: r.auto_release === 1,
  live: r.live === 1,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SqliteBuildsRepository implements BuildsRepository {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO builds (upload_id, project_id, file_url, status, objection, auto_release, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      byProject: db.prepare(
        `SELECT b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.created_at, b.updated_at,
           (p.live_upload_id IS b.upload_id) AS live
         FROM builds b JOIN projects p ON p.id = b.project_id
         WHERE b.project_id = ? ORDER BY b.created_at DESC, b.upload_id DESC`,
      ),
      byId: db.prepare(
        `SELECT b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.created_at, b.updated_at,
           (p.live_upload_id IS b.upload_id) AS live
         FROM builds b JOIN projects p ON p.id = b.project_id
         WHERE b.upload_id = ?`,
      ),
      moveStatus: db.prepare('UPDATE builds SET status = ?, objection = ?, updated_at = ? WHERE upload_id = ? AND status = ?'),
    };
  }

  insert(b: Omit<BuildRecord, 'live'>): void {
    this.stmts.insert.run(b.uploadId, b.projectId, b.fileUrl ?? null, b.status, b.objection ?? null, b.autoRelease ? 1 : 0, b.createdAt, b.updatedAt);
  }

  listByProject(projectId: string): BuildRecord[] {
    return (this.stmts.byProject.all(projectId) as BuildRow[]).map(toBuild);
  }

  findById(uploadId: string): BuildRecord | undefined {
    const r = this.stmts.byId.get(uploadId) as BuildRow | undefined;
    return r && toBuild(r);
  }

  moveStatus(uploadId: string, from: BuildStatus, to: BuildStatus, objection: string | undefined, nowMs: number): boolean {
    return this.stmts.moveStatus.run(to, objection ?? null, nowMs, uploadId, from).changes === 1;
  }
}
