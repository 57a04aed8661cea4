import { mkdtempSync, rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentAck, AgentCommand, DeliveredCommand } from '@pixelfleet/proto';
import { CommandFailure, type CommandHandlers } from './command';
import { CommandExecutor } from './executor';
import { CommandJournal } from './journal';

/** A promise with its resolve/reject exposed, so a test decides when a handler finishes. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const NOW = 1_000_000;

const startSession = (sessionId = 'session_1'): AgentCommand => ({
  kind: 'startSession',
  sessionId,
  projectId: 'prj_1',
  uploadId: 'upl_1',
  streamingId: 'str_1',
  playerId: 'ply_1',
  codec: 'H264',
  minBitrateBps: 1_000_000,
  maxBitrateBps: 5_000_000,
  resX: 1920,
  resY: 1080,
  fps: 60,
  launchArgs: [],
  maxRunTimeMinutes: 60,
  startupTimeoutSeconds: 120,
  warm: false,
});

const delivered = (seq: number, commandId: string, command: AgentCommand = startSession(), notAfterMs?: number): DeliveredCommand => ({
  seq,
  commandId,
  connectionEpoch: 1,
  notAfterMs,
  command,
});

interface Harness {
  executor: CommandExecutor;
  acks: AgentAck[];
  calls: Record<keyof CommandHandlers, number>;
  /** What the next handler call does; defaults to succeeding at once. */
  behaviour: { next: (progress?: (percent: number) => void) => Promise<void> };
  logLines: () => Record<string, unknown>[];
  /** Resolves once an ack matching the predicate has been sent (immediately if one was). */
  ackWhere: (predicate: (a: AgentAck) => boolean) => Promise<AgentAck>;
}

let dataDir: string;

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'pf-executor-'));
});

afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

function harness(now: () => number = () => NOW): Harness {
  const acks: AgentAck[] = [];
  const waiters: { predicate: (a: AgentAck) => boolean; resolve: (a: AgentAck) => void }[] = [];
  const calls: Record<keyof CommandHandlers, number> = { startSession: 0, stopSession: 0, prepareBuild: 0, deleteBuild: 0 };
  const behaviour: Harness['behaviour'] = { next: () => Promise.resolve() };
  const handlers: CommandHandlers = {
    startSession: () => {
      calls.startSession += 1;
      return behaviour.next();
    },
    stopSession: () => {
      calls.stopSession += 1;
      return behaviour.next();
    },
    prepareBuild: (_c, progress) => {
      calls.prepareBuild += 1;
      return behaviour.next(progress);
    },
    deleteBuild: () => {
      calls.deleteBuild += 1;
      return behaviour.next();
    },
  };
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  const sendAck = (ack: AgentAck) => {
    acks.push(ack);
    for (const w of [...waiters]) {
      if (w.predicate(ack)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(ack);
      }
    }
  };
  const executor = new CommandExecutor(new CommandJournal(dataDir), handlers, sendAck, now, pino({ level: 'debug' }, sink));
  const ackWhere = (predicate: (a: AgentAck) => boolean) => {
    const found = acks.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise<AgentAck>((resolve) => waiters.push({ predicate, resolve }));
  };
  const logLines = () => lines.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { executor, acks, calls, behaviour, logLines, ackWhere };
}

const isFinal = (commandId: string) => (a: AgentAck) => a.commandId === commandId && (a.phase === 'SUCCEEDED' || a.phase === 'FAILED');

