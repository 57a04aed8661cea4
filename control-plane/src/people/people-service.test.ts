// PeopleService over a real SQLite file on a manual clock: links that work once and expire, sign-ins
// that expire when idle or old, throttling per account and per network, sign-out everywhere, and
// answers that never tell whether an address has an account. Mail is recorded here; the flow
// through a real SMTP server is test/integration/dashboard-people.test.ts.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { AccountService } from '../accounts/account-service';
import { EventLog } from '../events/event-log';
import { randomIds } from '../lib/ids';
import { SqliteEventsRepository, type EventsRepository } from '../repositories/events';
import { SqliteProjectsRepository } from '../repositories/projects';
import { openRepositoryTestDb, type RepositoryTestDb } from '../repositories/repository-test-db';
import { SqliteSignInsRepository, type SignInsRepository } from '../repositories/sign-ins';
import { SqliteUsersRepository, type UsersRepository } from '../repositories/users';
import { promised } from '../store/promised';
import type { OutgoingMail } from '../mail/mail-delivery';
import { INVITATION_TTL_MS, PASSWORD_RESET_TTL_MS, PeopleService, RESET_REQUESTS, SESSION_IDLE_MS, SESSION_MAX_MS } from './people-service';
import { ACCOUNT_FAILURES, ADDRESS_FAILURES } from './sign-in-throttle';

const PASSWORD = 'correct horse battery';
const NETWORK = '198.51.100.7';

let store: RepositoryTestDb;
let clock: ManualClock;
let mails: OutgoingMail[];
let people: PeopleService;

beforeEach(() => {
  store = openRepositoryTestDb('pf-people-');
  clock = new ManualClock();
  mails = [];
  const log = pino({ level: 'silent' });
  const users = promised<UsersRepository>(new SqliteUsersRepository(store.db));
  const events = new EventLog(promised<EventsRepository>(new SqliteEventsRepository(store.db)), clock, log);
  people = new PeopleService({
    users,
    signIns: promised<SignInsRepository>(new SqliteSignInsRepository(store.db)),
    accounts: new AccountService(users, new SqliteProjectsRepository(store.db), events, clock, randomIds),
    mail: { send: (mail) => Promise.resolve(mails.push(mail)) },
    events,
    clock,
    log,
    dashboardUrl: () => 'https://pixelfleet.test/dashboard',
  });
});

afterEach(() => store.remove());

/** The token of the last link mailed, of that page. */
function lastLink(page: 'set-password' | 'reset-password'): string {
  return linkIn(mails.at(-1), page);
}

/** The token of the mail's link to that page. */
function linkIn(mail: OutgoingMail | undefined, page: 'set-password' | 'reset-password'): string {
  const match = new RegExp(`https://pixelfleet\\.test/dashboard/${page}#token=([A-Za-z0-9_-]+)`).exec(mail?.text ?? '');
  if (match === null) throw new Error(`no ${page} link in the mail`);
  return match[1]!;
}

async function invitedWithPassword(email = 'ada@example.com'): Promise<string> {
  const { user } = await people.invite(email);
  await people.setPasswordWithLink(lastLink('set-password'), 'invitation', PASSWORD);
  return user.userId;
}

