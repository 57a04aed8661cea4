import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { sha256Hex } from '../lib/secrets';
import { SqliteUsersRepository } from './users';

let dir: string;
let db: Db;
let users: SqliteUsersRepository;

const alice = { userId: 'usr_alice', email: 'alice@example.com', createdAt: 1_000 };
const bob = { userId: 'usr_bob', email: 'bob@example.com', createdAt: 2_000 };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-users-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  users = new SqliteUsersRepository(db);
  users.insert(alice);
  users.insert(bob);
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const liveKeys = (userId: string) =>
  (db.prepare('SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ? AND revoked_at IS NULL').get(userId) as { n: number }).n;

describe('SqliteUsersRepository', () => {
  it('finds users by id and by email (case-insensitively)', () => {
    expect(users.findById('usr_alice')).toEqual(alice);
    expect(users.findByEmail('alice@example.com')).toEqual(alice);
    expect(users.findByEmail('ALICE@Example.COM')).toEqual(alice);
    expect(users.findById('usr_nobody')).toBeUndefined();
    expect(users.findByEmail('nobody@example.com')).toBeUndefined();
  });

  it('refuses a second user with the same email', () => {
    expect(() => users.insert({ userId: 'usr_other', email: 'Alice@example.com', createdAt: 3 })).toThrow(/UNIQUE/);
  });

  it('has no live key before one is issued', () => {
    expect(users.liveKeyHash('usr_alice')).toBeUndefined();
    expect(users.findUserByLiveKeyHash(sha256Hex('anything'))).toBeUndefined();
  });

  it('stores a key digest that then finds its user', () => {
    const h1 = sha256Hex('pfk_key_one');
    users.replaceKey('usr_alice', h1, 10);
    expect(users.liveKeyHash('usr_alice')).toBe(h1);
    expect(users.findUserByLiveKeyHash(h1)).toEqual(alice);
    expect(users.liveKeyHash('usr_bob')).toBeUndefined();
  });

  it('replaceKey revokes the previous key: the old digest no longer finds the user', () => {
    const h1 = sha256Hex('pfk_key_one');
    const h2 = sha256Hex('pfk_key_two');
    users.replaceKey('usr_alice', h1, 10);
    users.replaceKey('usr_alice', h2, 20);
    expect(users.findUserByLiveKeyHash(h1)).toBeUndefined();
    expect(users.findUserByLiveKeyHash(h2)).toEqual(alice);
    expect(users.liveKeyHash('usr_alice')).toBe(h2);
    expect(liveKeys('usr_alice')).toBe(1);
    const old = db.prepare('SELECT revoked_at FROM api_keys WHERE key_hash = ?').get(h1) as { revoked_at: number | null };
    expect(old.revoked_at).toBe(20);
  });

  it('keeps one live key per user over many rotations, without touching other users', () => {
    users.replaceKey('usr_bob', sha256Hex('bob-key'), 1);
    for (let i = 0; i < 5; i++) users.replaceKey('usr_alice', sha256Hex(`alice-${i}`), 100 + i);
    expect(liveKeys('usr_alice')).toBe(1);
    expect(users.liveKeyHash('usr_alice')).toBe(sha256Hex('alice-4'));
    expect(users.findUserByLiveKeyHash(sha256Hex('bob-key'))).toEqual(bob);
    expect(liveKeys('usr_bob')).toBe(1);
  });

  it('is atomic: when storing the new key fails, the old key stays live', () => {
    const h1 = sha256Hex('pfk_alice');
    const hBob = sha256Hex('pfk_bob');
    users.replaceKey('usr_alice', h1, 10);
    users.replaceKey('usr_bob', hBob, 10);
    // Re-using Bob's digest violates key_hash UNIQUE after Alice's key was revoked in the same transaction.
    expect(() => users.replaceKey('usr_alice', hBob, 20)).toThrow(/UNIQUE/);
    expect(users.findUserByLiveKeyHash(h1)).toEqual(alice);
    expect(users.liveKeyHash('usr_alice')).toBe(h1);
    const row = db.prepare('SELECT revoked_at FROM api_keys WHERE key_hash = ?').get(h1) as { revoked_at: number | null };
    expect(row.revoked_at).toBeNull();
  });

  it('refuses a key for an unknown user', () => {
    expect(() => users.replaceKey('usr_nobody', sha256Hex('k'), 1)).toThrow(/FOREIGN KEY/);
  });
});
