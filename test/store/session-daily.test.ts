// SessionDailyRepository held to one contract in both stores: every session counted in its UTC
// creation day, each start-up in that same day's bucket, each day's median start-up within the
// bucket's 2.5 % (the lower middle of an even count), a window reading the whole days it touches;
// old days deleted a bounded batch at a time. The counts are recorded as the sessions repository
// records them (at creation, and on the move to Running); that it does so is
// control-plane/src/repositories/session-daily.test.ts's.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const DAY_MS = 24 * 60 * 60 * 1000;
const DAY0 = Date.UTC(2026, 10, 20);

describe.each(cases)('SessionDailyRepository ($name)', (store) => {
  let db: OpenedStore;

  beforeEach(async () => {
    db = await store.open();
  });

  afterEach(async () => {
    await db.close();
  });

  const daily = () => db.repositories.sessionDaily;

  /** A session created at `at` and, with a start-up, Running startupMs after its placement. */
  const session = async (at: number, startupMs?: number, projectId = 'prj_1') => {
    await daily().recordCreated(projectId, at);
    if (startupMs !== undefined) await daily().recordStartup(projectId, at, startupMs);
  };

  const count = async (sql: string) => Number((await db.rows<{ n: number }>(sql))[0]?.n);
  const within = (ms: number | null, expected: number) => Math.abs(ms! - expected) / expected;

  it("counts each day's sessions and the median of its start-ups (the lower middle of an even count); a day without start-ups has none", async () => {
    const startups = [12_000, 4_000, 30_000, 9_000, 15_000];
    for (const [i, ms] of startups.entries()) await session(DAY0 + i * 60_000, ms);
    await session(DAY0 + 3_600_000); // left in the line: counted, not started
    for (const [i, ms] of [6_000, 20_000].entries()) await session(DAY0 + DAY_MS + i, ms);
    await session(DAY0 + 2 * DAY_MS + 5);
    await session(DAY0, 1_000, 'prj_2');

    const days = await daily().days('prj_1', DAY0 + 3_000, DAY0 + 2 * DAY_MS + 1);
    expect(days.map(({ medianStartupMs: _m, ...d }) => d)).toEqual([
      { dayStartMs: DAY0, sessions: 6, started: 5 },
      { dayStartMs: DAY0 + DAY_MS, sessions: 2, started: 2 },
      { dayStartMs: DAY0 + 2 * DAY_MS, sessions: 1, started: 0 },
    ]);
    const [first, second, third] = days.map((d) => d.medianStartupMs);
    expect(within(first!, 12_000)).toBeLessThanOrEqual(0.025);
    expect(within(second!, 6_000)).toBeLessThanOrEqual(0.025);
    expect(third).toBeNull();
    // Whole milliseconds, as the SQLite twin rounds them.
    expect(days.every((d) => d.medianStartupMs === null || Number.isInteger(d.medianStartupMs))).toBe(true);
    // The window's days only: one ending the day before reads one day; another project's are its own.
    expect((await daily().days('prj_1', DAY0, DAY0 + DAY_MS - 1)).map((d) => d.sessions)).toEqual([6]);
    expect(await daily().days('prj_2', DAY0, DAY0 + 3 * DAY_MS)).toEqual([{ dayStartMs: DAY0, sessions: 1, started: 1, medianStartupMs: expect.any(Number) as number }]);
    expect(await daily().days('prj_none', DAY0, DAY0 + 3 * DAY_MS)).toEqual([]);
  });

  it('counts a start-up of 0 ms and below as 1 ms, and a day boundary by UTC', async () => {
    await session(DAY0 - 1, 0);
    await session(DAY0, -5);
    const days = await daily().days('prj_1', DAY0 - DAY_MS, DAY0);
    expect(days.map((d) => [d.dayStartMs, d.sessions, d.started])).toEqual([
      [DAY0 - DAY_MS, 1, 1],
      [DAY0, 1, 1],
    ]);
    expect(days.map((d) => d.medianStartupMs)).toEqual([1, 1]);
  });

  it('deletes days before a day, sessions then start-ups, a bounded batch at a time', async () => {
    const day0 = DAY0 / DAY_MS;
    for (let day = 0; day < 6; day += 1) await session(DAY0 + day * DAY_MS, 10_000 * (day + 1));
    await session(DAY0, 500_000, 'prj_2');
    // Days 0..3 of prj_1 and day 0 of prj_2: 5 rows of session_days and 5 of session_startup_days.
    expect(await daily().deleteDaysBefore(day0 + 4, 3)).toBe(3);
    expect(await daily().deleteDaysBefore(day0 + 4, 3)).toBe(3); // the last 2 days, then 1 start-up row
    expect(await count('SELECT COUNT(*) AS n FROM session_days')).toBe(2);
    expect(await count('SELECT COUNT(*) AS n FROM session_startup_days')).toBe(6);
    expect(await daily().deleteDaysBefore(day0 + 4, 10)).toBe(4);
    expect(await daily().deleteDaysBefore(day0 + 4, 10)).toBe(0);
    expect(await count('SELECT MIN(day) AS n FROM session_days')).toBe(day0 + 4);
    expect(await count('SELECT MIN(day) AS n FROM session_startup_days')).toBe(day0 + 4);
    expect((await daily().days('prj_1', DAY0, DAY0 + 10 * DAY_MS)).map((d) => d.dayStartMs)).toEqual([DAY0 + 4 * DAY_MS, DAY0 + 5 * DAY_MS]);
  });
});
