// The daily rollups over a real SQLite file: every session counted in its creation day by the
// sessions repository's own insert, each start-up by its move to Running (the same transaction),
// and each day's median start-up within the bucket's 2.5 %.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../db/database';
import { openRepositoryTestDb, seedSession, sessionRecord, type RepositoryTestDb } from './repository-test-db';
import { SqliteSessionDailyRepository, startupBucket, startupOfBucket } from './session-daily';
import { SqliteSessionsRepository } from './sessions';
import { DAY_MS } from './session-dimensions';

let testDb: RepositoryTestDb;
let db: Db;
let daily: SqliteSessionDailyRepository;

const DAY0 = Date.UTC(2026, 10, 20);

beforeEach(() => {
  testDb = openRepositoryTestDb('pf-session-daily-');
  db = testDb.db;
  daily = new SqliteSessionDailyRepository(db);
});

afterEach(() => testDb.remove());

/** A session created at `at` and, with a start-up, placed 1 s later and Running startupMs after that, through the repository's own writes. */
function session(id: string, at: number, startupMs?: number, projectId = 'prj_1'): void {
  const created = sessionRecord(id, at, { projectId });
  seedSession(db, created);
  if (startupMs === undefined) return;
  const sessions = new SqliteSessionsRepository(db);
  const placedAt = at + 1_000;
  const starting = { ...created, status: 'Starting' as const, placedAt, updatedAt: placedAt, assignedWorker: 'wrk_1' };
  sessions.update(starting, { sessionId: id, projectId, status: 'Starting', region: 'Europe' });
  const running = { ...starting, status: 'Running' as const, updatedAt: placedAt + startupMs };
  sessions.update(running, { sessionId: id, projectId, status: 'Running', region: 'Europe' });
  // A later write of the same Running session (no snapshot) counts nothing again.
  sessions.update({ ...running, updatedAt: running.updatedAt + 5 }, undefined);
}

describe('startupBucket', () => {
  it('puts every start-up within 2.5 % of its bucket, and orders buckets as start-ups', () => {
    let last = -1;
    for (let ms = 1; ms < 600_000; ms = Math.ceil(ms * 1.013) + 1) {
      const bucket = startupBucket(ms);
      expect(bucket).toBeGreaterThanOrEqual(last);
      last = bucket;
      expect(Math.abs(startupOfBucket(bucket) - ms) / ms).toBeLessThanOrEqual(0.025);
    }
    expect(startupBucket(0)).toBe(0);
    expect(startupBucket(-5)).toBe(0);
  });
});

describe('SqliteSessionDailyRepository', () => {
  it("counts each day's sessions and the median of its start-ups (the lower middle of an even count); a day without start-ups has none", () => {
    const startups = [12_000, 4_000, 30_000, 9_000, 15_000];
    startups.forEach((ms, i) => session(`s_a${i}`, DAY0 + i * 60_000, ms));
    session('s_a_left', DAY0 + 3_600_000); // left in the line: counted, not started
    [6_000, 20_000].forEach((ms, i) => session(`s_b${i}`, DAY0 + DAY_MS + i, ms));
    session('s_c', DAY0 + 2 * DAY_MS + 5);
    session('s_other', DAY0, 1_000, 'prj_2');

    const days = daily.days('prj_1', DAY0 + 3_000, DAY0 + 2 * DAY_MS + 1);
    expect(days.map(({ medianStartupMs: _m, ...d }) => d)).toEqual([
      { dayStartMs: DAY0, sessions: 6, started: 5 },
      { dayStartMs: DAY0 + DAY_MS, sessions: 2, started: 2 },
      { dayStartMs: DAY0 + 2 * DAY_MS, sessions: 1, started: 0 },
    ]);
    const [first, second, third] = days.map((d) => d.medianStartupMs);
    expect(Math.abs(first! - 12_000) / 12_000).toBeLessThanOrEqual(0.025);
    expect(Math.abs(second! - 6_000) / 6_000).toBeLessThanOrEqual(0.025);
    expect(third).toBeNull();
    // The window's days only: one ending the day before reads one day.
    expect(daily.days('prj_1', DAY0, DAY0 + DAY_MS - 1).map((d) => d.sessions)).toEqual([6]);
  });
});
