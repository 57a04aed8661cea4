// The scale-out store: PostgreSQL, reached through a pool, for several control planes on one
// database (issue 27). Its repositories are written one by one beside their SQLite twins; the
// store opens from `database.url` once every repository has its PostgreSQL implementation.
import type { PostgresPool } from '../db/postgres-database';
import { PostgresAccessFactsRepository } from '../repositories/postgres/access-facts';
import { PostgresBuildCopiesRepository } from '../repositories/postgres/build-copies';
import { PostgresBuildsRepository } from '../repositories/postgres/builds';
import { PostgresEventsRepository } from '../repositories/postgres/events';
import { PostgresLogFilesRepository } from '../repositories/postgres/log-files';
import { PostgresLogRetentionRepository } from '../repositories/postgres/log-retention';
import { PostgresMailOutboxRepository } from '../repositories/postgres/mail-outbox';
import { PostgresPeopleRetentionRepository } from '../repositories/postgres/people-retention';
import { PostgresSessionDailyRepository } from '../repositories/postgres/session-daily';
import { PostgresSessionDimensionsRepository } from '../repositories/postgres/session-dimensions';
import { PostgresSessionHistoryRepository } from '../repositories/postgres/session-history';
import { PostgresSessionRetentionRepository } from '../repositories/postgres/session-retention';
import { PostgresSignInsRepository } from '../repositories/postgres/sign-ins';
import { PostgresTelemetryRepository } from '../repositories/postgres/telemetry';
import { PostgresUsersRepository } from '../repositories/postgres/users';
import { PostgresWebhookDeliveriesRepository } from '../repositories/postgres/webhook-deliveries';
import type { Repositories } from './store';

/** The repositories PostgreSQL implements so far. */
export type PostgresRepositories = Pick<Repositories, 'users' | 'signIns' | 'mailOutbox' | 'peopleRetention' | 'sessionRetention' | 'logRetention' | 'events' | 'builds' | 'buildCopies' | 'webhookDeliveries' | 'telemetry' | 'sessionHistory' | 'sessionDimensions' | 'sessionDaily' | 'accessFacts' | 'logFiles'>;

/** Every repository PostgreSQL implements, over one pool. */
export function postgresRepositories(pool: PostgresPool): PostgresRepositories {
  return {
    users: new PostgresUsersRepository(pool),
    signIns: new PostgresSignInsRepository(pool),
    mailOutbox: new PostgresMailOutboxRepository(pool),
    peopleRetention: new PostgresPeopleRetentionRepository(pool),
    sessionRetention: new PostgresSessionRetentionRepository(pool),
    logRetention: new PostgresLogRetentionRepository(pool),
    events: new PostgresEventsRepository(pool),
    builds: new PostgresBuildsRepository(pool),
    buildCopies: new PostgresBuildCopiesRepository(pool),
    webhookDeliveries: new PostgresWebhookDeliveriesRepository(pool),
    telemetry: new PostgresTelemetryRepository(pool),
    sessionHistory: new PostgresSessionHistoryRepository(pool),
    sessionDimensions: new PostgresSessionDimensionsRepository(pool),
    sessionDaily: new PostgresSessionDailyRepository(pool),
    accessFacts: new PostgresAccessFactsRepository(pool),
    logFiles: new PostgresLogFilesRepository(pool),
  };
}
