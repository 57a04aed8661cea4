// Builds (uploads) of a project. Statuses change only through builds/build-service.ts, which asks
// the stage table; the table's CHECK holds the same list.
import type { Db } from '../db/database';
import type { BuildStatus } from '../builds/build-stages';
import type { Sync } from '../store/promised';

/** What a scanned archive holds (the archive module's manifest, as the build record keeps it). */
export interface BuildManifest {
  platform: 'windows' | 'linux';
  projectName: string;
  /** The binary to launch, relative to the extracted root, '/'-separated. */
  executable: string;
  /** Arguments before the session flags. */
  baseArgs: string[];
  fileCount: number;
  totalBytes: number;
}

/** The archive's digest and size, as its download computed them (the blob store's key). */
export interface BuildArchive {
  sha256: string;
  bytes: number;
}

export interface BuildRecord {
  uploadId: string;
  projectId: string;
  fileUrl: string | undefined;
  status: BuildStatus;
  objection: string | undefined;
  autoRelease: boolean;
  live: boolean;
  /** Set once the archive was scanned. */
  manifest?: BuildManifest;
  /** Set once the archive was downloaded; the blob store holds it once the build passed Saving to Repository. */
  archive?: BuildArchive;
  createdAt: number;
  updatedAt: number;
}

/** The statuses the pipeline is still working on (resumed at start). */
export const UNFINISHED_BUILD_STATUSES = ['pending', 'Downloading Files', 'Extracting & Scanning', 'Saving to Repository'] as const satisfies readonly BuildStatus[];

export interface BuildsRepository {
  insert(b: Omit<BuildRecord, 'live' | 'manifest' | 'archive'>): Promise<void>;
  /** Newest first; `live` is true for the project's live build. */
  listByProject(projectId: string): Promise<BuildRecord[]>;
  /** How many builds are in each status (for /metrics). */
  countByStatus(): Promise<{ status: BuildStatus; n: number }[]>;
  /** One page of listByProject, and how many builds the project has. */
  pageByProject(projectId: string, limit: number, skip: number): Promise<{ total: number; builds: BuildRecord[] }>;
  findById(uploadId: string): Promise<BuildRecord | undefined>;
  /**
   * Moves the build from `from` to `to` with `objection` (cleared when undefined) and
   * `updated_at = nowMs`, only if its status is still `from`; false when it was not (or no such build).
   */
  moveStatus(uploadId: string, from: BuildStatus, to: BuildStatus, objection: string | undefined, nowMs: number): Promise<boolean>;
  recordManifest(uploadId: string, manifest: BuildManifest): Promise<void>;
  recordArchive(uploadId: string, archive: BuildArchive): Promise<void>;
  /** Builds in an UNFINISHED_BUILD_STATUSES status, oldest first. */
  listUnfinished(): Promise<BuildRecord[]>;
  /** Builds in `Distributing to Servers`, oldest first. */
  listDistributing(): Promise<BuildRecord[]>;
  /** The stages these builds entered, in order, by upload id (insert and moveStatus write them). */
  stagesOf(uploadIds: readonly string[]): Promise<Map<string, BuildStageEntry[]>>;
}

/** A status a build entered, and when (epoch ms). */
export interface BuildStageEntry {
  status: BuildStatus;
  enteredAt: number;
}

export interface BuildRow {
  upload_id: string;
  project_id: string;
  file_url: string | null;
  status: BuildStatus;
  objection: string | null;
  auto_release: number;
  live: number;
  manifest: string | null;
  archive_sha256: string | null;
  archive_bytes: number | null;
  created_at: number;
  updated_at: number;
}

