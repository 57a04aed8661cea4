// The embedded store: one SQLite file in the data folder (WAL, checkpointed in a thread of its own),
// every repository over one connection, online backups through SQLite's backup API. The default:
// `npm start` and single-machine installs need no database server.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { openDatabase, schemaStatus, type Db } from '../db/database';
import { OnlineBackups } from '../db/online-backup';
import { WalCheckpointer } from '../db/wal-checkpointer';
import { SqliteAccessFactsRepository } from '../repositories/access-facts';
import { SqliteBuildCopiesRepository } from '../repositories/build-copies';
import { SqliteBuildsRepository } from '../repositories/builds';
import { SqliteEventsRepository } from '../repositories/events';
import { SqliteLogFilesRepository } from '../repositories/log-files';
import { SqliteLogRetentionRepository } from '../repositories/log-retention';
import { SqliteMailOutboxRepository } from '../repositories/mail-outbox';
import { SqlitePeopleRetentionRepository } from '../repositories/people-retention';
import { SqliteProjectsRepository } from '../repositories/projects';
import { SqliteSessionDailyRepository } from '../repositories/session-daily';
import { SqliteSessionDiagnosisRepository } from '../repositories/session-diagnosis-store';
import { SqliteSessionDimensionsRepository } from '../repositories/session-dimensions';
import { SqliteSessionHistoryRepository } from '../repositories/session-history';
import { SqliteSessionRetentionRepository } from '../repositories/session-retention';
import { SqliteSessionsRepository } from '../repositories/sessions';
import { SqliteSignInsRepository } from '../repositories/sign-ins';
import { SqliteTelemetryRepository } from '../repositories/telemetry';
import { SqliteUsersRepository } from '../repositories/users';
import { SqliteWarmPoolFailuresRepository } from '../repositories/warm-pool-failures';
import { SqliteWebhookDeliveriesRepository } from '../repositories/webhook-deliveries';
import { SqliteWorkersRepository } from '../repositories/workers';
import type { Repositories, Store } from './store';

/** The SQLite store, with its connection for tests and benches that seed or read rows directly. */
export interface SqliteStore extends Store {
  readonly kind: 'sqlite';
  readonly db: Db;
}

/** The file the store keeps in the data folder. */
export const SQLITE_FILE_NAME = 'pixelfleet.sqlite';

/** Every repository over one SQLite connection. */
export function sqliteRepositories(db: Db): Repositories {
  return {
    users: new SqliteUsersRepository(db),
    signIns: new SqliteSignInsRepository(db),
    accessFacts: new SqliteAccessFactsRepository(db),
    projects: new SqliteProjectsRepository(db),
    builds: new SqliteBuildsRepository(db),
    buildCopies: new SqliteBuildCopiesRepository(db),
    webhookDeliveries: new SqliteWebhookDeliveriesRepository(db),
    workers: new SqliteWorkersRepository(db),
    sessions: new SqliteSessionsRepository(db),
    sessionHistory: new SqliteSessionHistoryRepository(db),
    sessionDimensions: new SqliteSessionDimensionsRepository(db),
    sessionDaily: new SqliteSessionDailyRepository(db),
    diagnoses: new SqliteSessionDiagnosisRepository(db),
    warmFailures: new SqliteWarmPoolFailuresRepository(db),
    telemetry: new SqliteTelemetryRepository(db),
    logFiles: new SqliteLogFilesRepository(db),
    events: new SqliteEventsRepository(db),
    mailOutbox: new SqliteMailOutboxRepository(db),
    sessionRetention: new SqliteSessionRetentionRepository(db),
    logRetention: new SqliteLogRetentionRepository(db),
    peopleRetention: new SqlitePeopleRetentionRepository(db),
  };
}

/** Opens (creating and migrating) `<dataDir>/pixelfleet.sqlite` and starts its WAL checkpointer. */
export function openSqliteStore(dataDir: string, log: Logger): SqliteStore {
  const db = openDatabase(join(dataDir, SQLITE_FILE_NAME));
  // WAL checkpoints in a thread of their own, not inside a commit on the event loop.
  const checkpointer = WalCheckpointer.start(db, log);
  const backups = new OnlineBackups(db, join(dataDir, 'backups'));
  let closing: Promise<void> | undefined;
  return {
    kind: 'sqlite',
    db,
    ...sqliteRepositories(db),
    // A closed or broken file rejects (the readiness check answers 503), never throws.
    schemaStatus: () => new Promise((resolve) => resolve(schemaStatus(db))),
    takeBackup: () => backups.take(),
    close() {
      closing ??= (async () => {
        await checkpointer?.close();
        db.close();
      })();
      return closing;
    },
  };
}
