import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { ManualClock } from '@pixelfleet/common';
import { SqliteEventsRepository, type FleetEvent } from '../repositories/events';
import { EventLog } from './event-log';

let dir: string;
let db: Db;
let clock: ManualClock;
let log: EventLog;
let logged: { msg: string; err?: { message: string } }[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-event-log-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  clock = new ManualClock(1_000);
  logged = [];
  const destination = { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string; err?: { message: string } }) };
  log = new EventLog(new SqliteEventsRepository(db), clock, pino({ level: 'error' }, destination));
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function recordMany(n: number, prefix = 'e'): FleetEvent[] {
  return db.transaction(() => Array.from({ length: n }, (_, i) => log.record(`${prefix}${i}`, {})))();
}

function collector() {
  const seen: FleetEvent[] = [];
  return { seen, listener: (e: FleetEvent) => void seen.push(e) };
}

describe('EventLog.record', () => {
  it('stores the event at the clock time with its subjects and data', () => {
    clock.advance(500);
    const e = log.record('worker.connected', { workerId: 'wrk_1', projectId: 'prj_1' }, { epoch: 2 });
    expect(e).toEqual({
      eventId: e.eventId,
      type: 'worker.connected',
      occurredAt: 1_500,
      workerId: 'wrk_1',
      sessionId: undefined,
      projectId: 'prj_1',
      data: { epoch: 2 },
    });
    expect(new SqliteEventsRepository(db).listAfter(0, 10)).toEqual([e]);
  });

  it('defaults data to an empty object', () => {
    expect(log.record('x', {}).data).toEqual({});
  });
});

describe('EventLog.follow', () => {
  it('with 0 delivers only events recorded after it was called', () => {
    recordMany(3, 'old');
    const { seen, listener } = collector();
    log.follow(0, listener);
    expect(seen).toEqual([]);
    const a = log.record('new.a', {});
    const b = log.record('new.b', { sessionId: 'session_1' });
    expect(seen).toEqual([a, b]);
  });

  it('with n replays the events after n, then follows new ones, without gaps or repeats', () => {
    const old = recordMany(5);
    const { seen, listener } = collector();
    log.follow(old[1]!.eventId, listener);
    expect(seen).toEqual(old.slice(2));
    const fresh = log.record('fresh', {});
    expect(seen).toEqual([...old.slice(2), fresh]);
  });

  it("with 'first' replays every stored event from the oldest, then follows", () => {
    const old = recordMany(3);
    const { seen, listener } = collector();
    log.follow('first', listener);
    expect(seen).toEqual(old);
    const fresh = log.record('fresh', {});
    expect(seen).toEqual([...old, fresh]);
  });

  it('with the last id replays nothing and then follows', () => {
    const old = recordMany(2);
    const { seen, listener } = collector();
    log.follow(old[1]!.eventId, listener);
    expect(seen).toEqual([]);
    const fresh = log.record('fresh', {});
    expect(seen).toEqual([fresh]);
  });

  it('replays across more than one page of 500 events, in order', () => {
    const old = recordMany(1_203);
    const { seen, listener } = collector();
    log.follow(old[0]!.eventId, listener);
    expect(seen).toHaveLength(1_202);
    expect(seen.map((e) => e.eventId)).toEqual(old.slice(1).map((e) => e.eventId));
    const fresh = log.record('fresh', {});
    expect(seen.at(-1)).toEqual(fresh);
    expect(seen).toHaveLength(1_203);
  });

  it('replays a backlog that is an exact multiple of the page size', () => {
    const old = recordMany(1_001);
    const { seen, listener } = collector();
    log.follow(old[0]!.eventId, listener);
    expect(seen.map((e) => e.eventId)).toEqual(old.slice(1).map((e) => e.eventId));
    expect(seen).toHaveLength(1_000);
  });

  it('stops delivering after unsubscribe, leaving other followers subscribed', () => {
    const first = collector();
    const second = collector();
    const unsubscribe = log.follow(0, first.listener);
    log.follow(0, second.listener);
    const a = log.record('a', {});
    unsubscribe();
    const b = log.record('b', {});
    expect(first.seen).toEqual([a]);
    expect(second.seen).toEqual([a, b]);
  });

  it('a throwing watcher is logged and skipped: the event is recorded and the other watchers hear it', () => {
    const after = collector();
    log.follow(0, () => {
      throw new Error('watcher broke');
    });
    log.follow(0, after.listener);
    const a = log.record('a', {});
    expect(after.seen).toEqual([a]);
    expect(logged.map((l) => [l.msg, l.err?.message])).toEqual([['fleet event watcher threw', 'watcher broke']]);
    expect(new SqliteEventsRepository(db).listAfter(0, 10).map((e) => e.eventId)).toEqual([a.eventId]);
  });
});
