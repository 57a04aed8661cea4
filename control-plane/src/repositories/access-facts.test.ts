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

  it('sees a rotated key, a membership change and a subscription change at once', () => {
    users.replaceKey('usr_owner', 'digest-2', 2);
    expect(facts.read('usr_owner', 'prj_1').key.liveKeyHash).toBe('digest-2');
    projects.upsertMember('prj_1', 'usr_member', 'READONLY', 2);
    expect(facts.read('usr_member', 'prj_1').project?.memberAccess).toBe('READONLY');
    projects.removeMember('prj_1', 'usr_member');
    expect(facts.read('usr_member', 'prj_1').project?.memberAccess).toBeUndefined();
    projects.setSubscriptionStatus('prj_1', 'past_due');
    expect(facts.read('usr_owner', 'prj_1').project?.subscriptionStatus).toBe('past_due');
  });
});
