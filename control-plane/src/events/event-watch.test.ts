import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { openDatabase, type Db } from '../db/database';
import { SqliteEventsRepository, type EventsRepository, type FleetEvent } from '../repositories/events';
import { promised } from '../store/promised';
import { EventLog } from './event-log';
import { EventWatch, WATCH_PAGE_SIZE, WatchCounters, type EventSink } from './event-watch';

let dir: string;
let db: Db;
let log: EventLog;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-event-watch-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  log = new EventLog(promised<EventsRepository>(new SqliteEventsRepository(db)), new ManualClock(1_000), pino({ level: 'silent' }));
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Records n events one after the other; returns them as stored. */
async function recordMany(n: number, prefix = 'e'): Promise<FleetEvent[]> {
  const events: FleetEvent[] = [];
  db.exec('BEGIN');
  for (let i = 0; i < n; i += 1) events.push(await stored(`${prefix}${i}`));
  db.exec('COMMIT');
  return events;
}

/** Records one event and answers it once stored and heard by the watchers. */
async function stored(type: string): Promise<FleetEvent> {
  const event = await log.record(type, {});
  if (event === undefined) throw new Error(`${type} was not recorded`);
  return event;
}

/**
 * A consumer with room for `room` unsent events, like a Writable's high-water mark: write() answers
 * false once it holds that many; the test sends them (takes()) when it chooses, which drains it.
 */
class SlowConsumer implements EventSink {
  readonly received: FleetEvent[] = [];
  private unsent: (() => void)[] = [];
  private waiting: (() => void) | undefined;
  /** Resolves the next time the watch waits for room. */
  private onWait: (() => void) | undefined;

  constructor(private readonly room: number) {}

  write(event: FleetEvent, sent: () => void): boolean {
    this.received.push(event);
    this.unsent.push(sent);
    return this.unsent.length < this.room;
  }

  drained(signal: AbortSignal): Promise<void> {
    this.onWait?.();
    return new Promise((resolve, reject) => {
      const aborted = () => reject(signal.reason as Error);
      signal.addEventListener('abort', aborted, { once: true });
      this.waiting = () => {
        signal.removeEventListener('abort', aborted);
        resolve();
      };
    });
  }

  /** Resolves when the watch is waiting for room. */
  waitedOn(): Promise<void> {
    return this.waiting !== undefined ? Promise.resolve() : new Promise((r) => (this.onWait = r));
  }

  /** Sends everything held, then lets a waiting watch go on; resolves after its next turn. */
  async send(): Promise<void> {
    for (const sent of this.unsent.splice(0)) sent();
    const resume = this.waiting;
    this.waiting = undefined;
    this.onWait = undefined;
    resume?.();
    await new Promise((r) => setImmediate(r));
  }

  ids(): number[] {
    return this.received.map((e) => e.eventId);
  }
}

function watch(consumer: EventSink, after: number | 'latest', counters = new WatchCounters()) {
  const errors: unknown[] = [];
  const w = new EventWatch(log, consumer, after, counters, (err) => errors.push(err));
  w.start();
  return { w, counters, errors };
}

