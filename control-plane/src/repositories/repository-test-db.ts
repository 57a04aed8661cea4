// For repository tests: a real SQLite file in a temp dir, migrated, holding user usr_1 and its
// projects prj_1 and prj_2 (the rows sessions and their children hang off). The seed* helpers
// write parent rows through the repositories' own inserts, so tests never spell out a table's columns.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../db/database';
import { DEFAULT_PROJECT_SETTINGS } from '../projects/project-settings';
import { snapshotOf } from '../sessions/session-snapshots';
import { SqliteProjectsRepository, type Project } from './projects';
import { SqliteSessionsRepository, type SessionRecord } from './sessions';
import { SqliteUsersRepository, type User } from './users';
import { SqliteWorkersRepository, type WorkerRecord } from './workers';

export interface RepositoryTestDb {
  db: Db;
  /** Closes the database and removes its dir. */
  remove(): void;
}

export function openRepositoryTestDb(prefix: string): RepositoryTestDb {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const db = openDatabase(join(dir, 'cp.sqlite'));
  seedUser(db);
  seedProject(db, 'prj_1');
  seedProject(db, 'prj_2');
  return {
    db,
    remove: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A user (usr_1 unless told) created at 1, as the account service stores one. */
export function seedUser(db: Db, userId = 'usr_1', email = 'u@example.com'): User {
  const user: User = { userId, email, createdAt: 1 };
  new SqliteUsersRepository(db).insert(user);
  return user;
}

/** An enabled, active project of usr_1 in europe with the default settings, created at 1, with extra fields over it. */
export function seedProject(db: Db, projectId: string, extra: Partial<Project> = {}): Project {
  const project: Project = {
    projectId,
    ownerUserId: 'usr_1',
    name: 'p',
    region: 'europe',
    enabled: true,
    subscriptionStatus: 'active',
    liveUploadId: undefined,
    settings: { ...DEFAULT_PROJECT_SETTINGS, launchArgs: [], embedOrigins: [] },
    createdAt: 1,
    ...extra,
  };
  new SqliteProjectsRepository(db).insert(project);
  return project;
}

/** A disconnected worker in europe with 1 slot, as enrolment stores one, with extra fields over it. */
export const workerRecord = (workerId: string, extra: Partial<WorkerRecord> = {}): WorkerRecord => ({
  workerId,
  hostname: `${workerId}.local`,
  region: 'europe',
  slots: 1,
  agentVersion: '1',
  link: 'disconnected',
  draining: false,
  connectionEpoch: 0,
  lastAckedSeq: 0,
  lastSeenAt: undefined,
  leaseExpiresAt: undefined,
  enrolledAt: 1,
  ...extra,
});

/** Stores workerRecord(workerId, extra) with the token digest `th_<workerId>`. */
export function seedWorker(db: Db, workerId: string, extra: Partial<WorkerRecord> = {}): WorkerRecord {
  const worker = workerRecord(workerId, extra);
  new SqliteWorkersRepository(db).insert(worker, `th_${workerId}`);
  return worker;
}

/** Stores the session as the session service does: its row and its first snapshot (received at its updatedAt). */
export function seedSession(db: Db, session: SessionRecord): void {
  new SqliteSessionsRepository(db).insert(session, snapshotOf(session));
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