describe('invitations', () => {
  it('makes the user and mails a link that sets the password once', async () => {
    const invited = await people.invite('ada@example.com');
    expect(invited).toMatchObject({ created: true, invited: true, user: { email: 'ada@example.com' } });
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: 'ada@example.com', subject: 'Your Pixelfleet account' });
    const token = lastLink('set-password');
    expect(token).toMatch(/^pfi_/);

    await expect(people.setPasswordWithLink(token, 'invitation', 'short')).rejects.toMatchObject({ kind: 'invalid', message: 'the password must have at least 12 characters' });
    // A refused password leaves the link working.
    expect(await people.setPasswordWithLink(token, 'invitation', PASSWORD)).toMatchObject({ userId: invited.user.userId });
    await expect(people.setPasswordWithLink(token, 'invitation', PASSWORD)).rejects.toMatchObject({ kind: 'not_found' });
    expect(await people.signIn('ada@example.com', PASSWORD, NETWORK)).toMatchObject({ kind: 'signedIn' });
    // Someone with a password gets no new invitation.
    expect(await people.invite('ada@example.com')).toMatchObject({ created: false, invited: false });
    expect(mails).toHaveLength(1);
  });

  it('expires after 72 hours, and a newer invitation replaces the older link', async () => {
    await people.invite('ada@example.com');
    const first = lastLink('set-password');
    await people.invite('ada@example.com');
    const second = lastLink('set-password');
    await expect(people.setPasswordWithLink(first, 'invitation', PASSWORD)).rejects.toMatchObject({ kind: 'not_found' });
    clock.advance(INVITATION_TTL_MS);
    await expect(people.setPasswordWithLink(second, 'invitation', PASSWORD)).rejects.toMatchObject({ kind: 'not_found' });
    expect(INVITATION_TTL_MS).toBe(72 * 3_600_000);
  });

  it('two invitations of a new address at once make one user, and only the link mailed last works', async () => {
    const [first, second] = await Promise.all([people.invite('ada@example.com'), people.invite('Ada@example.com')]);
    expect(second.user.userId).toBe(first.user.userId);
    expect([first.created, second.created]).toEqual([true, false]);
    expect(mails).toHaveLength(2);
    await expect(people.setPasswordWithLink(linkIn(mails[0], 'set-password'), 'invitation', PASSWORD)).rejects.toMatchObject({ kind: 'not_found' });
    expect(await people.setPasswordWithLink(linkIn(mails[1], 'set-password'), 'invitation', PASSWORD)).toMatchObject({ userId: first.user.userId });
  });

  it('an invitation link does not reset a password, nor a reset link accept an invitation', async () => {
    await people.invite('ada@example.com');
    await expect(people.setPasswordWithLink(lastLink('set-password'), 'passwordReset', PASSWORD)).rejects.toMatchObject({ kind: 'not_found' });
    await expect(people.setPasswordWithLink('pfi_forged', 'invitation', PASSWORD)).rejects.toMatchObject({ kind: 'not_found' });
  });
});

describe('sign-in', () => {
  it('is refused alike for a wrong password, an unknown address and a person with no password yet', async () => {
    await invitedWithPassword();
    await people.invite('bob@example.com');
    const outcomes = [
      await people.signIn('ada@example.com', 'wrong password here', NETWORK),
      await people.signIn('nobody@example.com', PASSWORD, NETWORK),
      await people.signIn('bob@example.com', PASSWORD, NETWORK),
    ];
    expect(outcomes).toEqual([{ kind: 'refused' }, { kind: 'refused' }, { kind: 'refused' }]);
  });

  it('is throttled per account after five failures (one more a minute), whatever the network, and says how long to wait', async () => {
    await invitedWithPassword();
    for (let i = 0; i < ACCOUNT_FAILURES.burst; i += 1) expect(await people.signIn('ada@example.com', 'wrong password here', `203.0.113.${i}`)).toEqual({ kind: 'refused' });
    // Even the right password is not checked now.
    expect(await people.signIn('ADA@example.com', PASSWORD, '203.0.113.99')).toEqual({ kind: 'throttled', retryAfterSeconds: 60 });
    clock.advance(59_000);
    expect(await people.signIn('ada@example.com', PASSWORD, NETWORK)).toEqual({ kind: 'throttled', retryAfterSeconds: 1 });
    clock.advance(1_000);
    expect(await people.signIn('ada@example.com', PASSWORD, NETWORK)).toMatchObject({ kind: 'signedIn' });
    // Another account is not held up by this one's failures.
    await invitedWithPassword('bob@example.com');
    expect(await people.signIn('bob@example.com', PASSWORD, '203.0.113.0')).toMatchObject({ kind: 'signedIn' });
  });

  it('is throttled per network across accounts after twenty failures', async () => {
    for (let i = 0; i < ADDRESS_FAILURES.burst; i += 1) expect(await people.signIn(`guess${i}@example.com`, PASSWORD, NETWORK)).toEqual({ kind: 'refused' });
    expect(await people.signIn('another@example.com', PASSWORD, NETWORK)).toEqual({ kind: 'throttled', retryAfterSeconds: 6 });
    expect(await people.signIn('another@example.com', PASSWORD, '198.51.100.8')).toEqual({ kind: 'refused' });
  });
});

