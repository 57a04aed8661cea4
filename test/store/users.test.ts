// UsersRepository held to one contract in both stores, through its asynchronous interface only:
// emails compare case-insensitively (ASCII letters, as SQLite's NOCASE), one user per email, and
// each user has at most one live API key, even when two rotations race.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

const alice = { userId: 'usr_alice', email: 'alice@example.com', createdAt: 1_000 };
const bob = { userId: 'usr_bob', email: 'bob@example.com', createdAt: 2_000 };

describe.each(cases)('UsersRepository ($name)', (store) => {
  let db: OpenedStore;

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert(alice);
    await db.repositories.users.insert(bob);
  });

  afterEach(async () => {
    await db.close();
  });

  const users = () => db.repositories.users;

  const liveKeys = async (userId: string) =>
    (await db.rows<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ? AND revoked_at IS NULL', [userId]))[0]?.n;

  const revokedAt = async (keyHash: string) => (await db.rows<{ revoked_at: number | null }>('SELECT revoked_at FROM api_keys WHERE key_hash = ?', [keyHash]))[0]?.revoked_at;

  it('finds users by id and by email (case-insensitively)', async () => {
    expect(await users().findById('usr_alice')).toEqual(alice);
    expect(await users().findByEmail('alice@example.com')).toEqual(alice);
    expect(await users().findByEmail('ALICE@Example.COM')).toEqual(alice);
    expect(await users().findById('usr_nobody')).toBeUndefined();
    expect(await users().findByEmail('nobody@example.com')).toBeUndefined();
  });

  it('keeps the email as it was written', async () => {
    await users().insert({ userId: 'usr_carol', email: 'Carol@Example.com', createdAt: 3_000 });
    expect(await users().findByEmail('carol@example.com')).toEqual({ userId: 'usr_carol', email: 'Carol@Example.com', createdAt: 3_000 });
  });

  it('folds ASCII letters only: non-ASCII letters of another case are another email', async () => {
    await users().insert({ userId: 'usr_elodie', email: 'élodie@example.com', createdAt: 3_000 });
    await users().insert({ userId: 'usr_elodie_upper', email: 'ÉLODIE@example.com', createdAt: 4_000 });
    expect((await users().findByEmail('élodie@EXAMPLE.com'))?.userId).toBe('usr_elodie');
    expect((await users().findByEmail('ÉLODIE@example.COM'))?.userId).toBe('usr_elodie_upper');
  });

  it('refuses a second user with the same email, whatever its case', async () => {
    await expect(users().insert({ userId: 'usr_other', email: 'Alice@example.com', createdAt: 3 })).rejects.toThrow();
    expect(await users().findById('usr_other')).toBeUndefined();
    expect(await users().findByEmail('alice@example.com')).toEqual(alice);
  });

  it('refuses a second user with the same id', async () => {
    await expect(users().insert({ userId: 'usr_alice', email: 'someone@example.com', createdAt: 3 })).rejects.toThrow();
    expect(await users().findByEmail('someone@example.com')).toBeUndefined();
  });

  it('has no live key before one is issued', async () => {
    expect((await users().keyHashOf('usr_alice')).liveKeyHash).toBeUndefined();
    expect(await users().findUserByLiveKeyHash(sha256Hex('anything'))).toBeUndefined();
    expect(await users().keyHashOf('usr_alice')).toEqual({ exists: true, liveKeyHash: undefined });
  });

  it('keyHashOf tells an unknown user from a known one without a key', async () => {
    expect(await users().keyHashOf('usr_nobody')).toEqual({ exists: false, liveKeyHash: undefined });
  });

  it('stores a key digest that then finds its user', async () => {
    const h1 = sha256Hex('pfk_key_one');
    await users().replaceKey('usr_alice', h1, 10);
    expect((await users().keyHashOf('usr_alice')).liveKeyHash).toBe(h1);
    expect(await users().findUserByLiveKeyHash(h1)).toEqual(alice);
    expect(await users().keyHashOf('usr_alice')).toEqual({ exists: true, liveKeyHash: h1 });
    expect((await users().keyHashOf('usr_bob')).liveKeyHash).toBeUndefined();
  });

  it('replaceKey revokes the previous key: the old digest no longer finds the user', async () => {
    const h1 = sha256Hex('pfk_key_one');
    const h2 = sha256Hex('pfk_key_two');
    await users().replaceKey('usr_alice', h1, 10);
    await users().replaceKey('usr_alice', h2, 20);
    expect(await users().findUserByLiveKeyHash(h1)).toBeUndefined();
    expect(await users().findUserByLiveKeyHash(h2)).toEqual(alice);
    expect((await users().keyHashOf('usr_alice')).liveKeyHash).toBe(h2);
    expect(await users().keyHashOf('usr_alice')).toEqual({ exists: true, liveKeyHash: h2 });
    expect(await liveKeys('usr_alice')).toBe(1);
    expect(await revokedAt(h1)).toBe(20);
  });

  it('keeps one live key per user over many rotations, without touching other users', async () => {
    await users().replaceKey('usr_bob', sha256Hex('bob-key'), 1);
    for (let i = 0; i < 5; i++) await users().replaceKey('usr_alice', sha256Hex(`alice-${i}`), 100 + i);
    expect(await liveKeys('usr_alice')).toBe(1);
    expect((await users().keyHashOf('usr_alice')).liveKeyHash).toBe(sha256Hex('alice-4'));
    expect(await users().findUserByLiveKeyHash(sha256Hex('bob-key'))).toEqual(bob);
    expect(await liveKeys('usr_bob')).toBe(1);
  });

  it('two rotations at once leave exactly one live key, and neither fails', async () => {
    let previous = sha256Hex('pfk_first');
    await users().replaceKey('usr_alice', previous, 10);
    // Reads at once first, so that a pooled store has a connection open for each rotation and the
    // two transactions overlap, rather than the second waiting for a connection to be opened.
    await Promise.all([1, 2, 3, 4].map(() => users().keyHashOf('usr_alice')));
    // Several rounds: how two transactions interleave varies from one run to the next.
    for (let round = 1; round <= 5; round++) {
      const a = sha256Hex(`pfk_${round}_a`);
      const b = sha256Hex(`pfk_${round}_b`);
      const at = 10 + round;
      await Promise.all([users().replaceKey('usr_alice', a, at), users().replaceKey('usr_alice', b, at)]);
      expect(await liveKeys('usr_alice')).toBe(1);
      const live = ((await users().keyHashOf('usr_alice')).liveKeyHash) ?? 'no live key';
      expect([a, b]).toContain(live);
      expect(await users().findUserByLiveKeyHash(previous)).toBeUndefined();
      // The loser of the race was stored and then revoked by the winner, never lost.
      expect(await revokedAt(live === a ? b : a)).toBe(at);
      expect(await revokedAt(previous)).toBe(at);
      previous = live;
    }
  });

  it('is atomic: when storing the new key fails, the old key stays live', async () => {
    const h1 = sha256Hex('pfk_alice');
    const hBob = sha256Hex('pfk_bob');
    await users().replaceKey('usr_alice', h1, 10);
    await users().replaceKey('usr_bob', hBob, 10);
    // Re-using Bob's digest violates key_hash UNIQUE after Alice's key was revoked in the same transaction.
    await expect(users().replaceKey('usr_alice', hBob, 20)).rejects.toThrow();
    expect(await users().findUserByLiveKeyHash(h1)).toEqual(alice);
    expect((await users().keyHashOf('usr_alice')).liveKeyHash).toBe(h1);
    expect(await revokedAt(h1)).toBeNull();
    expect(await users().findUserByLiveKeyHash(hBob)).toEqual(bob);
  });

  it('refuses a key for an unknown user', async () => {
    await expect(users().replaceKey('usr_nobody', sha256Hex('k'), 1)).rejects.toThrow();
    expect(await users().findUserByLiveKeyHash(sha256Hex('k'))).toBeUndefined();
  });
});
