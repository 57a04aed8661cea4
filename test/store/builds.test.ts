// BuildsRepository held to one contract in both stores, through its asynchronous interface only:
// every field round-trips, lists are ordered as documented (ties by upload id, in byte order), the
// project's live build is marked, pages count the whole project, each insert and move records the
// stage it entered, and a status moves only from the status the caller read, also when moves race.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BuildRecord, BuildStatus } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

type NewBuild = Omit<BuildRecord, 'live' | 'manifest' | 'archive'>;

const build = (uploadId: string, projectId: string, createdAt: number, extra: Partial<NewBuild> = {}): NewBuild => ({
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

const manifest = {
  platform: 'linux' as const,
  projectName: 'Démo ✓',
  executable: 'Demo/Binaries/Linux/Demo-Linux-Shipping',
  baseArgs: ['Demo', '-RenderOffscreen'],
  fileCount: 4,
  totalBytes: 1234,
};

describe.each(cases)('BuildsRepository ($name)', (store) => {
  let db: OpenedStore;

  /** Runs one statement that changes rows; RETURNING so SQLite's probe, which reads rows, accepts it. */
  const write = (text: string, values: readonly unknown[]) => db.rows(`${text} RETURNING 1 AS done`, values);

  const setLive = (projectId: string, uploadId: string | null) => write('UPDATE projects SET live_upload_id = ? WHERE id = ?', [uploadId, projectId]);

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_1', email: 'u@example.com', createdAt: 1 });
    for (const [id, name] of [
      ['prj_1', 'one'],
      ['prj_2', 'two'],
    ]) {
      await write('INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES (?, ?, ?, ?, ?)', [id, 'usr_1', name, 'europe', 1]);
    }
  });

  afterEach(async () => {
    await db.close();
  });

  const builds = () => db.repositories.builds;

  describe('insert and the lists', () => {
    it("lists a project's builds newest first, round-tripping every field", async () => {
      const old = build('upl_old', 'prj_1', 100, { fileUrl: 'https://files.example.com/a.zip', autoRelease: true, objection: 'too big', status: 'Reject', updatedAt: 150 });
      const mid = build('upl_mid', 'prj_1', 200);
      const recent = build('upl_new', 'prj_1', 300);
      for (const b of [mid, old, recent]) await builds().insert(b);
      await builds().insert(build('upl_other', 'prj_2', 250));
      expect(await builds().listByProject('prj_1')).toEqual([recent, mid, old].map((b) => ({ ...b, live: false })));
      expect(await builds().listByProject('prj_none')).toEqual([]);
    });

    it('orders builds created at the same time by upload id, descending, in byte order', async () => {
      // Byte order puts upper case before lower case; a locale's order would not.
      for (const id of ['upl_a', 'upl_c', 'upl_B', 'upl_b']) await builds().insert(build(id, 'prj_1', 100));
      expect((await builds().listByProject('prj_1')).map((b) => b.uploadId)).toEqual(['upl_c', 'upl_b', 'upl_a', 'upl_B']);
    });

    it('finds a build by id, and nothing for an unknown id', async () => {
      const b = build('upl_1', 'prj_1', 100, { fileUrl: 'https://files.example.com/b.zip', autoRelease: true });
      await builds().insert(b);
      expect(await builds().findById('upl_1')).toEqual({ ...b, live: false });
      expect(await builds().findById('upl_none')).toBeUndefined();
    });

    it("marks exactly the project's live build as live", async () => {
      await builds().insert(build('upl_1', 'prj_1', 100));
      await builds().insert(build('upl_2', 'prj_1', 200));
      await builds().insert(build('upl_3', 'prj_2', 300));
      await setLive('prj_1', 'upl_1');
      expect((await builds().listByProject('prj_1')).map((b) => [b.uploadId, b.live])).toEqual([
        ['upl_2', false],
        ['upl_1', true],
      ]);
      expect((await builds().findById('upl_1'))?.live).toBe(true);
      expect((await builds().findById('upl_2'))?.live).toBe(false);
      // Another project's live build does not mark this project's builds.
      await setLive('prj_2', 'upl_2');
      expect((await builds().listByProject('prj_2')).map((b) => [b.uploadId, b.live])).toEqual([['upl_3', false]]);

      await setLive('prj_1', 'upl_2');
      expect((await builds().listByProject('prj_1')).map((b) => [b.uploadId, b.live])).toEqual([
        ['upl_2', true],
        ['upl_1', false],
      ]);
      await setLive('prj_1', null);
      expect((await builds().listByProject('prj_1')).every((b) => !b.live)).toBe(true);
      expect((await builds().findById('upl_2'))?.live).toBe(false);
    });

    it('refuses a build of an unknown project and a duplicate upload id, leaving no stage behind', async () => {
      await expect(builds().insert(build('upl_x', 'prj_none', 1))).rejects.toThrow(/foreign key/i);
      await builds().insert(build('upl_1', 'prj_1', 1));
      await expect(builds().insert(build('upl_1', 'prj_2', 2, { status: 'Ready' }))).rejects.toThrow(/unique|primary/i);
      expect(await builds().findById('upl_x')).toBeUndefined();
      expect(await builds().findById('upl_1')).toMatchObject({ projectId: 'prj_1', status: 'pending' });
      expect(Object.fromEntries(await builds().stagesOf(['upl_x', 'upl_1']))).toEqual({ upl_1: [{ status: 'pending', enteredAt: 1 }] });
    });

    it('keeps the manifest and the archive the pipeline records', async () => {
      await builds().insert(build('upl_1', 'prj_1', 100));
      expect(await builds().findById('upl_1')).not.toHaveProperty('manifest');
      expect(await builds().findById('upl_1')).not.toHaveProperty('archive');
      await builds().recordManifest('upl_1', manifest);
      expect(await builds().findById('upl_1')).not.toHaveProperty('archive');
      await builds().recordArchive('upl_1', { sha256: 'a'.repeat(64), bytes: 999 });
      const recorded = { manifest, archive: { sha256: 'a'.repeat(64), bytes: 999 } };
      expect(await builds().findById('upl_1')).toMatchObject(recorded);
      expect((await builds().listByProject('prj_1'))[0]).toMatchObject(recorded);
      expect((await builds().pageByProject('prj_1', 10, 0)).builds[0]).toMatchObject(recorded);
      expect((await builds().listUnfinished())[0]).toMatchObject(recorded);
      // An archive beyond 4 GiB keeps its exact size (a 64-bit column, read back as a number).
      await builds().recordArchive('upl_1', { sha256: 'b'.repeat(64), bytes: 2 ** 40 + 7 });
      expect((await builds().findById('upl_1'))?.archive).toEqual({ sha256: 'b'.repeat(64), bytes: 2 ** 40 + 7 });
    });

    it('lists the builds the pipeline has not finished with, oldest first (ties by upload id)', async () => {
      await builds().insert(build('upl_saving', 'prj_2', 400, { status: 'Saving to Repository' }));
      await builds().insert(build('upl_pending', 'prj_1', 100));
      await builds().insert(build('upl_down', 'prj_1', 200, { status: 'Downloading Files' }));
      await builds().insert(build('upl_scan', 'prj_1', 300, { status: 'Extracting & Scanning' }));
      await builds().insert(build('upl_a', 'prj_1', 300, { status: 'pending' }));
      for (const [id, status] of [
        ['upl_ready', 'Ready'],
        ['upl_dist', 'Distributing to Servers'],
        ['upl_ok', 'Approved'],
        ['upl_rej', 'Reject'],
        ['upl_fail', 'Download Failed'],
      ] as const) {
        await builds().insert(build(id, 'prj_1', 50, { status }));
      }
      expect((await builds().listUnfinished()).map((b) => b.uploadId)).toEqual(['upl_pending', 'upl_down', 'upl_a', 'upl_scan', 'upl_saving']);
    });

    it('lists the builds being distributed, oldest first (ties by upload id), with their live mark', async () => {
      await builds().insert(build('upl_late', 'prj_2', 300, { status: 'Distributing to Servers' }));
      await builds().insert(build('upl_b', 'prj_1', 100, { status: 'Distributing to Servers' }));
      await builds().insert(build('upl_a', 'prj_1', 100, { status: 'Distributing to Servers' }));
      for (const status of ['pending', 'Ready', 'Approved', 'Reject'] as const) await builds().insert(build(`upl_${status}`, 'prj_1', 50, { status }));
      await setLive('prj_2', 'upl_late');
      expect((await builds().listDistributing()).map((b) => [b.uploadId, b.live])).toEqual([
        ['upl_a', false],
        ['upl_b', false],
        ['upl_late', true],
      ]);
    });

    it('lists nothing unfinished or distributing in an empty database', async () => {
      expect(await builds().listUnfinished()).toEqual([]);
      expect(await builds().listDistributing()).toEqual([]);
      expect(await builds().countByStatus()).toEqual([]);
    });

    it('counts builds in each status, across projects', async () => {
      await builds().insert(build('upl_1', 'prj_1', 1));
      await builds().insert(build('upl_2', 'prj_2', 2));
      await builds().insert(build('upl_3', 'prj_1', 3, { status: 'Ready' }));
      await builds().insert(build('upl_4', 'prj_1', 4, { status: 'Download Failed' }));
      await builds().moveStatus('upl_4', 'Download Failed', 'Ready', undefined, 5);
      const counts = await builds().countByStatus();
      // No order is promised.
      expect([...counts].sort((x, y) => x.status.localeCompare(y.status))).toEqual([
        { status: 'pending', n: 2 },
        { status: 'Ready', n: 2 },
      ]);
    });
  });

  describe('pageByProject', () => {
    beforeEach(async () => {
      for (let i = 1; i <= 5; i++) await builds().insert(build(`upl_${i}`, 'prj_1', i * 100));
      await builds().insert(build('upl_other', 'prj_2', 1_000));
      await setLive('prj_1', 'upl_4');
    });

    it("answers one page of listByProject and how many builds the project has", async () => {
      const all = await builds().listByProject('prj_1');
      expect(all.map((b) => b.uploadId)).toEqual(['upl_5', 'upl_4', 'upl_3', 'upl_2', 'upl_1']);
      expect(await builds().pageByProject('prj_1', 2, 0)).toEqual({ total: 5, builds: all.slice(0, 2) });
      expect(await builds().pageByProject('prj_1', 2, 2)).toEqual({ total: 5, builds: all.slice(2, 4) });
      expect(await builds().pageByProject('prj_1', 2, 4)).toEqual({ total: 5, builds: all.slice(4) });
      expect(await builds().pageByProject('prj_1', 100, 0)).toEqual({ total: 5, builds: all });
      expect((await builds().pageByProject('prj_1', 2, 0)).builds.map((b) => b.live)).toEqual([false, true]);
    });

    it('answers the total with an empty page past the end, for a zero limit, and for a project without builds', async () => {
      expect(await builds().pageByProject('prj_1', 2, 5)).toEqual({ total: 5, builds: [] });
      expect(await builds().pageByProject('prj_1', 2, 50)).toEqual({ total: 5, builds: [] });
      expect(await builds().pageByProject('prj_1', 0, 0)).toEqual({ total: 5, builds: [] });
      expect(await builds().pageByProject('prj_2', 10, 0)).toEqual({ total: 1, builds: [expect.objectContaining({ uploadId: 'upl_other' })] });
      expect(await builds().pageByProject('prj_none', 10, 0)).toEqual({ total: 0, builds: [] });
    });
  });

  describe('moveStatus and stages', () => {
    it('moves a status only from the status the caller read, stamping updated_at and the objection', async () => {
      await builds().insert(build('upl_1', 'prj_1', 100));
      expect(await builds().moveStatus('upl_1', 'Ready', 'Distributing to Servers', undefined, 200)).toBe(false);
      expect(await builds().findById('upl_1')).toMatchObject({ status: 'pending', updatedAt: 100 });
      expect(await builds().moveStatus('upl_1', 'pending', 'Downloading Files', undefined, 200)).toBe(true);
      expect(await builds().moveStatus('upl_1', 'Downloading Files', 'Download Failed', 'expired URL', 300)).toBe(true);
      expect(await builds().findById('upl_1')).toMatchObject({ status: 'Download Failed', objection: 'expired URL', updatedAt: 300 });
      expect(await builds().moveStatus('upl_none', 'pending', 'Downloading Files', undefined, 400)).toBe(false);
    });

    it('clears the objection when a move gives none, and leaves created_at and the other builds alone', async () => {
      await builds().insert(build('upl_1', 'prj_1', 100, { status: 'Reject', objection: 'too big' }));
      await builds().insert(build('upl_2', 'prj_1', 100, { status: 'Reject', objection: 'too big' }));
      expect(await builds().moveStatus('upl_1', 'Reject', 'Ready', undefined, 500)).toBe(true);
      expect(await builds().findById('upl_1')).toEqual({ ...build('upl_1', 'prj_1', 100, { status: 'Ready', updatedAt: 500 }), live: false });
      expect(await builds().findById('upl_2')).toMatchObject({ status: 'Reject', objection: 'too big', updatedAt: 100 });
    });

    it('records the stage each insert and each successful move entered, and none for a refused move', async () => {
      await builds().insert(build('upl_b', 'prj_1', 100));
      await builds().insert(build('upl_a', 'prj_2', 150, { status: 'Downloading Files' }));
      expect(await builds().moveStatus('upl_b', 'pending', 'Downloading Files', undefined, 200)).toBe(true);
      expect(await builds().moveStatus('upl_b', 'pending', 'Downloading Files', undefined, 250)).toBe(false);
      expect(await builds().moveStatus('upl_b', 'Downloading Files', 'Extracting & Scanning', undefined, 300)).toBe(true);
      const stages = await builds().stagesOf(['upl_b', 'upl_a', 'upl_none']);
      // Grouped by upload id (in upload id order), each in the order it was entered.
      expect([...stages]).toEqual([
        ['upl_a', [{ status: 'Downloading Files', enteredAt: 150 }]],
        [
          'upl_b',
          [
            { status: 'pending', enteredAt: 100 },
            { status: 'Downloading Files', enteredAt: 200 },
            { status: 'Extracting & Scanning', enteredAt: 300 },
          ],
        ],
      ]);
      expect([...(await builds().stagesOf(['upl_a']))]).toEqual([['upl_a', [{ status: 'Downloading Files', enteredAt: 150 }]]]);
      expect((await builds().stagesOf([])).size).toBe(0);
      expect((await builds().stagesOf(['upl_none'])).size).toBe(0);
    });

    it('lets exactly one of several moves from the same status win when they race', async () => {
      await builds().insert(build('upl_warm', 'prj_1', 1));
      // Reads at once first, so that a pooled store has a connection open for each move and the
      // moves overlap, rather than each waiting for a connection to be opened.
      await Promise.all([1, 2, 3, 4].map(() => builds().findById('upl_warm')));
      const targets: readonly BuildStatus[] = ['Downloading Files', 'Download Failed', 'Reject', 'Ready'];
      // Several rounds: how the moves interleave varies from one run to the next.
      for (let round = 1; round <= 5; round++) {
        const id = `upl_race_${round}`;
        await builds().insert(build(id, 'prj_1', round));
        const at = 1_000 + round;
        const won = await Promise.all(targets.map((to) => builds().moveStatus(id, 'pending', to, `by ${to}`, at)));
        expect(won.filter(Boolean)).toHaveLength(1);
        const winner = targets[won.indexOf(true)]!;
        expect(await builds().findById(id)).toMatchObject({ status: winner, objection: `by ${winner}`, updatedAt: at });
        expect(await builds().stagesOf([id])).toEqual(
          new Map([
            [
              id,
              [
                { status: 'pending', enteredAt: round },
                { status: winner, enteredAt: at },
              ],
            ],
          ]),
        );
      }
    });
  });
});
