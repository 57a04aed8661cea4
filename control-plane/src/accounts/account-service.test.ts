// AccountService over a real SQLite file: an address taken by a request running at the same time
// is the same 409 conflict as one taken before (the table's unique address decides, not a 500).
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { EventLog } from '../events/event-log';
import { randomIds } from '../lib/ids';
import { SqliteEventsRepository, type EventsRepository } from '../repositories/events';
import { SqliteProjectsRepository } from '../repositories/projects';
import { openRepositoryTestDb, type RepositoryTestDb } from '../repositories/repository-test-db';
import { SqliteUsersRepository, type UsersRepository } from '../repositories/users';
import { promised } from '../store/promised';
import { AccountService } from './account-service';

let store: RepositoryTestDb;
let accounts: AccountService;

beforeEach(() => {
  store = openRepositoryTestDb('pf-accounts-');
  const clock = new ManualClock();
  const events = new EventLog(promised<EventsRepository>(new SqliteEventsRepository(store.db)), clock, pino({ level: 'silent' }));
  accounts = new AccountService(promised<UsersRepository>(new SqliteUsersRepository(store.db)), new SqliteProjectsRepository(store.db), events, clock, randomIds);
});

afterEach(() => store.remove());

describe('createUser', () => {
  it('two users with one address at once: the first is made, the second is the conflict a later one gets', async () => {
    const [first, second] = await Promise.allSettled([accounts.createUser('ada@example.com'), accounts.createUser('ADA@example.com')]);
    expect(first).toMatchObject({ status: 'fulfilled', value: { email: 'ada@example.com' } });
    expect(second).toMatchObject({ status: 'rejected', reason: { kind: 'conflict', message: 'a user with email ADA@example.com already exists' } });
    await expect(accounts.createUser('Ada@example.com')).rejects.toMatchObject({ kind: 'conflict', message: 'a user with email Ada@example.com already exists' });
    expect((store.db.prepare("SELECT COUNT(*) AS n FROM users WHERE email = 'ada@example.com'").get() as { n: number }).n).toBe(1);
  });
});
