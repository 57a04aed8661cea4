import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Db } from '../db/database';
import { openRepositoryTestDb, sessionRecord, type RepositoryTestDb } from './repository-test-db';
import { SqliteSessionsRepository, type SessionRecord, type SnapshotData } from './sessions';

let testDb: RepositoryTestDb;
let db: Db;
let sessions: SqliteSessionsRepository;

const session = sessionRecord;

const snap = (s: SessionRecord): SnapshotData => ({ sessionId: s.sessionId, projectId: s.projectId, status: s.status, region: 'Europe' });

const snapshots = (sessionId: string) =>
  (db.prepare('SELECT received_at, data FROM session_snapshots WHERE session_id = ? ORDER BY id').all(sessionId) as { received_at: number; data: string }[]).map(
    (r) => ({ at: r.received_at, data: JSON.parse(r.data) as SnapshotData }),
  );

beforeEach(() => {
  testDb = openRepositoryTestDb('pf-sessions-');
  db = testDb.db;
  sessions = new SqliteSessionsRepository(db);
});

afterEach(() => testDb.remove());

describe('SqliteSessionsRepository', () => {
  it('inserts a session with its first snapshot', () => {
    const s = session('session_1', 100);
    sessions.insert(s, snap(s));
    expect(sessions.findById('session_1')).toEqual(s);
    expect(snapshots('session_1')).toEqual([{ at: 100, data: snap(s) }]);
    expect(sessions.findById('session_none')).toBeUndefined();
  });

  it('updates the state and appends a snapshot row per change', () => {
    const s = session('session_1', 100);
    sessions.insert(s, snap(s));
    const starting = { ...s, status: 'Starting' as const, assignedWorker: 'wrk_1', streamingId: 'str_1', playerId: 'ply_1', maxRunTime: 60, updatedAt: 200 };
    sessions.update(starting, { ...snap(starting), assignedWorker: 'wrk_1' });
    const ended = { ...starting, status: 'Terminated' as const, endReason: 'user', updatedAt: 300 };
    sessions.update(ended, snap(ended));
    expect(sessions.findById('session_1')).toEqual(ended);
    expect(snapshots('session_1').map((r) => [r.at, r.data.status])).toEqual([
      [100, 'Enqueued'],
      [200, 'Starting'],
      [300, 'Terminated'],
    ]);
    expect(snapshots('session_1')[1]!.data.assignedWorker).toBe('wrk_1');
  });

  it('writes no snapshot when the session row cannot be written', () => {
    const s = session('session_x', 100, { projectId: 'prj_none' });
    expect(() => sessions.insert(s, snap(s))).toThrow(/FOREIGN KEY/);
    expect(db.prepare('SELECT COUNT(*) AS n FROM session_snapshots').get()).toEqual({ n: 0 });
  });

  it('lists newest first, by project when asked, up to the limit', () => {
    const all = [session('s1', 100), session('s2', 300, { projectId: 'prj_2' }), session('s3', 200), session('s4', 400)];
    for (const s of all) sessions.insert(s, snap(s));
    expect(sessions.list({ limit: 10 }).map((s) => s.sessionId)).toEqual(['s4', 's2', 's3', 's1']);
    expect(sessions.list({ limit: 2 }).map((s) => s.sessionId)).toEqual(['s4', 's2']);
    expect(sessions.list({ projectId: 'prj_1', limit: 10 }).map((s) => s.sessionId)).toEqual(['s4', 's3', 's1']);
    expect(sessions.list({ projectId: 'prj_2', limit: 10 }).map((s) => s.sessionId)).toEqual(['s2']);
  });

  it("lists a project's sessions that have not begun ending, oldest first, without a limit, through its partial index", () => {
    const all = [
      session('s_run', 1, { status: 'Running', assignedWorker: 'wrk_1' }),
      session('s_enq', 2),
      session('s_start', 3, { status: 'Starting', assignedWorker: 'wrk_1' }),
      session('s_ending', 4, { status: 'Terminating', assignedWorker: 'wrk_1' }),
      session('s_done', 5, { status: 'Terminated' }),
      session('s_other', 6, { projectId: 'prj_2', status: 'Running', assignedWorker: 'wrk_1' }),
    ];
    for (const s of all) sessions.insert(s, snap(s));
    expect(sessions.listNotEndingOfProject('prj_1').map((s) => s.sessionId)).toEqual(['s_run', 's_enq', 's_start']);
    // The repository's own statement (seen as it is prepared), not a copy of it.
    const prepared: string[] = [];
    const prepare = db.prepare.bind(db);
    const spy = vi.spyOn(db, 'prepare').mockImplementation((sql: string) => (prepared.push(sql), prepare(sql)));
    new SqliteSessionsRepository(db);
    spy.mockRestore();
    const sql = prepared.filter((q) => q.includes("project_id = ? AND status <> 'Terminated'"));
    expect(sql).toHaveLength(1);
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql[0]!}`).all('prj_1') as { detail: string }[];
    expect(plan[0]?.detail).toBe('SEARCH sessions USING INDEX sessions_project_not_terminated (project_id=?)');
  });

  it("lists a project's unclaimed warm instances not yet Terminated, newest first, through its not-Terminated index", () => {
    const all = [
      session('s_warm_old', 1, { status: 'Starting', assignedWorker: 'wrk_1', pooled: true }),
      session('s_warm_ending', 2, { status: 'Terminating', assignedWorker: 'wrk_1', pooled: true }),
      session('s_warm_new', 3, { status: 'Starting', assignedWorker: 'wrk_1', pooled: true }),
      session('s_warm_done', 4, { status: 'Terminated', pooled: true }),
      session('s_viewer', 5, { status: 'Running', assignedWorker: 'wrk_1' }),
      session('s_warm_other', 6, { projectId: 'prj_2', status: 'Starting', assignedWorker: 'wrk_1', pooled: true }),
    ];
    for (const s of all) sessions.insert(s, undefined);
    expect(sessions.listUnclaimedWarm('prj_1').map((s) => s.sessionId)).toEqual(['s_warm_new', 's_warm_ending', 's_warm_old']);
    // The project's own list leaves them out.
    expect(sessions.list({ projectId: 'prj_1', limit: 10 }).map((s) => s.sessionId)).toEqual(['s_viewer']);
    const prepared: string[] = [];
    const prepare = db.prepare.bind(db);
    const spy = vi.spyOn(db, 'prepare').mockImplementation((sql: string) => (prepared.push(sql), prepare(sql)));
    new SqliteSessionsRepository(db);
    spy.mockRestore();
    const sql = prepared.filter((q) => q.includes('project_id = ? AND pooled = 1'));
    expect(sql).toHaveLength(1);
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql[0]!}`).all('prj_1') as { detail: string }[];
    expect(plan.map((p) => p.detail)).toEqual(['SEARCH sessions USING INDEX sessions_project_not_terminated (project_id=?)']);
  });

  it('lists the sessions holding a slot on a worker (Starting, Running, Terminating)', () => {
    const all = [
      session('s_enq', 1, { status: 'Enqueued', assignedWorker: 'wrk_1' }),
      session('s_start', 2, { status: 'Starting', assignedWorker: 'wrk_1' }),
      session('s_run', 3, { status: 'Running', assignedWorker: 'wrk_1' }),
      session('s_term', 4, { status: 'Terminating', assignedWorker: 'wrk_1' }),
      session('s_done', 5, { status: 'Terminated', assignedWorker: 'wrk_1' }),
      session('s_other', 6, { status: 'Running', assignedWorker: 'wrk_2' }),
    ];
    for (const s of all) sessions.insert(s, snap(s));
    expect(sessions.listHoldingWorker('wrk_1').map((s) => s.sessionId).sort()).toEqual(['s_run', 's_start', 's_term']);
  });
});
