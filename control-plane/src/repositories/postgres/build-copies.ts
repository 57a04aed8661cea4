// Each worker's copy of a distributed build in PostgreSQL (sent, ready in its cache, or failed
// there); the SQLite twin is ../build-copies.ts. Written only by builds/build-distribution.ts.
import type { PostgresPool } from '../../db/postgres-database';
import { buildCopyOf, type BuildCopiesRepository, type BuildCopy, type CopyRow } from '../build-copies';
import { firstRowOf, rowsOf } from './postgres-sql';

export class PostgresBuildCopiesRepository implements BuildCopiesRepository {
  constructor(private readonly pool: PostgresPool) {}

  async put(c: BuildCopy): Promise<void> {
    // One statement: two puts of the same copy at once leave one row, the later put's.
    await this.pool.query(
      `INSERT INTO build_copies (upload_id, worker_id, phase, error, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (upload_id, worker_id) DO UPDATE SET phase = excluded.phase, error = excluded.error, updated_at = excluded.updated_at`,
      [c.uploadId, c.workerId, c.phase, c.error ?? null, c.updatedAt],
    );
  }

  async find(uploadId: string, workerId: string): Promise<BuildCopy | undefined> {
    const r = await firstRowOf<CopyRow>(this.pool, 'SELECT upload_id, worker_id, phase, error, updated_at FROM build_copies WHERE upload_id = $1 AND worker_id = $2', [uploadId, workerId]);
    return r && buildCopyOf(r);
  }

  async listOfBuild(uploadId: string): Promise<BuildCopy[]> {
    return (await rowsOf<CopyRow>(this.pool, 'SELECT upload_id, worker_id, phase, error, updated_at FROM build_copies WHERE upload_id = $1 ORDER BY worker_id', [uploadId])).map(buildCopyOf);
  }

  async readyOnWorker(workerId: string): Promise<string[]> {
    const rows = await rowsOf<{ upload_id: string }>(this.pool, "SELECT upload_id FROM build_copies WHERE worker_id = $1 AND phase = 'ready' ORDER BY upload_id", [workerId]);
    return rows.map((r) => r.upload_id);
  }
}
