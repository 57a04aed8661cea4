// LogFilesRepository held to one contract in both stores: records round-trip, a session's files
// list oldest first and page with their total, and insertWithin records a file only when its
// session has no file of that name and room left under its limits, all or nothing, also when
// several uploads of one session race (PostgreSQL locks the session's row first).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogFileRecord } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const file = (logFileId: string, extra: Partial<LogFileRecord> = {}): LogFileRecord => ({
  logFileId,
  sessionId: 's_1',
  projectId: 'prj_1',
  fileName: `${logFileId}.log`,
  fileSize: 1_000,
  gzSize: 100,
  blobSha256: 'a'.repeat(64),
  uploadedAt: 10,
  ...extra,
});

const LIMITS = { maxFiles: 3, maxGzBytes: 1_000 };

describe.each(cases)('LogFilesRepository ($name)', (store) => {
  let db: OpenedStore;

  /** Inserts one row; SQL both dialects read alike (RETURNING so SQLite's probe, which reads rows, accepts an INSERT). */
  const insert = async (table: string, values: Record<string, string | number>) => {
    const columns = Object.keys(values);
    await db.rows(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1 AS inserted`, Object.values(values));
  };

  const session = (id: string) => insert('sessions', { id, project_id: 'prj_1', region: 'europe', status: 'Running', created_at: 1, updated_at: 1 });

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_1', email: 'u@example.com', createdAt: 1 });
    await insert('projects', { id: 'prj_1', owner_user_id: 'usr_1', name: 'p', region: 'europe', created_at: 1 });
    await session('s_1');
    await session('s_2');
  });

  afterEach(async () => {
    await db.close();
  });

  const logFiles = () => db.repositories.logFiles;

  it('stores a record whole and finds it by id', async () => {
    const record = file('log_1', { fileName: 'Engine "2026" é.log', fileSize: 123_456_789_012, gzSize: 9_876_543, blobSha256: 'f'.repeat(64), uploadedAt: 1_780_000_000_000 });
    await logFiles().insert(record);
    expect(await logFiles().findById('log_1')).toEqual(record);
    expect(await logFiles().findById('log_none')).toBeUndefined();
    await expect(logFiles().insert(record)).rejects.toThrow();
    await expect(logFiles().insert(file('log_x', { sessionId: 's_none' }))).rejects.toThrow(/foreign key/i);
  });

  it("lists and pages a session's files oldest first (ties by id), with the session's total", async () => {
    await logFiles().insert(file('log_c', { uploadedAt: 30 }));
    await logFiles().insert(file('log_b', { uploadedAt: 20 }));
    await logFiles().insert(file('log_a2', { uploadedAt: 20 }));
    await logFiles().insert(file('log_z', { uploadedAt: 5, sessionId: 's_2' }));
    expect((await logFiles().listBySession('s_1')).map((f) => f.logFileId)).toEqual(['log_a2', 'log_b', 'log_c']);
    expect(await logFiles().listBySession('s_none')).toEqual([]);
    const page = async (limit: number, skip: number) => {
      const p = await logFiles().pageBySession('s_1', limit, skip);
      return [p.total, p.logFiles.map((f) => f.logFileId)];
    };
    expect(await page(2, 0)).toEqual([3, ['log_a2', 'log_b']]);
    expect(await page(2, 2)).toEqual([3, ['log_c']]);
    expect(await page(2, 3)).toEqual([3, []]);
    expect(await page(0, 0)).toEqual([3, []]);
    expect((await logFiles().pageBySession('s_1', 1, 0)).logFiles).toEqual([file('log_a2', { uploadedAt: 20 })]);
    expect(await logFiles().pageBySession('s_none', 10, 0)).toEqual({ total: 0, logFiles: [] });
  });

  it('insertWithin records a file while the session has room, and says why not otherwise, writing nothing', async () => {
    expect(await logFiles().insertWithin(file('log_1', { gzSize: 400 }), LIMITS)).toEqual({ kind: 'inserted' });
    // A retry of the same name answers the stored record, whatever the new one says.
    expect(await logFiles().insertWithin(file('log_retry', { fileName: 'log_1.log', gzSize: 1 }), LIMITS)).toEqual({ kind: 'sameName', record: file('log_1', { gzSize: 400 }) });
    // Exactly at the byte limit fits; one byte over does not.
    expect(await logFiles().insertWithin(file('log_big', { gzSize: 601 }), LIMITS)).toEqual({ kind: 'tooLarge', heldGzBytes: 400 });
    expect(await logFiles().insertWithin(file('log_2', { gzSize: 500 }), LIMITS)).toEqual({ kind: 'inserted' });
    expect(await logFiles().insertWithin(file('log_3', { gzSize: 100 }), LIMITS)).toEqual({ kind: 'inserted' });
    expect(await logFiles().insertWithin(file('log_4', { gzSize: 0 }), LIMITS)).toEqual({ kind: 'tooMany' });
    // The same name outranks the limits.
    expect((await logFiles().insertWithin(file('log_again', { fileName: 'log_3.log' }), LIMITS)).kind).toBe('sameName');
    expect((await logFiles().listBySession('s_1')).map((f) => f.logFileId)).toEqual(['log_1', 'log_2', 'log_3']);
    // Another session's files are its own.
    expect(await logFiles().insertWithin(file('log_other', { sessionId: 's_2', fileName: 'log_1.log', gzSize: 1_000 }), LIMITS)).toEqual({ kind: 'inserted' });
    expect(await logFiles().insertWithin(file('log_none', { sessionId: 's_none' }), LIMITS).catch((err: Error) => err.message)).toMatch(/foreign key/i);
    expect(await logFiles().findById('log_none')).toBeUndefined();
  });

  it('lets exactly as many of several uploads of one session at once through as its limits allow', async () => {
    // Reads at once first, so that a pooled store has a connection open for each upload and the
    // transactions overlap, rather than each waiting for a connection to be opened.
    await Promise.all([1, 2, 3, 4].map(() => logFiles().listBySession('s_1')));
    // Several rounds, each on a fresh session: how the transactions interleave varies from one run to the next.
    for (let round = 1; round <= 5; round++) {
      const sessionId = `s_race_${round}`;
      await session(sessionId);
      const upload = (n: number, extra: Partial<LogFileRecord> = {}) =>
        logFiles().insertWithin(file(`log_${round}_${n}`, { sessionId, uploadedAt: n, ...extra }), { maxFiles: 2, maxGzBytes: 250 });
      // Four files of 100 bytes, room for two by count and by bytes.
      const byCount = await Promise.all([1, 2, 3, 4].map((n) => upload(n)));
      expect(byCount.filter((r) => r.kind === 'inserted')).toHaveLength(2);
      expect(byCount.filter((r) => r.kind !== 'inserted').map((r) => r.kind)).toEqual(['tooMany', 'tooMany']);
      expect(await logFiles().listBySession(sessionId)).toHaveLength(2);
    }
    for (let round = 1; round <= 5; round++) {
      const sessionId = `s_same_${round}`;
      await session(sessionId);
      // Four retries of one file: one record, the others answered with it.
      const sameName = await Promise.all([1, 2, 3, 4].map((n) => logFiles().insertWithin(file(`log_same_${round}_${n}`, { sessionId, fileName: 'engine.log' }), LIMITS)));
      const [stored, ...more] = await logFiles().listBySession(sessionId);
      expect(more).toEqual([]);
      expect(sameName.filter((r) => r.kind === 'inserted')).toHaveLength(1);
      expect(sameName.filter((r) => r.kind === 'sameName')).toEqual([1, 2, 3].map(() => ({ kind: 'sameName', record: stored })));
    }
    for (let round = 1; round <= 5; round++) {
      const sessionId = `s_bytes_${round}`;
      await session(sessionId);
      // Room for 10 files but 500 bytes: two of 200 fit, the other two find 400 held.
      const byBytes = await Promise.all([1, 2, 3, 4].map((n) => logFiles().insertWithin(file(`log_bytes_${round}_${n}`, { sessionId, gzSize: 200 }), { maxFiles: 10, maxGzBytes: 500 })));
      expect(byBytes.filter((r) => r.kind === 'inserted')).toHaveLength(2);
      expect(byBytes.filter((r) => r.kind !== 'inserted')).toEqual([
        { kind: 'tooLarge', heldGzBytes: 400 },
        { kind: 'tooLarge', heldGzBytes: 400 },
      ]);
    }
  });
});
