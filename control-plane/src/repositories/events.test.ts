import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { SqliteEventsRepository, type NewFleetEvent } from './events';

let dir: string;
let db: Db;
let events: SqliteEventsRepository;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-events-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  events = new SqliteEventsRepository(db);
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const ev = (type: string, occurredAt: number, extra: Partial<NewFleetEvent> = {}): NewFleetEvent => ({
  type,
  occurredAt,
  workerId: undefined,
  sessionId: undefined,
  projectId: undefined,
  data: {},
  ...extra,
});

describe('SqliteEventsRepository', () => {
  it('starts empty: lastId is 0 and nothing is listed', () => {
    expect(events.lastId()).toBe(0);
    expect(events.listAfter(0, 100)).toEqual([]);
  });

  it('appends with increasing ids and returns the stored event', () => {
    const a = events.append(ev('worker.connected', 10, { workerId: 'wrk_1', data: { epoch: 3 } }));
    const b = events.append(ev('session.started', 20, { sessionId: 'session_1', projectId: 'prj_1' }));
    expect(a).toEqual({ ...ev('worker.connected', 10, { workerId: 'wrk_1', data: { epoch: 3 } }), eventId: a.eventId });
    expect(b.eventId).toBeGreaterThan(a.eventId);
    expect(events.lastId()).toBe(b.eventId);
  });

  it('lists events after an id, oldest first, round-tripping every field', () => {
    const stored = [
      events.append(ev('a', 1, { workerId: 'wrk_1', data: { nested: { x: [1, 2] }, s: 'v' } })),
      events.append(ev('b', 2, { sessionId: 'session_2', projectId: 'prj_2' })),
      events.append(ev('c', 3)),
    ];
    expect(events.listAfter(0, 10)).toEqual(stored);
    expect(events.listAfter(stored[0]!.eventId, 10)).toEqual(stored.slice(1));
    expect(events.listAfter(stored[2]!.eventId, 10)).toEqual([]);
  });

  it('keeps undefined ids undefined (not null) when read back', () => {
    events.append(ev('x', 1));
    const [read] = events.listAfter(0, 1);
    expect(read!.workerId).toBeUndefined();
    expect(read!.sessionId).toBeUndefined();
    expect(read!.projectId).toBeUndefined();
  });

  it('honours the limit', () => {
    const stored = Array.from({ length: 7 }, (_, i) => events.append(ev(`e${i}`, i)));
    expect(events.listAfter(0, 3)).toEqual(stored.slice(0, 3));
    expect(events.listAfter(stored[2]!.eventId, 3)).toEqual(stored.slice(3, 6));
    expect(events.listAfter(stored[5]!.eventId, 3)).toEqual(stored.slice(6));
  });

  it('persists across reopening the database', () => {
    const path = join(dir, 'cp.sqlite');
    const a = events.append(ev('persisted', 5, { data: { k: 'v' } }));
    db.close();
    db = openDatabase(path);
    events = new SqliteEventsRepository(db);
    expect(events.lastId()).toBe(a.eventId);
    expect(events.listAfter(0, 10)).toEqual([a]);
  });
});
