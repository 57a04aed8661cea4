// WorkerRegistry's choice between two streams presenting one worker identity (stream-takeover.ts),
// on a real SQLite file and fake time: another agent process is refused while the worker's stream
// renews its lease, and replaces it once that stream lets the lease run out; the same process's
// redial, or a stream of an agent too old to name its instance, replaces at once as before.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import type { AgentHello, ToAgent } from '@pixelfleet/proto';
import { openDatabase, type Db } from '../db/database';
import { DomainError } from '../errors';
import { EventLog } from '../events/event-log';
import { randomIds } from '../lib/ids';
import { SqliteEventsRepository, type EventsRepository, type FleetEvent } from '../repositories/events';
import { promised } from '../store/promised';
import { SqliteWorkersRepository } from '../repositories/workers';
import { WorkerRegistry, type AgentStream } from './registry';

const HEARTBEAT_MS = 10_000;
const LEASE_MS = 30_000;

let dir: string;
let db: Db;
let clock: ManualClock;
let registry: WorkerRegistry;
let events: SqliteEventsRepository;
let logged: { msg: string; level: number; count?: number }[];
let conflicts: string[];
let workerId: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-registry-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  clock = new ManualClock();
  logged = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string; level: number }) });
  events = new SqliteEventsRepository(db);
  registry = new WorkerRegistry(new SqliteWorkersRepository(db), new EventLog(promised<EventsRepository>(events), clock, log), clock, randomIds, log, { heartbeatIntervalMs: HEARTBEAT_MS, leaseTtlMs: LEASE_MS });
  conflicts = [];
  registry.on('identityConflict', (id) => conflicts.push(id));
  workerId = registry.enroll({ hostname: 'gpu-a', region: 'europe', slots: 1, agentVersion: '1' }).workerId;
});

