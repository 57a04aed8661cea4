// For repository tests: a real SQLite file in a temp dir, migrated, holding user usr_1 and its
// projects prj_1 and prj_2 (the rows sessions and their children hang off).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../db/database';
import type { SessionRecord } from './sessions';

export interface RepositoryTestDb {
  db: Db;
  /** Closes the database and removes its dir. */
  remove(): void;
}

export function openRepositoryTestDb(prefix: string): RepositoryTestDb {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const db = openDatabase(join(dir, 'cp.sqlite'));
  db.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'u@example.com', 1)").run();
  const project = db.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES (?, 'usr_1', 'p', 'europe', 1)");
  project.run('prj_1');
  project.run('prj_2');
  return {
    db,
    remove: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An Enqueued session of prj_1 created at createdAt, with extra fields over it. */
export const sessionRecord = (sessionId: string, createdAt: number, extra: Partial<SessionRecord> = {}): SessionRecord => ({
  sessionId,
  projectId: 'prj_1',
  region: 'europe',
  status: 'Enqueued',
  assignedWorker: undefined,
  streamingId: undefined,
  playerId: undefined,
  maxRunTime: undefined,
  endReason: undefined,
  createdAt,
  updatedAt: createdAt,
  ...extra,
});
