// BuildCopiesRepository held to one contract in both stores, through its asynchronous interface
// only: one copy per (build, worker), replaced whole by the next put (also when puts race), lists
// in byte order of worker and upload ids, and copies only of known builds and workers.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BuildCopy } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const copy = (uploadId: string, workerId: string, extra: Partial<BuildCopy> = {}): BuildCopy => ({
  uploadId,
  workerId,
  phase: 'sent',
  error: undefined,
  updatedAt: 100,
  ...extra,
});

const BUILDS = ['upl_a', 'upl_b', 'upl_B', 'upl_c'];
const WORKERS = ['wrk_a', 'wrk_b', 'wrk_B', 'wrk_é'];

describe.each(cases)('BuildCopiesRepository ($name)', (store) => {
  let db: OpenedStore;

  /** Inserts one row; RETURNING so SQLite's probe, which reads rows, accepts an INSERT. */
  const insert = (table: string, row: Record<string, string | number>) => {
    const columns = Object.keys(row);
    return db.rows(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1 AS inserted`, Object.values(row));
  };

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_1', email: 'u@example.com', createdAt: 1 });
    await insert('projects', { id: 'prj_1', owner_user_id: 'usr_1', name: 'one', region: 'europe', created_at: 1 });
    for (const [i, uploadId] of BUILDS.entries()) {
      await db.repositories.builds.insert({ uploadId, projectId: 'prj_1', fileUrl: undefined, status: 'Distributing to Servers', objection: undefined, autoRelease: false, createdAt: i, updatedAt: i });
    }
    for (const workerId of WORKERS) {
      await insert('workers', { id: workerId, hostname: `${workerId}.local`, region: 'europe', slots: 1, token_hash: `th_${workerId}`, agent_version: '1', enrolled_at: 1 });
    }
  });

  afterEach(async () => {
    await db.close();
  });

  const copies = () => db.repositories.buildCopies;

  it('creates a copy that find answers, every field round-tripping', async () => {
    const failed = copy('upl_a', 'wrk_a', { phase: 'failed', error: 'DISK_FULL: no space left on device ✗', updatedAt: 1_700_000_000_123 });
    await copies().put(failed);
    await copies().put(copy('upl_b', 'wrk_a'));
    expect(await copies().find('upl_a', 'wrk_a')).toEqual(failed);
    expect(await copies().find('upl_b', 'wrk_a')).toEqual(copy('upl_b', 'wrk_a'));
  });

  it('finds nothing for a build or worker without a copy', async () => {
    await copies().put(copy('upl_a', 'wrk_a'));
    expect(await copies().find('upl_a', 'wrk_b')).toBeUndefined();
    expect(await copies().find('upl_b', 'wrk_a')).toBeUndefined();
    expect(await copies().find('upl_none', 'wrk_none')).toBeUndefined();
  });

  it('replaces the copy whole: phase, error (cleared when none) and updatedAt', async () => {
    await copies().put(copy('upl_a', 'wrk_a', { phase: 'failed', error: 'boom', updatedAt: 100 }));
    await copies().put(copy('upl_a', 'wrk_a', { phase: 'sent', updatedAt: 200 }));
    expect(await copies().find('upl_a', 'wrk_a')).toEqual(copy('upl_a', 'wrk_a', { phase: 'sent', updatedAt: 200 }));
    await copies().put(copy('upl_a', 'wrk_a', { phase: 'ready', updatedAt: 300 }));
    expect(await copies().listOfBuild('upl_a')).toEqual([copy('upl_a', 'wrk_a', { phase: 'ready', updatedAt: 300 })]);
  });

  it("lists a build's copies by worker id, in byte order, and no other build's", async () => {
    for (const workerId of ['wrk_é', 'wrk_b', 'wrk_a', 'wrk_B']) await copies().put(copy('upl_a', workerId, { phase: workerId === 'wrk_b' ? 'ready' : 'sent' }));
    await copies().put(copy('upl_b', 'wrk_a'));
    // Byte order: upper case before lower case, a non-ASCII letter after both.
    expect((await copies().listOfBuild('upl_a')).map((c) => c.workerId)).toEqual(['wrk_B', 'wrk_a', 'wrk_b', 'wrk_é']);
    expect(await copies().listOfBuild('upl_b')).toEqual([copy('upl_b', 'wrk_a')]);
    expect(await copies().listOfBuild('upl_c')).toEqual([]);
  });

  it('lists the upload ids a worker holds ready, in byte order, and only its own', async () => {
    await copies().put(copy('upl_c', 'wrk_a', { phase: 'ready' }));
    await copies().put(copy('upl_b', 'wrk_a', { phase: 'ready' }));
    await copies().put(copy('upl_B', 'wrk_a', { phase: 'ready' }));
    await copies().put(copy('upl_a', 'wrk_a', { phase: 'failed', error: 'boom' }));
    await copies().put(copy('upl_a', 'wrk_b', { phase: 'ready' }));
    await copies().put(copy('upl_c', 'wrk_b', { phase: 'sent' }));
    expect(await copies().readyOnWorker('wrk_a')).toEqual(['upl_B', 'upl_b', 'upl_c']);
    expect(await copies().readyOnWorker('wrk_b')).toEqual(['upl_a']);
    expect(await copies().readyOnWorker('wrk_é')).toEqual([]);
    // A copy that was ready and is sent again is no longer ready.
    await copies().put(copy('upl_b', 'wrk_a', { phase: 'sent', updatedAt: 200 }));
    expect(await copies().readyOnWorker('wrk_a')).toEqual(['upl_B', 'upl_c']);
  });

  it('refuses a copy of an unknown build or on an unknown worker', async () => {
    await expect(copies().put(copy('upl_none', 'wrk_a'))).rejects.toThrow(/foreign key/i);
    await expect(copies().put(copy('upl_a', 'wrk_none'))).rejects.toThrow(/foreign key/i);
    expect(await copies().listOfBuild('upl_none')).toEqual([]);
    expect(await copies().listOfBuild('upl_a')).toEqual([]);
  });

  it('keeps one copy when puts of the same copy race, and none of them fails', async () => {
    // Reads at once first, so that a pooled store has a connection open for each put and the puts overlap.
    await Promise.all([1, 2, 3, 4].map(() => copies().find('upl_a', 'wrk_a')));
    for (let round = 1; round <= 5; round++) {
      const workerId = WORKERS[round % WORKERS.length]!;
      const puts = (['sent', 'ready', 'failed', 'ready'] as const).map((phase, i) => copy(`upl_${round % 2 === 0 ? 'a' : 'b'}`, workerId, { phase, updatedAt: round * 10 + i }));
      await Promise.all(puts.map((c) => copies().put(c)));
      const stored = (await copies().listOfBuild(puts[0]!.uploadId)).filter((c) => c.workerId === workerId);
      expect(stored).toHaveLength(1);
      expect(puts).toContainEqual(stored[0]);
    }
  });
});
