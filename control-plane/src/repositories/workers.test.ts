import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { SqliteWorkersRepository, type WorkerRecord } from './workers';
import { seedProject, seedSession, seedUser, sessionRecord, workerRecord } from './repository-test-db';
import type { SessionRecord } from './sessions';

let dir: string;
let db: Db;
let workers: SqliteWorkersRepository;

const worker = (workerId: string, extra: Partial<WorkerRecord> = {}): WorkerRecord => workerRecord(workerId, { slots: 2, agentVersion: '0.1.0', enrolledAt: 1_000, ...extra });

const command = (workerId: string, commandId: string, notAfter: number | undefined = undefined) => ({
  workerId,
  commandId,
  kind: 'stopSession',
  payload: JSON.stringify({ sessionId: 's', reason: 'test' }),
  notAfter,
  nowMs: 5_000,
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-workers-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  workers = new SqliteWorkersRepository(db);
  workers.insert(worker('wrk_a'), 'hash-a');
  workers.insert(worker('wrk_b', { enrolledAt: 2_000 }), 'hash-b');
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SqliteWorkersRepository workers', () => {
  it('round-trips a worker and finds it by token digest', () => {
    expect(workers.findById('wrk_a')).toEqual(worker('wrk_a'));
    expect(workers.findIdByTokenHash('hash-b')).toBe('wrk_b');
    expect(workers.findIdByTokenHash('hash-none')).toBeUndefined();
    expect(workers.findById('wrk_none')).toBeUndefined();
    expect(workers.list().map((w) => w.workerId)).toEqual(['wrk_a', 'wrk_b']);
  });

  it('records a Hello: new epoch, connected, lease renewed, slots and version refreshed (never the region), acked seq never lowered', () => {
    workers.setLastAckedSeq('wrk_a', 7);
    workers.recordHello({ workerId: 'wrk_a', epoch: 3, slots: 4, agentVersion: '0.2.0', lastAckedSeq: 5, nowMs: 10_000, leaseExpiresAt: 40_000 });
    expect(workers.findById('wrk_a')).toEqual(
      worker('wrk_a', {
        slots: 4,
        agentVersion: '0.2.0',
        link: 'connected',
        connectionEpoch: 3,
        lastAckedSeq: 7,
        lastSeenAt: 10_000,
        leaseExpiresAt: 40_000,
      }),
    );
    workers.recordHello({ workerId: 'wrk_a', epoch: 4, slots: 4, agentVersion: '0.2.0', lastAckedSeq: 9, nowMs: 11_000, leaseExpiresAt: 41_000 });
    expect(workers.findById('wrk_a')?.lastAckedSeq).toBe(9);
    expect(workers.findById('wrk_b')).toEqual(worker('wrk_b', { enrolledAt: 2_000 }));
  });

  it('never lowers lastAckedSeq', () => {
    workers.setLastAckedSeq('wrk_a', 10);
    workers.setLastAckedSeq('wrk_a', 4);
    expect(workers.findById('wrk_a')?.lastAckedSeq).toBe(10);
  });

  it('sets link, draining and lease', () => {
    workers.setLink('wrk_a', 'unreachable');
    workers.setDraining('wrk_a', true);
    workers.renewLease('wrk_a', 100, 130);
    expect(workers.findById('wrk_a')).toMatchObject({ link: 'unreachable', draining: true, lastSeenAt: 100, leaseExpiresAt: 130 });
    workers.setDraining('wrk_a', false);
    expect(workers.findById('wrk_a')?.draining).toBe(false);
  });

  it('listLeaseExpired returns workers whose lease ran out (at or before now) and are not yet unreachable', () => {
    workers.insert(worker('wrk_c'), 'hash-c');
    workers.insert(worker('wrk_d'), 'hash-d');
    workers.insert(worker('wrk_never'), 'hash-never');
    workers.renewLease('wrk_a', 0, 100); // expired, connected
    workers.setLink('wrk_a', 'connected');
    workers.renewLease('wrk_b', 0, 150); // expires exactly now, disconnected
    workers.renewLease('wrk_c', 0, 151); // still leased
    workers.renewLease('wrk_d', 0, 50); // expired but already unreachable
    workers.setLink('wrk_d', 'unreachable');
    // wrk_never has no lease at all.
    expect(workers.listLeaseExpired(150).map((w) => w.workerId).sort()).toEqual(['wrk_a', 'wrk_b']);
    expect(workers.listLeaseExpired(99)).toEqual([]);
    expect(workers.listLeaseExpired(1_000).map((w) => w.workerId).sort()).toEqual(['wrk_a', 'wrk_b', 'wrk_c']);
  });

  it('counts used slots from sessions on the worker that have not ended', () => {
    seedUser(db);
    seedProject(db, 'prj_1');
    const addSession = (sessionId: string, status: SessionRecord['status'], assignedWorker: string) => seedSession(db, sessionRecord(sessionId, 1, { status, assignedWorker }));
    addSession('s1', 'Starting', 'wrk_a');
    addSession('s2', 'Running', 'wrk_a');
    addSession('s3', 'Terminated', 'wrk_a');
    addSession('s4', 'Running', 'wrk_b');
    expect(workers.usedSlots('wrk_a')).toBe(2);
    expect(workers.usedSlots('wrk_b')).toBe(1);
    expect(workers.usedSlots('wrk_none')).toBe(0);
    // The same counts for every worker in one statement (what the scheduler reads).
    const listed = workers.listWithUsedSlots().map((w) => [w.workerId, w.usedSlots]);
    expect(listed).toEqual(workers.list().map((w) => [w.workerId, workers.usedSlots(w.workerId)]));
    expect(listed.some(([, used]) => used === 2)).toBe(true);
  });
});

