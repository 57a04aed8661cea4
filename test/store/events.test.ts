// EventsRepository held to one contract in both stores: ids grow in the order events are appended
// (also when many are appended at once, so that a watcher's `id > cursor` misses none), every field
// round-trips, pages honour their limit, and retention deletes the oldest without reusing ids.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewFleetEvent } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const ev = (type: string, occurredAt: number, extra: Partial<NewFleetEvent> = {}): NewFleetEvent => ({
  type,
  occurredAt,
  workerId: undefined,
  sessionId: undefined,
  projectId: undefined,
  data: {},
  ...extra,
});

describe.each(cases)('EventsRepository ($name)', (store) => {
  let db: OpenedStore;

  beforeEach(async () => {
    db = await store.open();
  });

  afterEach(async () => {
    await db.close();
  });

  const events = () => db.repositories.events;

  it('starts empty: lastId is 0 and nothing is listed', async () => {
    expect(await events().lastId()).toBe(0);
    expect(await events().listAfter(0, 100)).toEqual([]);
  });

  it('appends with increasing ids and answers the stored event', async () => {
    const a = await events().append(ev('worker.connected', 10, { workerId: 'wrk_1', data: { epoch: 3 } }));
    const b = await events().append(ev('session.started', 20, { sessionId: 'session_1', projectId: 'prj_1' }));
    expect(a).toEqual({ ...ev('worker.connected', 10, { workerId: 'wrk_1', data: { epoch: 3 } }), eventId: a.eventId });
    expect(b.eventId).toBeGreaterThan(a.eventId);
    expect(await events().lastId()).toBe(b.eventId);
  });

  it('gives events appended at once increasing ids in the order they were appended', async () => {
    const appended = await Promise.all(Array.from({ length: 40 }, (_, i) => events().append(ev(`e${i}`, i))));
    const ids = appended.map((e) => e.eventId);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(40);
    expect((await events().listAfter(0, 100)).map((e) => e.type)).toEqual(appended.map((e) => e.type));
  });

  it('lists events after an id, oldest first, round-tripping every field (undefined ids stay undefined)', async () => {
    const stored = [
      await events().append(ev('a', 1, { workerId: 'wrk_1', data: { nested: { x: [1, 2] }, s: 'v', unicode: 'é ✓' } })),
      await events().append(ev('b', 2, { sessionId: 'session_2', projectId: 'prj_2' })),
      await events().append(ev('c', 3)),
    ];
    expect(await events().listAfter(0, 10)).toEqual(stored);
    expect(await events().listAfter(stored[0]!.eventId, 10)).toEqual(stored.slice(1));
    expect(await events().listAfter(stored[2]!.eventId, 10)).toEqual([]);
    const [read] = await events().listAfter(stored[1]!.eventId, 1);
    expect(read).toEqual({ eventId: stored[2]!.eventId, type: 'c', occurredAt: 3, workerId: undefined, sessionId: undefined, projectId: undefined, data: {} });
  });

  it('honours the limit', async () => {
    const stored = [];
    for (let i = 0; i < 7; i += 1) stored.push(await events().append(ev(`e${i}`, i)));
    expect(await events().listAfter(0, 3)).toEqual(stored.slice(0, 3));
    expect(await events().listAfter(stored[2]!.eventId, 3)).toEqual(stored.slice(3, 6));
    expect(await events().listAfter(stored[5]!.eventId, 3)).toEqual(stored.slice(6));
  });

  it('deletes at most limit events that occurred before the cutoff, oldest first, and never reuses their ids', async () => {
    const stored = [];
    for (const at of [30, 10, 20, 40, 50]) stored.push(await events().append(ev(`at${at}`, at)));
    expect(await events().deleteBefore(45, 2)).toBe(2);
    expect((await events().listAfter(0, 10)).map((e) => e.occurredAt)).toEqual([30, 40, 50]);
    expect(await events().deleteBefore(45, 10)).toBe(2);
    expect(await events().deleteBefore(45, 10)).toBe(0);
    expect((await events().listAfter(0, 10)).map((e) => e.occurredAt)).toEqual([50]);
    const last = stored.at(-1)!;
    await events().deleteBefore(1_000, 10);
    expect(await events().lastId()).toBe(0);
    const next = await events().append(ev('after', 60));
    expect(next.eventId).toBeGreaterThan(last.eventId);
  });
});
