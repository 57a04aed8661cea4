// SessionRetentionRepository held to one contract in both stores, through its asynchronous
// interface only: which sessions ended before a time (Terminated only, oldest first, bounded),
// their child rows deleted a bounded batch at a time, and only sessions still Terminated deleted.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const NOW = 50_000_000;
const CHILD_TABLES = ['telemetry_rows', 'session_snapshots', 'log_files'] as const;
type Status = 'Enqueued' | 'Starting' | 'Running' | 'Terminating' | 'Terminated';

describe.each(cases)('SessionRetentionRepository ($name)', (store) => {
  let db: OpenedStore;
  let logSeq = 0;

  /** Inserts one row; SQL both dialects read alike (RETURNING so SQLite's probe, which reads rows, accepts an INSERT). */
  const insert = async (table: string, row: Record<string, string | number>) => {
    const columns = Object.keys(row);
    await db.rows(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1 AS inserted`, Object.values(row));
  };

  /** A session of prj_1 last updated (ended, when Terminated) at updatedAt. */
  const session = (id: string, status: Status, updatedAt: number) =>
    insert('sessions', { id, project_id: 'prj_1', region: 'us-east-1', status, created_at: updatedAt - 1_000, updated_at: updatedAt });

  /** n rows in each table that hangs off the session. */
  const children = async (sessionId: string, n: number) => {
    for (let i = 0; i < n; i++) {
      await insert('telemetry_rows', { session_id: sessionId, project_id: 'prj_1', timestamp: 't', received_at: NOW, row: '{}' });
      await insert('session_snapshots', { session_id: sessionId, received_at: NOW, data: '{}' });
      logSeq += 1;
      await insert('log_files', {
        id: `log_${logSeq}`,
        session_id: sessionId,
        project_id: 'prj_1',
        file_name: 'engine.log',
        file_size: 10,
        gz_size: 5,
        blob_sha256: 'a'.repeat(64),
        uploaded_at: NOW,
      });
    }
  };

  const count = async (table: string, sessionId: string) => Number((await db.rows<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE session_id = ?`, [sessionId]))[0]?.n);
  const sessionIds = async () => (await db.rows<{ id: string }>('SELECT id FROM sessions ORDER BY id')).map((r) => r.id);

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_owner', email: 'owner@example.com', createdAt: 1 });
    await insert('projects', { id: 'prj_1', owner_user_id: 'usr_owner', name: 'Project', region: 'us-east-1', created_at: 1 });
  });

  afterEach(async () => {
    await db.close();
  });

  const retention = () => db.repositories.sessionRetention;

  describe('listEndedBefore', () => {
    it('lists sessions Terminated before the time, oldest first, and none that has not ended', async () => {
      await session('s_c', 'Terminated', NOW - 100);
      await session('s_a', 'Terminated', NOW - 300);
      await session('s_b', 'Terminated', NOW - 200);
      await session('s_at', 'Terminated', NOW);
      await session('s_after', 'Terminated', NOW + 1);
      for (const status of ['Enqueued', 'Starting', 'Running', 'Terminating'] as const) await session(`s_${status}`, status, 1);

      expect(await retention().listEndedBefore(NOW, 100)).toEqual(['s_a', 's_b', 's_c']);
      expect(await retention().listEndedBefore(NOW, 2)).toEqual(['s_a', 's_b']);
      expect(await retention().listEndedBefore(NOW - 300, 100)).toEqual([]);
    });

    it('lists nothing in an empty database', async () => {
      expect(await retention().listEndedBefore(NOW, 10)).toEqual([]);
    });
  });

  describe.each(CHILD_TABLES)('deleteChildRows(%s)', (table) => {
    it("deletes the given sessions' rows, at most limit a call, and returns how many", async () => {
      await session('s_1', 'Terminated', 1);
      await session('s_2', 'Terminated', 1);
      await session('s_kept', 'Terminated', 1);
      await children('s_1', 3);
      await children('s_2', 2);
      await children('s_kept', 2);

      expect(await retention().deleteChildRows(table, ['s_1', 's_2'], 4)).toBe(4);
      expect((await count(table, 's_1')) + (await count(table, 's_2'))).toBe(1);
      expect(await retention().deleteChildRows(table, ['s_1', 's_2'], 4)).toBe(1);
      expect(await retention().deleteChildRows(table, ['s_1', 's_2'], 4)).toBe(0);
      expect(await count(table, 's_kept')).toBe(2);
      // The other child tables are left alone.
      for (const other of CHILD_TABLES.filter((t) => t !== table)) expect(await count(other, 's_1')).toBe(3);
    });

    it('deletes nothing for no ids or unknown ids', async () => {
      await session('s_1', 'Terminated', 1);
      await children('s_1', 1);
      expect(await retention().deleteChildRows(table, [], 10)).toBe(0);
      expect(await retention().deleteChildRows(table, ['s_nothing'], 10)).toBe(0);
      expect(await count(table, 's_1')).toBe(1);
    });
  });

  describe('deleteEnded', () => {
    it('deletes only the given sessions that are still Terminated, and returns how many', async () => {
      await session('s_ended_1', 'Terminated', 1);
      await session('s_ended_2', 'Terminated', 2);
      await session('s_ended_other', 'Terminated', 3);
      await session('s_running', 'Running', 1);
      await session('s_terminating', 'Terminating', 1);

      expect(await retention().deleteEnded(['s_ended_1', 's_ended_2', 's_running', 's_terminating', 's_nothing'])).toBe(2);
      expect(await sessionIds()).toEqual(['s_ended_other', 's_running', 's_terminating']);
      expect(await retention().deleteEnded(['s_ended_1', 's_ended_2'])).toBe(0);
      expect(await retention().deleteEnded([])).toBe(0);
    });

    it("takes a session's remaining child rows with it", async () => {
      await session('s_1', 'Terminated', 1);
      await session('s_kept', 'Terminated', 1);
      await children('s_1', 2);
      await children('s_kept', 1);
      expect(await retention().deleteEnded(['s_1'])).toBe(1);
      for (const table of CHILD_TABLES) {
        expect(await count(table, 's_1')).toBe(0);
        expect(await count(table, 's_kept')).toBe(1);
      }
    });

    it('a whole pass (list, children, sessions) leaves only what had not ended before the time', async () => {
      await session('s_old', 'Terminated', NOW - 10);
      await session('s_recent', 'Terminated', NOW + 10);
      await session('s_old_running', 'Running', NOW - 10);
      for (const id of ['s_old', 's_recent', 's_old_running']) await children(id, 2);

      const ended = await retention().listEndedBefore(NOW, 10);
      expect(ended).toEqual(['s_old']);
      for (const table of CHILD_TABLES) expect(await retention().deleteChildRows(table, ended, 10)).toBe(2);
      expect(await retention().deleteEnded(ended)).toBe(1);
      expect(await sessionIds()).toEqual(['s_old_running', 's_recent']);
      for (const table of CHILD_TABLES) expect(await count(table, 's_old_running')).toBe(2);
    });
  });
});