describe('CommandExecutor', () => {
  it('runs a command once: ACCEPTED, then SUCCEEDED at 100%', async () => {
    const h = harness();
    h.executor.handle(delivered(1, 'cmd_1'));
    expect(h.acks).toEqual([{ seq: 1, commandId: 'cmd_1', phase: 'ACCEPTED', errorCode: '', errorMessage: '', progressPercent: 0 }]);
    const final = await h.ackWhere(isFinal('cmd_1'));
    expect(final).toEqual({ seq: 1, commandId: 'cmd_1', phase: 'SUCCEEDED', errorCode: '', errorMessage: '', progressPercent: 100 });
    expect(h.acks).toHaveLength(2);
    expect(h.executor.runs).toBe(1);
    expect(h.calls.startSession).toBe(1);
    expect(h.executor.lastAckedSeq).toBe(1);
  });

  it('answers a command delivered again after it finished from the journal, without running it again', async () => {
    const h = harness();
    h.executor.handle(delivered(1, 'cmd_1'));
    const final = await h.ackWhere(isFinal('cmd_1'));
    const before = h.acks.length;

    h.executor.handle(delivered(1, 'cmd_1'));
    expect(h.acks.slice(before)).toEqual([final]);
    expect(h.executor.runs).toBe(1);
    expect(h.calls.startSession).toBe(1);
  });

  it('answers a repeat of a failed command with the same FAILED ack', async () => {
    const h = harness();
    h.behaviour.next = () => Promise.reject(new CommandFailure('UNSUPPORTED', 'no launcher'));
    h.executor.handle(delivered(4, 'cmd_f'));
    const final = await h.ackWhere(isFinal('cmd_f'));
    h.executor.handle(delivered(4, 'cmd_f'));
    expect(h.acks.at(-1)).toEqual(final);
    expect(h.acks.filter((a) => a.phase === 'FAILED')).toHaveLength(2);
    expect(h.calls.startSession).toBe(1);
  });

  it('answers ACCEPTED to a repeat while the first run is still going, and runs it only once', async () => {
    const h = harness();
    const running = deferred();
    h.behaviour.next = () => running.promise;
    h.executor.handle(delivered(1, 'cmd_1'));
    h.executor.handle(delivered(1, 'cmd_1'));
    expect(h.acks.map((a) => a.phase)).toEqual(['ACCEPTED', 'ACCEPTED']);
    expect(h.executor.runs).toBe(1);
    expect(h.calls.startSession).toBe(1);

    running.resolve();
    await h.ackWhere(isFinal('cmd_1'));
    expect(h.acks.map((a) => a.phase)).toEqual(['ACCEPTED', 'ACCEPTED', 'SUCCEEDED']);
    expect(h.calls.startSession).toBe(1);
  });

  it('turns a CommandFailure into FAILED with its code and message', async () => {
    const h = harness();
    h.behaviour.next = () => Promise.reject(new CommandFailure('BUILD_MISSING', 'upload upl_1 is not cached'));
    h.executor.handle(delivered(2, 'cmd_2'));
    expect(await h.ackWhere(isFinal('cmd_2'))).toEqual({
      seq: 2,
      commandId: 'cmd_2',
      phase: 'FAILED',
      errorCode: 'BUILD_MISSING',
      errorMessage: 'upload upl_1 is not cached',
      progressPercent: 0,
    });
    expect(h.logLines().filter((l) => l.level === 50)).toEqual([]);
  });

  it('turns any other error into FAILED INTERNAL and logs it', async () => {
    const h = harness();
    h.behaviour.next = () => Promise.reject(new Error('disk on fire'));
    h.executor.handle(delivered(3, 'cmd_3'));
    expect(await h.ackWhere(isFinal('cmd_3'))).toMatchObject({ seq: 3, commandId: 'cmd_3', phase: 'FAILED', errorCode: 'INTERNAL', errorMessage: 'disk on fire' });
    expect(h.logLines().some((l) => l.level === 50 && l.commandId === 'cmd_3')).toBe(true);
    expect(h.executor.lastAckedSeq).toBe(3);
  });

  it('fails a command past its notAfter deadline with STALE, without running it', () => {
    const h = harness();
    h.executor.handle(delivered(5, 'cmd_5', startSession(), NOW - 1));
    expect(h.acks).toEqual([
      { seq: 5, commandId: 'cmd_5', phase: 'FAILED', errorCode: 'STALE', errorMessage: 'command arrived after its deadline', progressPercent: 0 },
    ]);
    expect(h.executor.runs).toBe(0);
    expect(h.calls.startSession).toBe(0);
    expect(h.executor.lastAckedSeq).toBe(5);
    // A repeat is answered STALE again from the journal, still without running.
    h.executor.handle(delivered(5, 'cmd_5', startSession(), NOW + 60_000));
    expect(h.acks.at(-1)?.errorCode).toBe('STALE');
    expect(h.calls.startSession).toBe(0);
  });

  it('runs a command whose deadline is now or later', async () => {
    const h = harness();
    h.executor.handle(delivered(1, 'cmd_now', startSession(), NOW));
    h.executor.handle(delivered(2, 'cmd_later', startSession('session_2'), NOW + 1));
    await h.ackWhere(isFinal('cmd_now'));
    await h.ackWhere(isFinal('cmd_later'));
    expect(h.calls.startSession).toBe(2);
    expect(h.acks.filter((a) => a.phase === 'SUCCEEDED').map((a) => a.commandId).sort()).toEqual(['cmd_later', 'cmd_now']);
  });

  it('still answers from the journal after a restart (a new executor over the same data folder)', async () => {
    const before = harness();
    before.executor.handle(delivered(7, 'cmd_7'));
    const final = await before.ackWhere(isFinal('cmd_7'));

    const after = harness();
    expect(after.executor.lastAckedSeq).toBe(7);
    after.executor.handle(delivered(7, 'cmd_7'));
    expect(after.acks).toEqual([final]);
    expect(after.executor.runs).toBe(0);
    expect(after.calls.startSession).toBe(0);
  });

  it('dispatches each kind to its handler', async () => {
    const h = harness();
    h.executor.handle(delivered(1, 'c_stop', { kind: 'stopSession', sessionId: 'session_1', reason: 'user', graceMs: 1_000 }));
    h.executor.handle(delivered(2, 'c_del', { kind: 'deleteBuild', uploadId: 'upl_1' }));
    h.executor.handle(
      delivered(3, 'c_prep', { kind: 'prepareBuild', uploadId: 'upl_1', projectId: 'prj_1', downloadUrl: 'https://x/y', sizeBytes: 10, sha256: 'a'.repeat(64) }),
    );
    for (const id of ['c_stop', 'c_del', 'c_prep']) await h.ackWhere(isFinal(id));
    expect(h.calls).toEqual({ startSession: 0, stopSession: 1, prepareBuild: 1, deleteBuild: 1 });
    expect(h.executor.runs).toBe(3);
    expect(h.executor.lastAckedSeq).toBe(3);
  });

  it('sends prepareBuild progress as IN_PROGRESS acks, rounded and clamped to 0..100', async () => {
    const h = harness();
    const done = deferred();
    let report: ((percent: number) => void) | undefined;
    h.behaviour.next = (progress) => {
      report = progress;
      return done.promise;
    };
    h.executor.handle(
      delivered(9, 'c_prep', { kind: 'prepareBuild', uploadId: 'upl_1', projectId: 'prj_1', downloadUrl: 'https://x/y', sizeBytes: 10, sha256: 'a'.repeat(64) }),
    );
    for (const p of [12.4, 57.6, 150, -3]) report!(p);
    expect(h.acks.filter((a) => a.phase === 'IN_PROGRESS').map((a) => [a.seq, a.commandId, a.progressPercent])).toEqual([
      [9, 'c_prep', 12],
      [9, 'c_prep', 58],
      [9, 'c_prep', 100],
      [9, 'c_prep', 0],
    ]);
    done.resolve();
    expect((await h.ackWhere(isFinal('c_prep'))).phase).toBe('SUCCEEDED');
  });

  it('ends a handler that throws synchronously as FAILED INTERNAL instead of wedging it', async () => {
    const h = harness();
    h.behaviour.next = () => {
      throw new Error('sync boom');
    };
    let threw: unknown;
    try {
      h.executor.handle(delivered(1, 'cmd_sync'));
    } catch (err) {
      threw = err;
    }
    expect(threw).toBeUndefined();
    expect(await h.ackWhere(isFinal('cmd_sync'))).toMatchObject({ phase: 'FAILED', errorCode: 'INTERNAL', errorMessage: 'sync boom' });
  });
});
