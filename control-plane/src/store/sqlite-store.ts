// The embedded store: one SQLite file in the data folder (WAL, checkpointed in a thread of its own),
// every repository over one connection, online backups through SQLite's backup API. The default:
// `npm start` and single-machine installs need no database server.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { openDatabase, schemaStatus, type Db } from '../db/database';
import { OnlineBackups } from '../db/online-backup';
import { WalCheckpointer } from '../db/wal-checkpointer';
import { SqliteAccessFactsRepository, type AccessFactsRepository } from '../repositories/access-facts';
import { SqliteBuildCopiesRepository, type BuildCopiesRepository } from '../repositories/build-copies';
import { SqliteBuildsRepository, type BuildsRepository } from '../repositories/builds';
import { SqliteEventsRepository, type EventsRepository } from '../repositories/events';
import { SqliteLogFilesRepository, type LogFilesRepository } from '../repositories/log-files';
import { SqliteLogRetentionRepository, type LogRetentionRepository } from '../repositories/log-retention';
import { SqliteMailOutboxRepository, type MailOutboxRepository } from '../repositories/mail-outbox';
import { SqlitePeopleRetentionRepository, type PeopleRetentionRepository } from '../repositories/people-retention';
import { SqliteProjectsRepository } from '../repositories/projects';
import { SqliteSessionDailyRepository, type SessionDailyRepository } from '../repositories/session-daily';
import { SqliteSessionDiagnosisRepository } from '../repositories/session-diagnosis-store';
import { SqliteSessionDimensionsRepository, type SessionDimensionsRepository } from '../repositories/session-dimensions';
import { SqliteSessionHistoryRepository, type SessionHistoryRepository } from '../repositories/session-history';
import { SqliteSessionRetentionRepository, type SessionRetentionRepository } from '../repositories/session-retention';
import { SqliteSessionsRepository } from '../repositories/sessions';
import { SqliteSignInsRepository, type SignInsRepository } from '../repositories/sign-ins';
import { SqliteTelemetryRepository, type TelemetryRepository } from '../repositories/telemetry';
import { SqliteUsersRepository, type UsersRepository } from '../repositories/users';
import { SqliteWarmPoolFailuresRepository } from '../repositories/warm-pool-failures';
import { SqliteWebhookDeliveriesRepository, type WebhookDeliveriesRepository } from '../repositories/webhook-deliveries';
import { SqliteWorkersRepository } from '../repositories/workers';
import { promised } from './promised';
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
    users: promised<UsersRepository>(new SqliteUsersRepository(db)),
    signIns: promised<SignInsRepository>(new SqliteSignInsRepository(db)),
    accessFacts: promised<AccessFactsRepository>(new SqliteAccessFactsRepository(db)),
    projects: new SqliteProjectsRepository(db),
    builds: promised<BuildsRepository>(new SqliteBuildsRepository(db)),
    buildCopies: promised<BuildCopiesRepository>(new SqliteBuildCopiesRepository(db)),
    webhookDeliveries: promised<WebhookDeliveriesRepository>(new SqliteWebhookDeliveriesRepository(db)),
    workers: new SqliteWorkersRepository(db),
    sessions: new SqliteSessionsRepository(db),
    sessionHistory: promised<SessionHistoryRepository>(new SqliteSessionHistoryRepository(db)),
    sessionDimensions: promised<SessionDimensionsRepository>(new SqliteSessionDimensionsRepository(db)),
    sessionDaily: promised<SessionDailyRepository>(new SqliteSessionDailyRepository(db)),
    diagnoses: new SqliteSessionDiagnosisRepository(db),
    warmFailures: new SqliteWarmPoolFailuresRepository(db),
    telemetry: promised<TelemetryRepository>(new SqliteTelemetryRepository(db)),
    logFiles: promised<LogFilesRepository>(new SqliteLogFilesRepository(db)),
    events: promised<EventsRepository>(new SqliteEventsRepository(db)),
    mailOutbox: promised<MailOutboxRepository>(new SqliteMailOutboxRepository(db)),
    sessionRetention: promised<SessionRetentionRepository>(new SqliteSessionRetentionRepository(db)),
    logRetention: promised<LogRetentionRepository>(new SqliteLogRetentionRepository(db)),
    peopleRetention: promised<PeopleRetentionRepository>(new SqlitePeopleRetentionRepository(db)),
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
