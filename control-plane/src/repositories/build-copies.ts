// Each worker's copy of a distributed build (build_copies): PrepareBuild sent, ready in the
// worker's cache, or failed there. Written only by builds/build-distribution.ts.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

export type CopyPhase = 'sent' | 'ready' | 'failed';

export interface BuildCopy {
  uploadId: string;
  workerId: string;
  phase: CopyPhase;
  /** Why the copy failed (the agent's error code and message). */
  error: string | undefined;
  updatedAt: number;
}

export interface BuildCopiesRepository {
  /** Creates or replaces the worker's copy of the build. */
  put(copy: BuildCopy): Promise<void>;
  find(uploadId: string, workerId: string): Promise<BuildCopy | undefined>;
  listOfBuild(uploadId: string): Promise<BuildCopy[]>;
  /** Upload ids the worker holds ready. */
  readyOnWorker(workerId: string): Promise<string[]>;
}

export interface CopyRow {
  upload_id: string;
  worker_id: string;
  phase: CopyPhase;
  error: string | null;
  updated_at: number;
}

export const buildCopyOf = (r: CopyRow): BuildCopy => ({ uploadId: r.upload_id, workerId: r.worker_id, phase: r.phase, error: r.error ?? undefined, updatedAt: r.updated_at });

export class SqliteBuildCopiesRepository implements Sync<BuildCopiesRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      put: db.prepare(
        `INSERT INTO build_copies (upload_id, worker_id, phase, error, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (upload_id, worker_id) DO UPDATE SET phase = excluded.phase, error = excluded.error, updated_at = excluded.updated_at`,
      ),
      find: db.prepare('SELECT upload_id, worker_id, phase, error, updated_at FROM build_copies WHERE upload_id = ? AND worker_id = ?'),
      ofBuild: db.prepare('SELECT upload_id, worker_id, phase, error, updated_at FROM build_copies WHERE upload_id = ? ORDER BY worker_id'),
      readyOnWorker: db.prepare("SELECT upload_id FROM build_copies WHERE worker_id = ? AND phase = 'ready' ORDER BY upload_id"),
    };
  }

  put(c: BuildCopy): void {
    this.stmts.put.run(c.uploadId, c.workerId, c.phase, c.error ?? null, c.updatedAt);
  }

  find(uploadId: string, workerId: string): BuildCopy | undefined {
    const r = this.stmts.find.get(uploadId, workerId) as CopyRow | undefined;
    return r && buildCopyOf(r);
  }

  listOfBuild(uploadId: string): BuildCopy[] {
    return (this.stmts.ofBuild.all(uploadId) as CopyRow[]).map(buildCopyOf);
  }

  readyOnWorker(workerId: string): string[] {
    return (this.stmts.readyOnWorker.all(workerId) as { upload_id: string }[]).map((r) => r.upload_id);
  }
}
