// Builds (uploads) of a project in PostgreSQL, with the stages each entered; the SQLite twin is
// ../builds.ts. Statuses change only through builds/build-service.ts, by the compare-and-set in
// moveStatus: of two moves from one status at once, the second finds the status gone.
import type { PostgresPool } from '../../db/postgres-database';
import type { BuildStatus } from '../../builds/build-stages';
import {
  buildRecordOf,
  stagesByUpload,
  UNFINISHED_BUILD_STATUSES,
  type BuildArchive,
  type BuildManifest,
  type BuildRecord,
  type BuildRow,
  type BuildsRepository,
  type BuildStageEntry,
  type StageRow,
} from '../builds';
import { changesOf, firstRowOf, inTransaction, rowsOf } from './postgres-sql';

/**
 * A build and whether it is its project's live one, as 0/1 (SQLite's `IS` answers 0/1) for the
 * shared mapper. `b` is builds, `p` its project.
 */
const RECORD_COLUMNS = `b.upload_id, b.project_id, b.file_url, b.status, b.objection, b.auto_release, b.manifest, b.archive_sha256, b.archive_bytes, b.created_at, b.updated_at,
  (p.live_upload_id IS NOT DISTINCT FROM b.upload_id)::int AS live`;

const FROM_BUILDS = 'FROM builds b JOIN projects p ON p.id = b.project_id';

/** A literal list, as the partial index builds_unfinished is declared, so the planner can use it. */
const UNFINISHED_LIST = UNFINISHED_BUILD_STATUSES.map((st) => `'${st}'`).join(', ');

const INSERT_STAGE = 'INSERT INTO build_stages (upload_id, status, entered_at) VALUES ($1, $2, $3)';

export class PostgresBuildsRepository implements BuildsRepository {
  constructor(private readonly pool: PostgresPool) {}

  async insert(b: Omit<BuildRecord, 'live' | 'manifest' | 'archive'>): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      await tx.query(
        `INSERT INTO builds (upload_id, project_id, file_url, status, objection, auto_release, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [b.uploadId, b.projectId, b.fileUrl ?? null, b.status, b.objection ?? null, b.autoRelease ? 1 : 0, b.createdAt, b.updatedAt],
      );
      await tx.query(INSERT_STAGE, [b.uploadId, b.status, b.createdAt]);
    });
  }

  async listByProject(projectId: string): Promise<BuildRecord[]> {
    const rows = await rowsOf<BuildRow>(this.pool, `SELECT ${RECORD_COLUMNS} ${FROM_BUILDS} WHERE b.project_id = $1 ORDER BY b.created_at DESC, b.upload_id DESC`, [projectId]);
    return rows.map(buildRecordOf);
  }

  async countByStatus(): Promise<{ status: BuildStatus; n: number }[]> {
    // Ordered as SQLite's GROUP BY happens to answer, though callers need no order.
    return rowsOf<{ status: BuildStatus; n: number }>(this.pool, 'SELECT status, COUNT(*) AS n FROM builds GROUP BY status ORDER BY status');
  }

  pageByProject(projectId: string, limit: number, skip: number): Promise<{ total: number; builds: BuildRecord[] }> {
    // One snapshot for the count and the page, as SQLite's two statements see (nothing runs
    // between them there); under READ COMMITTED a build inserted between them would show in one only.
    return inTransaction(this.pool, async (tx) => {
      await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const total = (await firstRowOf<{ n: number }>(tx, 'SELECT COUNT(*) AS n FROM builds WHERE project_id = $1', [projectId]))!.n;
      const builds =
        skip >= total || limit === 0
          ? []
          : (
              await rowsOf<BuildRow>(tx, `SELECT ${RECORD_COLUMNS} ${FROM_BUILDS} WHERE b.project_id = $1 ORDER BY b.created_at DESC, b.upload_id DESC LIMIT $2 OFFSET $3`, [
                projectId,
                limit,
                skip,
              ])
            ).map(buildRecordOf);
      return { total, builds };
    });
  }

  async findById(uploadId: string): Promise<BuildRecord | undefined> {
    const r = await firstRowOf<BuildRow>(this.pool, `SELECT ${RECORD_COLUMNS} ${FROM_BUILDS} WHERE b.upload_id = $1`, [uploadId]);
    return r && buildRecordOf(r);
  }

  moveStatus(uploadId: string, from: BuildStatus, to: BuildStatus, objection: string | undefined, nowMs: number): Promise<boolean> {
    return inTransaction(this.pool, async (tx) => {
      // The compare-and-set is this one UPDATE: a second move from the same status waits for the
      // first's row lock, then re-reads the row, finds the status changed and updates nothing.
      const moved = await changesOf(tx, 'UPDATE builds SET status = $1, objection = $2, updated_at = $3 WHERE upload_id = $4 AND status = $5', [
        to,
        objection ?? null,
        nowMs,
        uploadId,
        from,
      ]);
      if (moved !== 1) return false;
      await tx.query(INSERT_STAGE, [uploadId, to, nowMs]);
      return true;
    });
  }

  async stagesOf(uploadIds: readonly string[]): Promise<Map<string, BuildStageEntry[]>> {
    const rows = await rowsOf<StageRow>(this.pool, 'SELECT upload_id, status, entered_at FROM build_stages WHERE upload_id = ANY($1::text[]) ORDER BY upload_id, id', [uploadIds]);
    return stagesByUpload(rows);
  }

  async recordManifest(uploadId: string, manifest: BuildManifest): Promise<void> {
    await this.pool.query('UPDATE builds SET manifest = $1 WHERE upload_id = $2', [JSON.stringify(manifest), uploadId]);
  }

  async recordArchive(uploadId: string, archive: BuildArchive): Promise<void> {
    await this.pool.query('UPDATE builds SET archive_sha256 = $1, archive_bytes = $2 WHERE upload_id = $3', [archive.sha256, archive.bytes, uploadId]);
  }

  async listUnfinished(): Promise<BuildRecord[]> {
    const rows = await rowsOf<BuildRow>(this.pool, `SELECT ${RECORD_COLUMNS} ${FROM_BUILDS} WHERE b.status IN (${UNFINISHED_LIST}) ORDER BY b.created_at, b.upload_id`);
    return rows.map(buildRecordOf);
  }

  async listDistributing(): Promise<BuildRecord[]> {
    const rows = await rowsOf<BuildRow>(this.pool, `SELECT ${RECORD_COLUMNS} ${FROM_BUILDS} WHERE b.status = 'Distributing to Servers' ORDER BY b.created_at, b.upload_id`);
    return rows.map(buildRecordOf);
  }
}