describe('SqliteWorkersRepository commands', () => {
  it('assigns increasing seq numbers per worker, starting at 1', () => {
    const seqs = (id: string, cmds: string[]) => cmds.map((c) => workers.enqueueCommand(command(id, c)).seq);
    expect(seqs('wrk_a', ['a1', 'a2'])).toEqual([1, 2]);
    expect(seqs('wrk_b', ['b1'])).toEqual([1]);
    expect(seqs('wrk_a', ['a3'])).toEqual([3]);
    expect(seqs('wrk_b', ['b2', 'b3'])).toEqual([2, 3]);
  });

  it('returns and stores the command as PENDING', () => {
    const c = workers.enqueueCommand(command('wrk_a', 'cmd_1', 9_000));
    expect(c).toEqual({ workerId: 'wrk_a', seq: 1, commandId: 'cmd_1', kind: 'stopSession', payload: command('wrk_a', 'x').payload, phase: 'PENDING', notAfter: 9_000 });
    expect(workers.findCommand('cmd_1')).toEqual(c);
    expect(workers.findCommand('cmd_none')).toBeUndefined();
    const noDeadline = workers.enqueueCommand(command('wrk_a', 'cmd_2'));
    expect(workers.findCommand('cmd_2')).toEqual(noDeadline);
    expect(noDeadline.notAfter).toBeUndefined();
  });

  it('does not use up a seq when the command cannot be stored', () => {
    workers.enqueueCommand(command('wrk_a', 'dup'));
    expect(() => workers.enqueueCommand(command('wrk_a', 'dup'))).toThrow(/UNIQUE/);
    expect(workers.enqueueCommand(command('wrk_a', 'next')).seq).toBe(2);
  });

  it('refuses a command for an unknown worker', () => {
    expect(() => workers.enqueueCommand(command('wrk_none', 'cmd_x'))).toThrow();
    expect(workers.findCommand('cmd_x')).toBeUndefined();
  });

  it('unfinishedCommands lists the worker\'s commands not SUCCEEDED or FAILED, in seq order', () => {
    for (const id of ['c1', 'c2', 'c3', 'c4', 'c5']) workers.enqueueCommand(command('wrk_a', id));
    workers.enqueueCommand(command('wrk_b', 'other'));
    workers.setCommandPhase('c1', 'SUCCEEDED', undefined, undefined, 6_000);
    workers.setCommandPhase('c2', 'ACCEPTED', undefined, undefined, 6_000);
    workers.setCommandPhase('c3', 'FAILED', 'STALE', 'too late', 6_000);
    workers.setCommandPhase('c4', 'IN_PROGRESS', undefined, undefined, 6_000);
    const unfinished = workers.unfinishedCommands('wrk_a');
    expect(unfinished.map((c) => [c.commandId, c.phase, c.seq])).toEqual([
      ['c2', 'ACCEPTED', 2],
      ['c4', 'IN_PROGRESS', 4],
      ['c5', 'PENDING', 5],
    ]);
    expect(workers.unfinishedCommands('wrk_b').map((c) => c.commandId)).toEqual(['other']);
  });

  it('stores the error of a failed command', () => {
    workers.enqueueCommand(command('wrk_a', 'c1'));
    workers.setCommandPhase('c1', 'FAILED', 'UNSUPPORTED', 'no launcher', 7_000);
    expect(workers.findCommand('c1')?.phase).toBe('FAILED');
    expect(db.prepare("SELECT error_code, error_message, updated_at FROM worker_commands WHERE command_id = 'c1'").get()).toEqual({
      error_code: 'UNSUPPORTED',
      error_message: 'no launcher',
      updated_at: 7_000,
    });
  });
});