describe('EventWatch', () => {
  it('replays a long history while holding at most a page beyond what the consumer buffers', async () => {
    const old = await recordMany(5 * WATCH_PAGE_SIZE + 7);
    const consumer = new SlowConsumer(16);
    const { w, counters } = watch(consumer, 0);
    while (consumer.received.length < old.length) {
      await consumer.waitedOn();
      // Stalled: it read no further than the page it is writing (plus what the consumer buffers).
      expect(counters.held).toBeLessThanOrEqual(WATCH_PAGE_SIZE + 16);
      await consumer.send();
    }
    expect(consumer.ids()).toEqual(old.map((e) => e.eventId));
    expect(counters.peakHeld).toBeLessThanOrEqual(WATCH_PAGE_SIZE + 16);
    expect(counters.waits).toBeGreaterThanOrEqual(old.length / 16 - 1);
    w.stop();
    expect(counters).toMatchObject({ open: 0, held: 0 });
  });

  it('an event recorded while the watch waits on its last page arrives once, after the page (from the log, not the listener)', async () => {
    const old = await recordMany(20);
    const consumer = new SlowConsumer(16);
    const { w } = watch(consumer, 0);
    await consumer.waitedOn();
    expect(consumer.received).toHaveLength(16);
    const during = await stored('during');
    await consumer.send();
    expect(consumer.ids()).toEqual([...old, during].map((e) => e.eventId));
    await consumer.send();
    const after = await stored('after');
    expect(consumer.ids()).toEqual([...old, during, after].map((e) => e.eventId));
    w.stop();
  });

  it('live, a consumer that fills up sends it back to the log: nothing lost, nothing twice, in order', async () => {
    const consumer = new SlowConsumer(3);
    const { w, counters } = watch(consumer, 'latest');
    await consumer.send(); // caught up at once: live
    const first = await stored('a');
    const second = await stored('b');
    expect(consumer.ids()).toEqual([first.eventId, second.eventId]);
    const third = await stored('c'); // fills it: the watch goes back to reading the log
    await consumer.waitedOn();
    const missed = [await stored('d'), await stored('e')]; // recorded while it waits: not written now
    expect(consumer.received).toHaveLength(3);
    expect(counters.held).toBe(3);
    await consumer.send();
    await consumer.send();
    const live = await stored('f');
    expect(consumer.ids()).toEqual([first, second, third, ...missed, live].map((e) => e.eventId));
    w.stop();
  });

  it('after n delivers only the events above n; after the last id only new ones', async () => {
    const old = await recordMany(10);
    const consumer = new SlowConsumer(1_000);
    const { w } = watch(consumer, old[6]!.eventId);
    await consumer.send();
    expect(consumer.ids()).toEqual(old.slice(7).map((e) => e.eventId));
    w.stop();
    const fresh = new SlowConsumer(1_000);
    const second = watch(fresh, 'latest');
    await fresh.send();
    const e = await stored('new');
    expect(fresh.ids()).toEqual([e.eventId]);
    second.w.stop();
  });

  it('stopped while waiting: no more reads or writes, nothing held, the listener gone', async () => {
    await recordMany(40);
    const consumer = new SlowConsumer(16);
    const { w, counters, errors } = watch(consumer, 0);
    await consumer.waitedOn();
    w.stop();
    w.stop();
    await consumer.send();
    await stored('later');
    expect(consumer.received).toHaveLength(16);
    expect(counters).toMatchObject({ open: 0, held: 0 });
    expect(errors).toEqual([]);
  });

  it('an event stored while its last page is being read (a store that answers later) arrives once, in order, and the watch goes live', async () => {
    const old = await recordMany(3);
    const repo = promised<EventsRepository>(new SqliteEventsRepository(db));
    let reading: { open: () => void } | undefined;
    const slowLog = new EventLog({ ...repo, listAfter: async (afterId, limit) => {
      const page = await repo.listAfter(afterId, limit);
      await new Promise<void>((open) => (reading = { open }));
      return page;
    } }, new ManualClock(2_000), pino({ level: 'silent' }));
    const consumer = new SlowConsumer(1_000);
    const w = new EventWatch(slowLog, consumer, 0, new WatchCounters(), () => undefined);
    w.start();
    await new Promise((r) => setImmediate(r));
    // The page holds the three old events; this one is stored after the read and heard meanwhile.
    const during = (await slowLog.record('during', {}))!;
    reading!.open();
    await consumer.send();
    expect(consumer.ids()).toEqual([...old, during].map((e) => e.eventId));
    const live = (await slowLog.record('live', {}))!;
    expect(consumer.ids()).toEqual([...old, during, live].map((e) => e.eventId));
    w.stop();
  });

  it('a failing read stops the watch and is reported once', async () => {
    await recordMany(3);
    db.close();
    const consumer = new SlowConsumer(16);
    const { counters, errors } = watch(consumer, 0);
    await new Promise((r) => setImmediate(r));
    expect(errors).toHaveLength(1);
    expect(counters).toMatchObject({ open: 0, held: 0 });
    db = openDatabase(join(dir, 'cp.sqlite'));
  });
});
