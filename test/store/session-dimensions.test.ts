// SessionDimensionsRepository held to one contract in both stores: every window, whole days or
// not, gives the counts a plain GROUP BY over the sessions gives (whole weeks and days from the
// rollups, the partial edge days from the sessions), sorted by count, then value, then country
// code; rollup rows are deleted a bounded batch at a time. Sessions are written as the sessions
// repository writes them: the row, and record() counting it. (The query plans SQLite walks are
// control-plane/src/repositories/session-dimensions.test.ts's.)
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClientDimensions, PostgresRepositories } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

type Breakdown = Awaited<ReturnType<PostgresRepositories['sessionDimensions']['breakdown']>>;
type BreakdownQuery = Parameters<PostgresRepositories['sessionDimensions']['breakdown']>[0];
type BreakdownDimension = BreakdownQuery['dimension'];

const DAY_MS = 24 * 60 * 60 * 1000;
const WEEK_DAYS = 7;
const D0 = Date.UTC(2026, 0, 10); // a UTC midnight
const DIMENSIONS = ['country', 'city', 'browser', 'os', 'device'] as const;
const COLUMN: Record<BreakdownDimension, string> = { country: 'country', city: 'city', browser: 'browser', os: 'os', device: 'device_type' };

const LONDON: ClientDimensions = { browser: 'Chrome', os: 'Windows', deviceType: 'desktop', country: 'United Kingdom', countryCode: 'GB', city: 'London' };
const BERLIN: ClientDimensions = { browser: 'Firefox', os: 'Linux', deviceType: 'desktop', country: 'Germany', countryCode: 'DE', city: 'Berlin' };
const PHONE: ClientDimensions = { browser: 'Mobile Safari', os: 'iOS', deviceType: 'mobile', country: 'Germany', countryCode: 'DE', city: 'Munich' };
// Two cities of one name in two countries stay two entries.
const LONDON_CA: ClientDimensions = { browser: 'Chrome', os: 'Android', deviceType: 'tablet', country: 'Canada', countryCode: 'CA', city: 'London' };

const byCountThenValue = (a: { count: number; value: string; countryCode?: string }, b: { count: number; value: string; countryCode?: string }) =>
  b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0) || ((a.countryCode ?? '') < (b.countryCode ?? '') ? -1 : 1);

