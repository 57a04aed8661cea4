import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { SqliteProjectsRepository, type Project } from './projects';
import { seedUser } from './repository-test-db';
import { DEFAULT_PROJECT_SETTINGS } from '../projects/project-settings';

let dir: string;
let db: Db;
let projects: SqliteProjectsRepository;

const project = (projectId: string, ownerUserId: string, createdAt: number, extra: Partial<Project> = {}): Project => ({
  projectId,
  ownerUserId,
  name: `Project ${projectId}`,
  region: 'europe',
  enabled: true,
  subscriptionStatus: 'active',
  liveUploadId: undefined,
  settings: { ...DEFAULT_PROJECT_SETTINGS, launchArgs: [] },
  createdAt,
  ...extra,
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-projects-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  projects = new SqliteProjectsRepository(db);
  seedUser(db, 'usr_1', 'one@example.com');
  seedUser(db, 'usr_2', 'two@example.com');
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SqliteProjectsRepository', () => {
  it('round-trips a project and lists an owner\'s projects oldest first', () => {
    const b = project('prj_b', 'usr_1', 200, { enabled: false, region: 'asia-pacific' });
    const a = project('prj_a', 'usr_1', 100);
    const other = project('prj_c', 'usr_2', 50);
    for (const p of [b, a, other]) projects.insert(p);
    expect(projects.findById('prj_b')).toEqual(b);
    expect(projects.findById('prj_none')).toBeUndefined();
    expect(projects.listByOwner('usr_1')).toEqual([a, b]);
    expect(projects.listByOwner('usr_2')).toEqual([other]);
  });

  it('reads the live upload id set on the row', () => {
    projects.insert(project('prj_a', 'usr_1', 1));
    db.prepare("UPDATE projects SET live_upload_id = 'upl_9' WHERE id = 'prj_a'").run();
    expect(projects.findById('prj_a')?.liveUploadId).toBe('upl_9');
  });

  it('refuses an unknown region and an unknown owner', () => {
    expect(() => projects.insert(project('prj_x', 'usr_1', 1, { region: 'mars' as Project['region'] }))).toThrow(/CHECK/);
    expect(() => projects.insert(project('prj_y', 'usr_none', 1))).toThrow(/FOREIGN KEY/);
  });

  it('changes the subscription status', () => {
    projects.insert(project('prj_a', 'usr_1', 1));
    projects.setSubscriptionStatus('prj_a', 'canceled');
    expect(projects.findById('prj_a')?.subscriptionStatus).toBe('canceled');
  });

  it('adds, changes and removes members', () => {
    projects.insert(project('prj_a', 'usr_1', 1));
    expect(projects.memberAccess('prj_a', 'usr_2')).toBeUndefined();
    projects.upsertMember('prj_a', 'usr_2', 'READONLY', 10);
    expect(projects.memberAccess('prj_a', 'usr_2')).toBe('READONLY');
    projects.upsertMember('prj_a', 'usr_2', 'FULL', 20);
    expect(projects.memberAccess('prj_a', 'usr_2')).toBe('FULL');
    expect(db.prepare('SELECT COUNT(*) AS n FROM project_members').get()).toEqual({ n: 1 });
    expect(projects.removeMember('prj_a', 'usr_2')).toBe(true);
    expect(projects.memberAccess('prj_a', 'usr_2')).toBeUndefined();
    expect(projects.removeMember('prj_a', 'usr_2')).toBe(false);
  });
});
