import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { SqliteBuildsRepository, type BuildRecord } from './builds';
import { seedProject, seedUser } from './repository-test-db';

let dir: string;
let db: Db;
let builds: SqliteBuildsRepository;

const build = (uploadId: string, projectId: string, createdAt: number, extra: Partial<Omit<BuildRecord, 'live' | 'manifest' | 'archive'>> = {}): Omit<BuildRecord, 'live' | 'manifest' | 'archive'> => ({
  uploadId,
  projectId,
  fileUrl: undefined,
  status: 'pending',
  objection: undefined,
  autoRelease: false,
  createdAt,
  updatedAt: createdAt,
  ...extra,
});

const setLive = (projectId: string, uploadId: string | null) =>
  db.prepare('UPDATE projects SET live_upload_id = ? WHERE id = ?').run(uploadId, projectId);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-builds-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  builds = new SqliteBuildsRepository(db);
  seedUser(db);
  seedProject(db, 'prj_1', { name: 'one' });
  seedProject(db, 'prj_2', { name: 'two' });
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SqliteBuildsRepository', () => {
  it('lists a project\'s builds newest first, round-tripping every field', () => {
    const old = build('upl_old', 'prj_1', 100, { fileUrl: 'https://files.example.com/a.zip', autoRelease: true, objection: 'too big', status: 'Reject', updatedAt: 150 });
    const mid = build('upl_mid', 'prj_1', 200);
    const recent = build('upl_new', 'prj_1', 300);
    for (const b of [mid, old, recent]) builds.insert(b);
    builds.insert(build('upl_other', 'prj_2', 250));
    expect(builds.listByProject('prj_1')).toEqual([recent, mid, old].map((b) => ({ ...b, live: false })));
    expect(builds.listByProject('prj_none')).toEqual([]);
  });

  it('orders builds created at the same time by upload id, descending', () => {
    builds.insert(build('upl_a', 'prj_1', 100));
    builds.insert(build('upl_c', 'prj_1', 100));
    builds.insert(build('upl_b', 'prj_1', 100));
    expect(builds.listByProject('prj_1').map((b) => b.uploadId)).toEqual(['upl_c', 'upl_b', 'upl_a']);
  });

  it('marks exactly the project\'s live build as live', () => {
    builds.insert(build('upl_1', 'prj_1', 100));
    builds.insert(build('upl_2', 'prj_1', 200));
    builds.insert(build('upl_3', 'prj_2', 300));
    setLive('prj_1', 'upl_1');
    expect(builds.listByProject('prj_1').map((b) => [b.uploadId, b.live])).toEqual([
      ['upl_2', false],
      ['upl_1', true],
    ]);
    // Another project's live build does not mark this project's builds.
    setLive('prj_2', 'upl_2');
    expect(builds.listByProject('prj_2').map((b) => [b.uploadId, b.live])).toEqual([['upl_3', false]]);

    setLive('prj_1', 'upl_2');
    expect(builds.listByProject('prj_1').map((b) => [b.uploadId, b.live])).toEqual([
      ['upl_2', true],
      ['upl_1', false],
    ]);
    setLive('prj_1', null);
    expect(builds.listByProject('prj_1').every((b) => !b.live)).toBe(true);
  });

  it('moves a status only from the status the caller read, stamping updated_at and the objection', () => {
    builds.insert(build('upl_1', 'prj_1', 100));
    expect(builds.moveStatus('upl_1', 'Ready', 'Distributing to Servers', undefined, 200)).toBe(false);
    expect(builds.findById('upl_1')).toMatchObject({ status: 'pending', updatedAt: 100 });
    expect(builds.moveStatus('upl_1', 'pending', 'Downloading Files', undefined, 200)).toBe(true);
    expect(builds.moveStatus('upl_1', 'Downloading Files', 'Download Failed', 'expired URL', 300)).toBe(true);
    expect(builds.findById('upl_1')).toMatchObject({ status: 'Download Failed', objection: 'expired URL', updatedAt: 300 });
    expect(builds.moveStatus('upl_none', 'pending', 'Downloading Files', undefined, 400)).toBe(false);
  });

  it('refuses a build of an unknown project and a duplicate upload id', () => {
    expect(() => builds.insert(build('upl_x', 'prj_none', 1))).toThrow(/FOREIGN KEY/);
    builds.insert(build('upl_1', 'prj_1', 1));
    expect(() => builds.insert(build('upl_1', 'prj_2', 2))).toThrow(/UNIQUE|PRIMARY/);
  });

  it('keeps the manifest and the archive the pipeline records', () => {
    builds.insert(build('upl_1', 'prj_1', 100));
    expect(builds.findById('upl_1')).not.toHaveProperty('manifest');
    expect(builds.findById('upl_1')).not.toHaveProperty('archive');
    const manifest = { platform: 'linux' as const, projectName: 'Demo', executable: 'Demo/Binaries/Linux/Demo-Linux-Shipping', baseArgs: ['Demo'], fileCount: 4, totalBytes: 1234 };
    builds.recordManifest('upl_1', manifest);
    builds.recordArchive('upl_1', { sha256: 'a'.repeat(64), bytes: 999 });
    expect(builds.findById('upl_1')).toMatchObject({ manifest, archive: { sha256: 'a'.repeat(64), bytes: 999 } });
    expect(builds.listByProject('prj_1')[0]).toMatchObject({ manifest, archive: { sha256: 'a'.repeat(64), bytes: 999 } });
  });

  it('lists the builds the pipeline has not finished with, oldest first', () => {
    builds.insert(build('upl_saving', 'prj_2', 400, { status: 'Saving to Repository' }));
    builds.insert(build('upl_pending', 'prj_1', 100));
    builds.insert(build('upl_down', 'prj_1', 200, { status: 'Downloading Files' }));
    builds.insert(build('upl_scan', 'prj_1', 300, { status: 'Extracting & Scanning' }));
    for (const [id, status] of [['upl_ready', 'Ready'], ['upl_dist', 'Distributing to Servers'], ['upl_ok', 'Approved'], ['upl_rej', 'Reject'], ['upl_fail', 'Download Failed']] as const) {
      builds.insert(build(id, 'prj_1', 50, { status }));
    }
    expect(builds.listUnfinished().map((b) => b.uploadId)).toEqual(['upl_pending', 'upl_down', 'upl_scan', 'upl_saving']);
  });
});