describe.each(cases)('SessionDimensionsRepository ($name)', (store) => {
  let db: OpenedStore;
  let seq = 0;

  /** Inserts one row; SQL both dialects read alike (RETURNING so SQLite's probe, which reads rows, accepts an INSERT). */
  const insert = async (table: string, values: Record<string, string | number | null>) => {
    const columns = Object.keys(values);
    await db.rows(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1 AS inserted`, Object.values(values));
  };

  /** A session of the project created at createdAt by that client, counted in the rollups as the sessions repository's insert counts it. */
  const add = async (createdAt: number, client: ClientDimensions | undefined, projectId = 'prj_1') => {
    seq += 1;
    await insert('sessions', {
      id: `session_${createdAt}_${seq}`,
      project_id: projectId,
      region: 'europe',
      status: 'Enqueued',
      created_at: createdAt,
      updated_at: createdAt,
      browser: client?.browser ?? null,
      os: client?.os ?? null,
      device_type: client?.deviceType ?? null,
      country: client?.country ?? null,
      country_code: client?.countryCode ?? null,
      city: client?.city ?? null,
    });
    if (client !== undefined) await dimensions().record(projectId, createdAt, client);
  };

  const count = async (sql: string, values: readonly unknown[] = []) => Number((await db.rows<{ n: number }>(sql, values))[0]?.n);

  /** The breakdown computed the slow way, straight from the sessions. */
  const bruteForce = async (projectId: string, dimension: BreakdownDimension, from: number, to: number, countryCode?: string): Promise<Breakdown> => {
    const col = COLUMN[dimension];
    const rows = await db.rows<{ value: string; code: string; country: string; n: number }>(
      `SELECT ${col} AS value, max(country_code) AS code, max(country) AS country, COUNT(*) AS n FROM sessions
       WHERE project_id = ? AND created_at >= ? AND created_at < ? AND ${col} IS NOT NULL ${countryCode === undefined ? '' : 'AND country_code = ?'}
       GROUP BY ${dimension === 'city' ? 'country_code, ' : ''}${col}`,
      [projectId, from, to, ...(countryCode === undefined ? [] : [countryCode])],
    );
    const entries = rows
      .map((r) => (dimension === 'city' ? { value: r.value, count: Number(r.n), country: r.country, countryCode: r.code } : { value: r.value, count: Number(r.n) }))
      .sort(byCountThenValue);
    return { total: entries.reduce((sum, e) => sum + e.count, 0), entries };
  };

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_1', email: 'u@example.com', createdAt: 1 });
    for (const id of ['prj_1', 'prj_2']) await insert('projects', { id, owner_user_id: 'usr_1', name: 'p', region: 'europe', created_at: 1 });
  });

  afterEach(async () => {
    await db.close();
  });

  const dimensions = () => db.repositories.sessionDimensions;

  it('counts sessions by value, most first then by value, with total = sessions having a value', async () => {
    await add(D0 + 1000, LONDON);
    await add(D0 + 2000, BERLIN);
    await add(D0 + 3000, PHONE);
    await add(D0 + 4000, LONDON_CA);
    await add(D0 + 5000, { browser: 'Chrome' }); // no geo (a private address)
    await add(D0 + 6000, undefined); // a bot: nothing
    const window = { projectId: 'prj_1', from: D0, to: D0 + DAY_MS };
    expect(await dimensions().breakdown({ ...window, dimension: 'browser' })).toEqual({
      total: 5,
      entries: [
        { value: 'Chrome', count: 3 },
        { value: 'Firefox', count: 1 },
        { value: 'Mobile Safari', count: 1 },
      ],
    });
    expect(await dimensions().breakdown({ ...window, dimension: 'country' })).toEqual({
      total: 4,
      entries: [
        { value: 'Germany', count: 2 },
        { value: 'Canada', count: 1 },
        { value: 'United Kingdom', count: 1 },
      ],
    });
    expect(await dimensions().breakdown({ ...window, dimension: 'city' })).toEqual({
      total: 4,
      entries: [
        { value: 'Berlin', count: 1, country: 'Germany', countryCode: 'DE' },
        { value: 'London', count: 1, country: 'Canada', countryCode: 'CA' },
        { value: 'London', count: 1, country: 'United Kingdom', countryCode: 'GB' },
        { value: 'Munich', count: 1, country: 'Germany', countryCode: 'DE' },
      ],
    });
    expect(await dimensions().breakdown({ ...window, dimension: 'city', countryCode: 'DE' })).toEqual({
      total: 2,
      entries: [
        { value: 'Berlin', count: 1, country: 'Germany', countryCode: 'DE' },
        { value: 'Munich', count: 1, country: 'Germany', countryCode: 'DE' },
      ],
    });
    expect((await dimensions().breakdown({ ...window, dimension: 'device' })).entries).toEqual([
      { value: 'desktop', count: 2 },
      { value: 'mobile', count: 1 },
      { value: 'tablet', count: 1 },
    ]);
    // Another project's sessions are not counted; an empty or inverted window counts nothing.
    expect(await dimensions().breakdown({ ...window, projectId: 'prj_2', dimension: 'os' })).toEqual({ total: 0, entries: [] });
    expect(await dimensions().breakdown({ ...window, to: D0, dimension: 'os' })).toEqual({ total: 0, entries: [] });
    expect(await dimensions().breakdown({ ...window, from: D0 + DAY_MS, to: D0, dimension: 'os' })).toEqual({ total: 0, entries: [] });
    await expect(dimensions().breakdown({ ...window, dimension: 'browser', countryCode: 'DE' })).rejects.toThrow(RangeError);
  });

  it('orders values by code point, not by any locale, and keeps each value exactly as given', async () => {
    // A locale would put 'a' before 'B' and 'é' beside 'e'; byte (code point) order does not.
    for (const browser of ['b', 'B', 'a', 'é', 'e', 'Z', "O'Brien \"quoted\""]) await add(D0 + 1000, { browser });
    const entries = (await dimensions().breakdown({ projectId: 'prj_1', dimension: 'browser', from: D0, to: D0 + DAY_MS })).entries.map((e) => e.value);
    expect(entries).toEqual(['B', "O'Brien \"quoted\"", 'Z', 'a', 'b', 'e', 'é']);
  });

  it('is exact at day and week edges: [from, to) whatever the hour; whole weeks and days from the rollups, edges from the sessions', async () => {
    // Sessions right at, just before and just after each midnight of 24 days (three weeks and
    // more, whatever day of the week D0 is), and mid-day.
    const clients = [LONDON, BERLIN, PHONE, LONDON_CA, { browser: 'Chrome', os: 'Windows' }];
    let i = 0;
    for (let day = 0; day < 24; day += 1) {
      for (const offset of [-1, 0, 1, DAY_MS / 2, DAY_MS / 2 + 1]) await add(D0 + day * DAY_MS + offset, clients[i++ % clients.length]);
    }
    await add(D0 + DAY_MS, LONDON, 'prj_2');
    // Window edges: around D0's midnight, mid-days, and every day and week boundary up to day 25.
    const firstWeekDay = Math.ceil(D0 / DAY_MS / WEEK_DAYS) * WEEK_DAYS - D0 / DAY_MS;
    const edges = [
      ...new Set(
        [-DAY_MS, -1, 0, 1, DAY_MS / 2, DAY_MS - 1, DAY_MS, DAY_MS + 1, 3 * DAY_MS + 7, 11 * DAY_MS + DAY_MS / 2, 25 * DAY_MS].concat(
          [0, 1, 2, 3].flatMap((w) => [-1, 0, 1].map((d) => (firstWeekDay + w * WEEK_DAYS + d) * DAY_MS)),
          [0, 1, 2].map((w) => (firstWeekDay + w * WEEK_DAYS) * DAY_MS + 5),
        ),
      ),
    ];
    let windows = 0;
    for (const a of edges) {
      for (const b of edges) {
        if (b < a) continue;
        const checks: BreakdownQuery[] = DIMENSIONS.map((dimension) => ({ projectId: 'prj_1', dimension, from: D0 + a, to: D0 + b }));
        checks.push({ projectId: 'prj_1', dimension: 'city', from: D0 + a, to: D0 + b, countryCode: 'DE' });
        // A window's reads at once: each pair is still compared on its own.
        await Promise.all(
          checks.map(async (q) => {
            expect(await dimensions().breakdown(q), `${q.dimension} ${q.countryCode ?? ''} [${a}, ${b})`).toEqual(await bruteForce('prj_1', q.dimension, q.from, q.to, q.countryCode));
          }),
        );
        windows += DIMENSIONS.length;
      }
    }
    expect(windows).toBeGreaterThan(1500);
    // The whole days really come from the rollup: one row per day and value, not one per session.
    const distinct = await count("SELECT COUNT(*) AS n FROM (SELECT DISTINCT created_at / 86400000, browser FROM sessions WHERE project_id = 'prj_1' AND browser IS NOT NULL) AS d");
    expect(await count("SELECT SUM(sessions) AS n FROM session_dimension_days WHERE project_id = 'prj_1' AND dimension = 'browser'")).toBe(120);
    expect(await count("SELECT COUNT(*) AS n FROM session_dimension_days WHERE project_id = 'prj_1' AND dimension = 'browser'")).toBe(distinct);
    expect(distinct).toBeLessThan(120);
    expect(await count("SELECT SUM(sessions) AS n FROM session_dimension_weeks WHERE project_id = 'prj_1' AND dimension = 'browser'")).toBe(120);
  });

  it('reads the rollup for whole days: a day whose sessions are gone still counts (rows are the source)', async () => {
    await add(D0 + 10, LONDON);
    await add(D0 + 20, LONDON);
    await db.rows('DELETE FROM sessions RETURNING id');
    expect(await dimensions().breakdown({ projectId: 'prj_1', dimension: 'browser', from: D0, to: D0 + DAY_MS })).toEqual({ total: 2, entries: [{ value: 'Chrome', count: 2 }] });
    // ...while a partial day is counted from the sessions themselves.
    expect(await dimensions().breakdown({ projectId: 'prj_1', dimension: 'browser', from: D0, to: D0 + DAY_MS - 1 })).toEqual({ total: 0, entries: [] });
  });

  it("names a city's country wherever one of the window's parts knows it", async () => {
    // A whole day of Berlin from the rollup whose country name was unknown (its code alone), and an
    // edge-day session of Berlin in Germany: one entry, named by the first part that names it.
    await add(D0 + 10, { city: 'Berlin', countryCode: 'DE' });
    await add(D0 + DAY_MS + 10, BERLIN);
    expect(await dimensions().breakdown({ projectId: 'prj_1', dimension: 'city', from: D0, to: D0 + DAY_MS + 20 })).toEqual({
      total: 2,
      entries: [{ value: 'Berlin', count: 2, country: 'Germany', countryCode: 'DE' }],
    });
  });

  it('deletes rollup days before a day and the weeks that ended by then, a bounded batch at a time', async () => {
    for (let day = 0; day < 21; day += 1) await add(D0 + day * DAY_MS, LONDON);
    const days = await count('SELECT COUNT(*) AS n FROM session_dimension_days');
    const weeks = await count('SELECT COUNT(*) AS n FROM session_dimension_weeks');
    const before = Math.floor(D0 / DAY_MS) + 10;
    // Weeks ending by `before`: (week + 1) * 7 <= before.
    const endedWeeks = await count('SELECT COUNT(*) AS n FROM session_dimension_weeks WHERE (week + 1) * 7 <= ?', [before]);
    expect(await dimensions().deleteDaysBefore(before, 3)).toBe(3);
    let deleted = 3;
    for (let n = await dimensions().deleteDaysBefore(before, 7); n > 0; n = await dimensions().deleteDaysBefore(before, 7)) {
      expect(n).toBeLessThanOrEqual(7);
      deleted += n;
    }
    expect(deleted).toBe(10 * 5 + endedWeeks);
    expect(await count('SELECT COUNT(*) AS n FROM session_dimension_days')).toBe(days - 50);
    expect(await count('SELECT COUNT(*) AS n FROM session_dimension_weeks')).toBe(weeks - endedWeeks);
    expect(await count('SELECT MIN(day) AS n FROM session_dimension_days')).toBe(before);
    expect(await count('SELECT MIN(week) AS n FROM session_dimension_weeks')).toBe(Math.floor(before / WEEK_DAYS));
  });
});