export const buildRecordOf = (r: BuildRow): BuildRecord => ({
  uploadId: r.upload_id,
  projectId: r.project_id,
  fileUrl: r.file_url ?? undefined,
  status: r.status,
  objection: r.objection ?? undefined,
  autoRelease: r.auto_release === 1,
  live: r.live === 1,
  ...(r.manifest === null ? {} : { manifest: JSON.parse(r.manifest) as BuildManifest }),
  ...(r.archive_sha256 === null || r.archive_bytes === null ? {} : { archive: { sha256: r.archive_sha256, bytes: r.archive_bytes } }),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SqliteBuildsRepository implements Sync<BuildsRepository> {
  private readonly stmts;

  private readonly inTransaction: <T>(work: () => T) => T;

  constructor(db: Db) {
    this.inTransaction = (work) => db.transaction(work)();
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO builds (upload_id, project_id, file_url, status, objection, auto_release, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      byProject: db.prepare(
        `SELECT b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.manifest, b.archive_sha256, b.archive_bytes, b.created_at, b.updated_at,
           (p.live_upload_id IS b.upload_id) AS live
         FROM builds b JOIN projects p ON p.id = b.project_id
         WHERE b.project_id = ? ORDER BY b.created_at DESC, b.upload_id DESC`,
      ),
      pageByProject: db.prepare(
        `SELECT b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.manifest, b.archive_sha256, b.archive_bytes, b.created_at, b.updated_at,
           (p.live_upload_id IS b.upload_id) AS live
         FROM builds b JOIN projects p ON p.id = b.project_id
         WHERE b.project_id = ? ORDER BY b.created_at DESC, b.upload_id DESC LIMIT ? OFFSET ?`,
      ),
      countByProject: db.prepare('SELECT COUNT(*) AS n FROM builds WHERE project_id = ?'),
      countByStatus: db.prepare('SELECT status, COUNT(*) AS n FROM builds GROUP BY status'),
      stagesOf: db.prepare('SELECT upload_id, status, entered_at FROM build_stages WHERE upload_id IN (SELECT value FROM json_each(?)) ORDER BY upload_id, id'),
      byId: db.prepare(
        `SELECT b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.manifest, b.archive_sha256, b.archive_bytes, b.created_at, b.updated_at,
           (p.live_upload_id IS b.upload_id) AS live
         FROM builds b JOIN projects p ON p.id = b.project_id
         WHERE b.upload_id = ?`,
      ),
      moveStatus: db.prepare('UPDATE builds SET status = ?, objection = ?, updated_at = ? WHERE upload_id = ? AND status = ?'),
      insertStage: db.prepare('INSERT INTO build_stages (upload_id, status, entered_at) VALUES (?, ?, ?)'),
      recordManifest: db.prepare('UPDATE builds SET manifest = ? WHERE upload_id = ?'),
      recordArchive: db.prepare('UPDATE builds SET archive_sha256 = ?, archive_bytes = ? WHERE upload_id = ?'),
      distributing: db.prepare(
        `SELECT b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.manifest, b.archive_sha256, b.archive_bytes, b.created_at, b.updated_at,
           (p.live_upload_id IS b.upload_id) AS live
         FROM builds b JOIN projects p ON p.id = b.project_id
         WHERE b.status = 'Distributing to Servers' ORDER BY b.created_at, b.upload_id`,
      ),
      unfinished: db.prepare(
        `SELECT b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.manifest, b.archive_sha256, b.archive_bytes, b.created_at, b.updated_at,
           (p.live_upload_id IS b.upload_id) AS live
         FROM builds b JOIN projects p ON p.id = b.project_id
         WHERE b.status IN (${UNFINISHED_BUILD_STATUSES.map((st) => `'${st}'`).join(', ')}) ORDER BY b.created_at, b.upload_id`,
      ),
    };
  }

  insert(b: Omit<BuildRecord, 'live'>): void {
    this.inTransaction(() => {
      this.stmts.insert.run(b.uploadId, b.projectId, b.fileUrl ?? null, b.status, b.objection ?? null, b.autoRelease ? 1 : 0, b.createdAt, b.updatedAt);
      this.stmts.insertStage.run(b.uploadId, b.status, b.createdAt);
    });
  }

  listByProject(projectId: string): BuildRecord[] {
    return (this.stmts.byProject.all(projectId) as BuildRow[]).map(buildRecordOf);
  }

  countByStatus(): { status: BuildStatus; n: number }[] {
    return this.stmts.countByStatus.all() as { status: BuildStatus; n: number }[];
  }

  pageByProject(projectId: string, limit: number, skip: number): { total: number; builds: BuildRecord[] } {
    const total = (this.stmts.countByProject.get(projectId) as { n: number }).n;
    const builds = skip >= total || limit === 0 ? [] : (this.stmts.pageByProject.all(projectId, limit, skip) as BuildRow[]).map(buildRecordOf);
    return { total, builds };
  }

  findById(uploadId: string): BuildRecord | undefined {
    const r = this.stmts.byId.get(uploadId) as BuildRow | undefined;
    return r && buildRecordOf(r);
  }

  moveStatus(uploadId: string, from: BuildStatus, to: BuildStatus, objection: string | undefined, nowMs: number): boolean {
    return this.inTransaction(() => {
      if (this.stmts.moveStatus.run(to, objection ?? null, nowMs, uploadId, from).changes !== 1) return false;
      this.stmts.insertStage.run(uploadId, to, nowMs);
      return true;
    });
  }

  stagesOf(uploadIds: readonly string[]): Map<string, BuildStageEntry[]> {
    return stagesByUpload(this.stmts.stagesOf.all(JSON.stringify(uploadIds)) as StageRow[]);
  }

  recordManifest(uploadId: string, manifest: BuildManifest): void {
    this.stmts.recordManifest.run(JSON.stringify(manifest), uploadId);
  }

  recordArchive(uploadId: string, archive: BuildArchive): void {
    this.stmts.recordArchive.run(archive.sha256, archive.bytes, uploadId);
  }

  listUnfinished(): BuildRecord[] {
    return (this.stmts.unfinished.all() as BuildRow[]).map(buildRecordOf);
  }

  listDistributing(): BuildRecord[] {
    return (this.stmts.distributing.all() as BuildRow[]).map(buildRecordOf);
  }
}

export type StageRow = { upload_id: string; status: BuildStatus; entered_at: number };

/** Stage rows (ordered by upload id, then entry) grouped by upload id. */
export function stagesByUpload(rows: readonly StageRow[]): Map<string, BuildStageEntry[]> {
  const stages = new Map<string, BuildStageEntry[]>();
  for (const r of rows) {
    let list = stages.get(r.upload_id);
    if (list === undefined) stages.set(r.upload_id, (list = []));
    list.push({ status: r.status, enteredAt: r.entered_at });
  }
  return stages;
}
