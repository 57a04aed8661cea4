// The scale-out store: PostgreSQL, reached through a pool, for several control planes on one
// database (issue 27). Its repositories are written one by one beside their SQLite twins; the
// store opens from `database.url` once every repository has its PostgreSQL implementation.
import type { PostgresPool } from '../db/postgres-database';
import { PostgresEventsRepository } from '../repositories/postgres/events';
import { PostgresLogRetentionRepository } from '../repositories/postgres/log-retention';
import { PostgresMailOutboxRepository } from '../repositories/postgres/mail-outbox';
import { PostgresPeopleRetentionRepository } from '../repositories/postgres/people-retention';
import { PostgresSessionRetentionRepository } from '../repositories/postgres/session-retention';
import { PostgresSignInsRepository } from '../repositories/postgres/sign-ins';
import { PostgresUsersRepository } from '../repositories/postgres/users';
import type { Repositories } from './store';

/** The repositories PostgreSQL implements so far. */
export type PostgresRepositories = Pick<Repositories, 'users' | 'signIns' | 'mailOutbox' | 'peopleRetention' | 'sessionRetention' | 'logRetention' | 'events'>;

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
  };
}