afterEach(() => {
  registry.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One Connect stream as the registry sees it: what it was sent, and why it was ended. */
function stream(peer: string): AgentStream & { sent: ToAgent[]; ended: string[] } {
  const sent: ToAgent[] = [];
  const ended: string[] = [];
  return { peer, sent, ended, send: (m) => void sent.push(m), end: (reason) => void ended.push(reason) };
}

const hello = (hostname: string, instanceId: string): AgentHello => ({
  workerId, agentVersion: '1', region: 'europe', slots: 1, lastAckedSeq: 0, runningSessions: [], cachedBuilds: [], hostname, instanceId,
});

const conflictEvents = (): FleetEvent[] => events.listAfter(0, 100).filter((e) => e.type === 'worker.identityConflict');

/** What acceptHello threw, or undefined when it accepted. */
function refusal(h: AgentHello, s: AgentStream): DomainError | undefined {
  try {
    registry.acceptHello(workerId, h, s);
    return undefined;
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
}

describe('a second agent process presenting a live worker identity', () => {
  it('is refused with a conflict naming both hosts; the live stream keeps the worker, its heartbeats and its commands', () => {
    const first = stream('10.0.0.1:50001');
    expect(registry.acceptHello(workerId, hello('gpu-a', 'aaaa'), first)).toBe(1);
    const since = new Date(clock.now()).toISOString();
    clock.advance(HEARTBEAT_MS);
    registry.heartbeat(workerId, 1);

    const clone = stream('10.0.0.2:50002');
    const refused = refusal(hello('gpu-b', 'bbbb'), clone);
    expect(refused?.kind).toBe('conflict');
    expect(refused?.message).toBe(
      `worker ${workerId} is already connected from host gpu-a (address 10.0.0.1:50001, agent instance aaaa, since ${since}); ` +
        'this agent on host gpu-b (address 10.0.0.2:50002, agent instance bbbb) presents the same identity (a copy of its worker.json): ' +
        're-enroll one of them (stop its agent, delete worker.json from its data folder, start it with joinToken)',
    );
    expect(clone.sent).toEqual([]);
    expect(first.ended).toEqual([]);
    // The first stream is still the worker's: a command goes to it, its heartbeat counts.
    registry.sendCommand(workerId, { kind: 'deleteBuild', uploadId: 'upl_1' });
    expect(first.sent.map((m) => m.type)).toEqual(['welcome', 'command']);
    expect(registry.get(workerId)).toMatchObject({ link: 'connected', connectionEpoch: 1 });

    // It redials at its backoff while the first keeps heartbeating: refused each time, never flapping.
    for (let i = 0; i < 3; i += 1) {
      clock.advance(HEARTBEAT_MS);
      registry.heartbeat(workerId, 1);
      expect(refusal(hello('gpu-b', 'bbbb'), stream('10.0.0.2:50003'))?.kind).toBe('conflict');
    }
    expect(first.ended).toEqual([]);
    expect(registry.get(workerId).connectionEpoch).toBe(1);
    // Every refusal counted; one fleet event for that process; the warning sampled (one line a minute per worker).
    expect(conflicts).toEqual([workerId, workerId, workerId, workerId]);
    expect(conflictEvents().map((e) => e.data)).toEqual([
      { connectedHost: 'gpu-a', connectedPeer: '10.0.0.1:50001', connectedInstanceId: 'aaaa', refusedHost: 'gpu-b', refusedPeer: '10.0.0.2:50002', refusedInstanceId: 'bbbb' },
    ]);
    expect(logged.filter((l) => l.msg === 'Hello refused: another agent process presents this worker identity while its stream is alive')).toHaveLength(1);
    // A third copy is a fleet event of its own.
    refusal(hello('gpu-c', 'cccc'), stream('10.0.0.3:50004'));
    expect(conflictEvents().map((e) => e.data.refusedInstanceId)).toEqual(['bbbb', 'cccc']);
  });

  it('replaces the live stream once it let the lease run out (its agent died with the stream half-open here), not a moment before', () => {
    const first = stream('10.0.0.1:50001');
    registry.acceptHello(workerId, hello('gpu-a', 'aaaa'), first);
    clock.advance(LEASE_MS - 1);
    expect(refusal(hello('gpu-a', 'restarted'), stream('10.0.0.1:50002'))?.kind).toBe('conflict');
    clock.advance(1);
    const restarted = stream('10.0.0.1:50003');
    expect(refusal(hello('gpu-a', 'restarted'), restarted)).toBeUndefined();
    expect(first.ended).toEqual([
      "replaced by another agent process presenting this worker's identity (host gpu-a (address 10.0.0.1:50003, agent instance restarted)) after this stream let the lease run out",
    ]);
    expect(restarted.sent[0]).toMatchObject({ type: 'welcome', connectionEpoch: 2 });
    expect(logged.map((l) => l.msg)).toContain('worker taken over by another agent process after its stream went quiet');
    // The old stream's heartbeats no longer count.
    registry.heartbeat(workerId, 1);
    expect(registry.get(workerId).connectionEpoch).toBe(2);
  });

  it('is accepted once the live stream has closed (the operator stopped the other agent)', () => {
    registry.acceptHello(workerId, hello('gpu-a', 'aaaa'), stream('10.0.0.1:50001'));
    expect(refusal(hello('gpu-b', 'bbbb'), stream('10.0.0.2:50002'))?.kind).toBe('conflict');
    registry.streamClosed(workerId, 1);
    expect(refusal(hello('gpu-b', 'bbbb'), stream('10.0.0.2:50003'))).toBeUndefined();
    expect(registry.get(workerId)).toMatchObject({ link: 'connected', connectionEpoch: 2 });
  });
});

describe('a newer stream that replaces at once, as before', () => {
  it("the same process's redial (same instance id) while its old stream is still held and renewing", () => {
    const old = stream('10.0.0.1:50001');
    registry.acceptHello(workerId, hello('gpu-a', 'aaaa'), old);
    clock.advance(HEARTBEAT_MS);
    registry.heartbeat(workerId, 1);
    const redial = stream('10.0.0.1:50002');
    expect(refusal(hello('gpu-a', 'aaaa'), redial)).toBeUndefined();
    expect(old.ended).toEqual(['replaced by a newer stream from the same worker']);
    expect(redial.sent[0]).toMatchObject({ type: 'welcome', connectionEpoch: 2 });
    expect(conflicts).toEqual([]);
  });

  it('a live stream of an agent too old to name its instance: a redial and a copy look alike, so the newer wins', () => {
    const old = stream('10.0.0.1:50001');
    registry.acceptHello(workerId, hello('', ''), old);
    expect(refusal(hello('gpu-b', 'bbbb'), stream('10.0.0.2:50002'))).toBeUndefined();
    expect(old.ended).toEqual(['replaced by a newer stream from the same worker']);
    // The newer agent names its instance: now a copy without one is refused, so a mixed pair settles too.
    const refused = refusal(hello('', ''), stream('10.0.0.1:50003'));
    expect(refused?.message).toContain('this agent on host (not named) (address 10.0.0.1:50003, an agent too old to name its instance) presents the same identity');
  });
});
