// The API's access facts against a real SQLite file: one row whatever exists, and every change
// (key rotation, membership, subscription) visible on the next read.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { DEFAULT_PROJECT_SETTINGS } from '../projects/project-settings';
import { SqliteProjectsRepository } from './projects';
import { SqliteUsersRepository } from './users';
import { SqliteAccessFactsRepository } from './access-facts';

let dir: string;
let db: Db;
let users: SqliteUsersRepository;
let projects: SqliteProjectsRepository;
let facts: SqliteAccessFactsRepository;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-access-facts-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  users = new SqliteUsersRepository(db);
  projects = new SqliteProjectsRepository(db);
  facts = new SqliteAccessFactsRepository(db);
  users.insert({ userId: 'usr_owner', email: 'owner@example.com', createdAt: 1 });
  users.insert({ userId: 'usr_member', email: 'member@example.com', createdAt: 1 });
  users.replaceKey('usr_owner', 'digest-1', 1);
  projects.insert({
    projectId: 'prj_1',
    ownerUserId: 'usr_owner',
    name: 'One',
    region: 'europe',
    enabled: true,
    subscriptionStatus: 'active',
    liveUploadId: undefined,
    settings: { ...DEFAULT_PROJECT_SETTINGS, launchArgs: [] },
    createdAt: 1,
  });
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SqliteAccessFactsRepository', () => {
  it('reads the user, their live key, the project and the membership in one row', () => {
    expect(facts.read('usr_owner', 'prj_1')).toEqual({
      key: { exists: true, liveKeyHash: 'digest-1' },
      project: { ownerUserId: 'usr_owner', subscriptionStatus: 'active', memberAccess: undefined },
    });
  });

  it('answers unknown users and projects with empty facts rather than no row', () => {
    expect(facts.read('usr_nobody', 'prj_none')).toEqual({ key: { exists: false, liveKeyHash: undefined }, project: undefined });
    expect(facts.read('usr_member', 'prj_1').key).toEqual({ exists: true, liveKeyHash: undefined });
    expect(facts.read('usr_nobody', 'prj_1').project?.ownerUserId).toBe('usr_owner');
  });

  it('sees a rotated key, a membership change and a subscription change at once, though it caches', () => {
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-1');
    expect(facts.read('usr_member', 'prj_1').project?.memberAccess).toBeUndefined();
    users.replaceKey('usr_owner', 'digest-2', 2);
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-2');
    projects.upsertMember('prj_1', 'usr_member', 'READONLY', 2);
    expect(facts.read('usr_member', 'prj_1').project?.memberAccess).toBe('READONLY');
    projects.removeMember('prj_1', 'usr_member');
    expect(facts.read('usr_member', 'prj_1').project?.memberAccess).toBeUndefined();
    projects.setSubscriptionStatus('prj_1', 'past_due');
    expect(facts.read('usr_owner', 'prj_1').project?.subscriptionStatus).toBe('past_due');
  });

  it('drops what it cached on any write to a fact table on its connection, plain SQL included, for every instance', () => {
    const other = new SqliteAccessFactsRepository(db);
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-1');
    expect(other.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-1');
    db.prepare('UPDATE api_keys SET revoked_at = 5 WHERE user_id = ?').run('usr_owner');
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBeUndefined();
    expect(other.read('usr_owner', 'prj_1').key.liveKeyHash).toBeUndefined();
    db.prepare('DELETE FROM projects WHERE id = ?').run('prj_1');
    expect(facts.read('usr_owner', 'prj_1').project).toBeUndefined();
  });

  it('serves a repeated read from memory: a write by another connection (not the control plane) is not seen', () => {
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-1');
    const outsider = openDatabase(join(dir, 'cp.sqlite'));
    try {
      outsider.prepare('UPDATE api_keys SET key_hash = ? WHERE user_id = ?').run('digest-outside', 'usr_owner');
    } finally {
      outsider.close();
    }
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-1');
    users.insert({ userId: 'usr_new', email: 'new@example.com', createdAt: 3 }); // any write of ours re-reads
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-outside');
  });

  it('keeps only pairs that exist: made-up ids are read afresh each time', () => {
    expect(facts.read('usr_later', 'prj_1').key.exists).toBe(false);
    const outsider = openDatabase(join(dir, 'cp.sqlite'));
    try {
      outsider.prepare('INSERT INTO users (id, email, created_at) VALUES (?, ?, ?)').run('usr_later', 'later@example.com', 4);
    } finally {
      outsider.close();
    }
    expect(facts.read('usr_later', 'prj_1').key.exists).toBe(true); // not cached while it did not exist
  });

  it('hands out facts that cannot be changed by a caller', () => {
    const read = facts.read('usr_owner', 'prj_1');
    expect(Object.isFrozen(read) && Object.isFrozen(read.key) && Object.isFrozen(read.project)).toBe(true);
  });
});
