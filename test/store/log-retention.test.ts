// LogRetentionRepository held to one contract in both stores, through its asynchronous interface
// only: log file records and telemetry rows deleted by age (oldest first) or by session, a bounded
// batch per call, with the blob digests they named; and whether a digest is still named by a log
// file record or a build's archive (blobs are content-addressed and may be shared).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const NOW = 50_000_000;
const digest = (c: string) => c.repeat(64);

describe.each(cases)('LogRetentionRepository ($name)', (store) => {
  let db: OpenedStore;

  /** Inserts one row; SQL both dialects read alike (RETURNING so SQLite's probe, which reads rows, accepts an INSERT). */
  const insert = async (table: string, row: Record<string, string | number>) => {
    const columns = Object.keys(row);
    await db.rows(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1 AS inserted`, Object.values(row));
  };

  const session = (id: string) => insert('sessions', { id, project_id: 'prj_1', region: 'us-east-1', status: 'Terminated', created_at: 1, updated_at: 2 });

  const logFile = (id: string, sessionId: string, uploadedAt: number, blobSha256: string) =>
    insert('log_files', { id, session_id: sessionId, project_id: 'prj_1', file_name: `${id}.log`, file_size: 10, gz_size: 5, blob_sha256: blobSha256, uploaded_at: uploadedAt });

  const telemetry = (sessionId: string, receivedAt: number) =>
    insert('telemetry_rows', { session_id: sessionId, project_id: 'prj_1', timestamp: String(receivedAt), received_at: receivedAt, row: '{}' });

  const build = (uploadId: string, archiveSha256: string) =>
    insert('builds', { upload_id: uploadId, project_id: 'prj_1', status: 'Ready', created_at: 1, updated_at: 1, archive_sha256: archiveSha256 });

  const column = async (sql: string) => (await db.rows<{ v: string | number }>(sql)).map((r) => r.v);

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_owner', email: 'owner@example.com', createdAt: 1 });
    await insert('projects', { id: 'prj_1', owner_user_id: 'usr_owner', name: 'Project', region: 'us-east-1', created_at: 1 });
    await session('s_1');
    await session('s_2');
  });

  afterEach(async () => {
    await db.close();
  });

  const retention = () => db.repositories.logRetention;

  describe('deleteLogFilesBefore', () => {
    it('deletes records uploaded before the time, oldest first, at most limit, returning one digest per record', async () => {
      await logFile('log_c', 's_1', NOW - 100, digest('c'));
      await logFile('log_a', 's_2', NOW - 300, digest('a'));
      await logFile('log_b', 's_1', NOW - 200, digest('b'));
      await logFile('log_at', 's_1', NOW, digest('d'));
      await logFile('log_new', 's_2', NOW + 1, digest('e'));

      expect((await retention().deleteLogFilesBefore(NOW, 2)).sort()).toEqual([digest('a'), digest('b')]);
      expect(await column('SELECT id AS v FROM log_files ORDER BY id')).toEqual(['log_at', 'log_c', 'log_new']);
      expect(await retention().deleteLogFilesBefore(NOW, 2)).toEqual([digest('c')]);
      expect(await retention().deleteLogFilesBefore(NOW, 2)).toEqual([]);
      expect(await column('SELECT id AS v FROM log_files ORDER BY id')).toEqual(['log_at', 'log_new']);
    });

    it('returns a shared digest once for each record that named it', async () => {
      await logFile('log_1', 's_1', 10, digest('f'));
      await logFile('log_2', 's_2', 20, digest('f'));
      expect(await retention().deleteLogFilesBefore(NOW, 10)).toEqual([digest('f'), digest('f')]);
    });
  });

  describe('deleteLogFilesOfSessions', () => {
    it("deletes the given sessions' records, at most limit a call, returning their digests", async () => {
      await session('s_kept');
      await logFile('log_1a', 's_1', NOW, digest('1'));
      await logFile('log_1b', 's_1', NOW, digest('2'));
      await logFile('log_2a', 's_2', NOW, digest('3'));
      await logFile('log_kept', 's_kept', 1, digest('4'));

      const first = await retention().deleteLogFilesOfSessions(['s_1', 's_2'], 2);
      expect(first).toHaveLength(2);
      const second = await retention().deleteLogFilesOfSessions(['s_1', 's_2'], 2);
      expect(second).toHaveLength(1);
      expect([...first, ...second].sort()).toEqual([digest('1'), digest('2'), digest('3')]);
      expect(await retention().deleteLogFilesOfSessions(['s_1', 's_2'], 2)).toEqual([]);
      expect(await column('SELECT id AS v FROM log_files')).toEqual(['log_kept']);
    });

    it('deletes nothing for no ids or unknown ids', async () => {
      await logFile('log_1', 's_1', 1, digest('1'));
      expect(await retention().deleteLogFilesOfSessions([], 10)).toEqual([]);
      expect(await retention().deleteLogFilesOfSessions(['s_nothing'], 10)).toEqual([]);
      expect(await column('SELECT id AS v FROM log_files')).toEqual(['log_1']);
    });
  });

  describe('deleteTelemetryBefore', () => {
    it('deletes rows received before the time, oldest first, at most limit, and returns how many', async () => {
      await telemetry('s_1', NOW - 100);
      await telemetry('s_2', NOW - 300);
      await telemetry('s_1', NOW - 200);
      await telemetry('s_1', NOW);
      await telemetry('s_2', NOW + 1);
      const received = () => column('SELECT received_at AS v FROM telemetry_rows ORDER BY received_at');

      expect(await retention().deleteTelemetryBefore(NOW, 2)).toBe(2);
      expect(await received()).toEqual([NOW - 100, NOW, NOW + 1]);
      expect(await retention().deleteTelemetryBefore(NOW, 2)).toBe(1);
      expect(await retention().deleteTelemetryBefore(NOW, 2)).toBe(0);
      expect(await received()).toEqual([NOW, NOW + 1]);
    });
  });

  describe('isBlobReferenced', () => {
    it('is false for a digest nothing names', async () => {
      expect(await retention().isBlobReferenced(digest('0'))).toBe(false);
    });

    it('is true while a log file record names the digest, false once the last one is gone', async () => {
      await logFile('log_1', 's_1', 10, digest('f'));
      await logFile('log_2', 's_2', 20, digest('f'));
      expect(await retention().isBlobReferenced(digest('f'))).toBe(true);
      expect(await retention().deleteLogFilesBefore(15, 10)).toEqual([digest('f')]);
      expect(await retention().isBlobReferenced(digest('f'))).toBe(true);
      expect(await retention().deleteLogFilesOfSessions(['s_2'], 10)).toEqual([digest('f')]);
      expect(await retention().isBlobReferenced(digest('f'))).toBe(false);
    });

    it("is true while a build's archive names the digest, even with no log file naming it", async () => {
      await build('upl_1', digest('b'));
      await logFile('log_1', 's_1', 10, digest('b'));
      expect(await retention().deleteLogFilesBefore(NOW, 10)).toEqual([digest('b')]);
      expect(await retention().isBlobReferenced(digest('b'))).toBe(true);
      expect(await retention().isBlobReferenced(digest('c'))).toBe(false);
    });
  });
});
