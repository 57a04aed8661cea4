import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { ManualClock } from '@pixelfleet/common';
import { SqliteEventsRepository, type EventsRepository, type FleetEvent } from '../repositories/events';
import { promised } from '../store/promised';
import { EventLog } from './event-log';

let dir: string;
let db: Db;
let clock: ManualClock;
let repo: EventsRepository;
let log: EventLog;
let logged: { msg: string; err?: { message: string } }[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-event-log-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  clock = new ManualClock(1_000);
  logged = [];
  const destination = { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string; err?: { message: string } }) };
  repo = promised<EventsRepository>(new SqliteEventsRepository(db));
  log = new EventLog(repo, clock, pino({ level: 'error' }, destination));
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Records n events one after the other; returns them as stored. */
async function recordMany(n: number, prefix = 'e'): Promise<FleetEvent[]> {
  const events: FleetEvent[] = [];
  db.exec('BEGIN');
  for (let i = 0; i < n; i += 1) events.push((await log.record(`${prefix}${i}`, {}))!);
  db.exec('COMMIT');
  return events;
}

function collector() {
  const seen: FleetEvent[] = [];
  return { seen, listener: (e: FleetEvent) => void seen.push(e) };
}

/** Resolves once every queued microtask and I/O callback has run (a replay reads in turns). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A promise settled from outside. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('EventLog.record', () => {
  it('stores the event at the clock time with its subjects and data', async () => {
    clock.advance(500);
    const e = (await log.record('worker.connected', { workerId: 'wrk_1', projectId: 'prj_1' }, { epoch: 2 }))!;
    expect(e).toEqual({
      eventId: e.eventId,
      type: 'worker.connected',
      occurredAt: 1_500,
      workerId: 'wrk_1',
      sessionId: undefined,
      projectId: 'prj_1',
      data: { epoch: 2 },
    });
    expect(await repo.listAfter(0, 10)).toEqual([e]);
  });

  it('defaults data to an empty object', async () => {
    expect((await log.record('x', {}))?.data).toEqual({});
  });

  it('stores events recorded in one turn in the order they were recorded, and tells watchers in that order', async () => {
    const { seen, listener } = collector();
    log.follow(0, listener);
    const recorded = await Promise.all(['a', 'b', 'c'].map((type) => log.record(type, {})));
    expect(recorded.map((e) => e?.type)).toEqual(['a', 'b', 'c']);
    expect((await repo.listAfter(0, 10)).map((e) => e.type)).toEqual(['a', 'b', 'c']);
    expect(seen).toEqual(recorded);
  });

  it('never rejects: a store that fails is logged and answers undefined, and no watcher hears of it', async () => {
    const failing = new EventLog({ ...repo, append: () => Promise.reject(new Error('disk full')) }, clock, pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string; err?: { message: string } }) }));
    const { seen, listener } = collector();
    failing.follow(0, listener);
    await expect(failing.record('lost', { sessionId: 'session_1' })).resolves.toBeUndefined();
    expect(seen).toEqual([]);
    expect(logged.map((l) => [l.msg, l.err?.message])).toEqual([['fleet event could not be recorded', 'disk full']]);
  });
});

describe('EventLog.follow', () => {
  it('with 0 delivers only events recorded after it was called', async () => {
    await recordMany(3, 'old');
    const { seen, listener } = collector();
    log.follow(0, listener);
    expect(seen).toEqual([]);
    const a = await log.record('new.a', {});
    const b = await log.record('new.b', { sessionId: 'session_1' });
    expect(seen).toEqual([a, b]);
  });

  it('with n replays the events after n, then follows new ones, without gaps or repeats', async () => {
    const old = await recordMany(5);
    const { seen, listener } = collector();
    log.follow(old[1]!.eventId, listener);
    await settled();
    expect(seen).toEqual(old.slice(2));
    const fresh = await log.record('fresh', {});
    expect(seen).toEqual([...old.slice(2), fresh]);
  });

  it("with 'first' replays every stored event from the oldest, then follows", async () => {
    const old = await recordMany(3);
    const { seen, listener } = collector();
    log.follow('first', listener);
    await settled();
    expect(seen).toEqual(old);
    const fresh = await log.record('fresh', {});
    expect(seen).toEqual([...old, fresh]);
  });

  it('with the last id replays nothing and then follows', async () => {
    const old = await recordMany(2);
    const { seen, listener } = collector();
    log.follow(old[1]!.eventId, listener);
    await settled();
    expect(seen).toEqual([]);
    const fresh = await log.record('fresh', {});
    expect(seen).toEqual([fresh]);
  });

  it('replays across more than one page of 500 events, in order', async () => {
    const old = await recordMany(1_203);
    const { seen, listener } = collector();
    log.follow(old[0]!.eventId, listener);
    await settled();
    expect(seen).toHaveLength(1_202);
    expect(seen.map((e) => e.eventId)).toEqual(old.slice(1).map((e) => e.eventId));
    const fresh = await log.record('fresh', {});
    expect(seen.at(-1)).toEqual(fresh);
    expect(seen).toHaveLength(1_203);
  });

  it('replays a backlog that is an exact multiple of the page size', async () => {
    const old = await recordMany(1_001);
    const { seen, listener } = collector();
    log.follow(old[0]!.eventId, listener);
    await settled();
    expect(seen.map((e) => e.eventId)).toEqual(old.slice(1).map((e) => e.eventId));
    expect(seen).toHaveLength(1_000);
  });

  it('an event recorded while a replay read is in flight is delivered once, after the replayed ones', async () => {
    const old = await recordMany(3);
    const reading = gate();
    const slowReads = new EventLog({ ...repo, listAfter: async (afterId, limit) => {
      const page = await repo.listAfter(afterId, limit);
      await reading.promise;
      return page;
    } }, clock, pino({ level: 'silent' }));
    const { seen, listener } = collector();
    slowReads.follow(old[0]!.eventId, listener);
    // Stored after the read began: the page may not hold it, the subscription heard it.
    const during = await slowReads.record('during', {});
    expect(seen).toEqual([]);
    reading.open();
    await settled();
    expect(seen).toEqual([...old.slice(1), during]);
    const after = await slowReads.record('after', {});
    expect(seen).toEqual([...old.slice(1), during, after]);
  });

  it('stops delivering after unsubscribe, leaving other followers subscribed', async () => {
    const first = collector();
    const second = collector();
    const unsubscribe = log.follow(0, first.listener);
    log.follow(0, second.listener);
    const a = await log.record('a', {});
    unsubscribe();
    const b = await log.record('b', {});
    expect(first.seen).toEqual([a]);
    expect(second.seen).toEqual([a, b]);
  });

  it('a throwing watcher is logged and skipped: the event is recorded and the other watchers hear it', async () => {
    const after = collector();
    log.follow(0, () => {
      throw new Error('watcher broke');
    });
    log.follow(0, after.listener);
    const a = (await log.record('a', {}))!;
    expect(after.seen).toEqual([a]);
    expect(logged.map((l) => [l.msg, l.err?.message])).toEqual([['fleet event watcher threw', 'watcher broke']]);
    expect((await repo.listAfter(0, 10)).map((e) => e.eventId)).toEqual([a.eventId]);
  });
});