describe('dashboard sessions', () => {
  it('live until idle for 24 h or 14 days old, whichever comes first; sign-out ends one', async () => {
    const userId = await invitedWithPassword();
    const signedIn = await people.signIn('ada@example.com', PASSWORD, NETWORK);
    if (signedIn.kind !== 'signedIn') throw new Error('not signed in');
    expect(signedIn.token).toMatch(/^pfs_/);
    expect(signedIn.expiresAt).toBe(clock.now() + SESSION_MAX_MS);
    expect((await people.userOfSession(signedIn.token))?.userId).toBe(userId);
    // Idle just short of the limit, then used: it lives on.
    clock.advance(SESSION_IDLE_MS - 1);
    expect((await people.userOfSession(signedIn.token))?.userId).toBe(userId);
    clock.advance(SESSION_IDLE_MS);
    expect(await people.userOfSession(signedIn.token)).toBeUndefined();

    // Used every 12 h, it still ends 14 days after it began.
    const again = await people.signIn('ada@example.com', PASSWORD, NETWORK);
    if (again.kind !== 'signedIn') throw new Error('not signed in');
    const start = clock.now();
    while (clock.now() - start + 12 * 3_600_000 < SESSION_MAX_MS) {
      clock.advance(12 * 3_600_000);
      expect((await people.userOfSession(again.token))?.userId).toBe(userId);
    }
    clock.advance(SESSION_MAX_MS - (clock.now() - start));
    expect(await people.userOfSession(again.token)).toBeUndefined();

    const third = await people.signIn('ada@example.com', PASSWORD, NETWORK);
    if (third.kind !== 'signedIn') throw new Error('not signed in');
    await people.signOut(third.token);
    expect(await people.userOfSession(third.token)).toBeUndefined();
    expect(await people.userOfSession('pfs_unknown')).toBeUndefined();
  });

  it('a password change keeps this sign-in and ends the others; a reset ends them all', async () => {
    await invitedWithPassword();
    const here = await people.signIn('ada@example.com', PASSWORD, NETWORK);
    const elsewhere = await people.signIn('ada@example.com', PASSWORD, '203.0.113.5');
    if (here.kind !== 'signedIn' || elsewhere.kind !== 'signedIn') throw new Error('not signed in');
    await expect(people.changePassword(here.token, 'not the password', 'a brand new password')).rejects.toMatchObject({ message: 'the current password is not right' });
    await people.changePassword(here.token, PASSWORD, 'a brand new password');
    expect(await people.userOfSession(here.token)).toBeDefined();
    expect(await people.userOfSession(elsewhere.token)).toBeUndefined();
    expect(await people.signIn('ada@example.com', PASSWORD, NETWORK)).toEqual({ kind: 'refused' });

    await people.requestPasswordReset('ada@example.com', NETWORK);
    expect(mails.at(-1)).toMatchObject({ to: 'ada@example.com', subject: 'Reset your Pixelfleet password' });
    await people.setPasswordWithLink(lastLink('reset-password'), 'passwordReset', 'the third password');
    expect(await people.userOfSession(here.token)).toBeUndefined();
    expect(await people.signIn('ada@example.com', 'the third password', NETWORK)).toMatchObject({ kind: 'signedIn' });
  });
});

describe('password reset', () => {
  it('mails an account only, expires after an hour, and mails one address three times, then once every ten minutes', async () => {
    await invitedWithPassword();
    const before = mails.length;
    await people.requestPasswordReset('nobody@example.com', NETWORK);
    expect(mails).toHaveLength(before);

    await people.requestPasswordReset('ada@example.com', NETWORK);
    clock.advance(PASSWORD_RESET_TTL_MS);
    await expect(people.setPasswordWithLink(lastLink('reset-password'), 'passwordReset', 'the third password')).rejects.toMatchObject({ kind: 'not_found' });
    // Three back to back (the bucket refilled in the hour), a fourth not; ten minutes later, one more.
    for (let i = 0; i < 4; i += 1) await people.requestPasswordReset('ada@example.com', `198.51.100.${i}`);
    expect(mails).toHaveLength(before + 4);
    clock.advance(600_000);
    await people.requestPasswordReset('ada@example.com', NETWORK);
    await people.requestPasswordReset('ada@example.com', NETWORK);
    expect(mails).toHaveLength(before + 5);
  });

  it('answers a network that asks too often with the wait, for any address, known or not', async () => {
    const asked = (email: string) => people.requestPasswordReset(email, '192.0.2.0');
    for (let i = 0; i < RESET_REQUESTS.burst; i += 1) expect(await asked(i % 2 === 0 ? 'nobody@example.com' : 'someone@example.com')).toEqual({ kind: 'accepted' });
    expect(await asked('nobody@example.com')).toEqual({ kind: 'throttled', retryAfterSeconds: 60 });
    // Another network is not held back.
    expect(await people.requestPasswordReset('nobody@example.com', '192.0.2.1')).toEqual({ kind: 'accepted' });
    clock.advance(60_000);
    expect(await asked('nobody@example.com')).toEqual({ kind: 'accepted' });
  });
});
