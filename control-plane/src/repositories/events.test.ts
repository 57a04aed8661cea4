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

// The repository's contract (ids, order, paging, retention) is held on both stores by
// test/store/events.test.ts; here, what only a SQLite file shows.
describe('SqliteEventsRepository', () => {
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
