// The per-day rollup against the sessions themselves: every window, whole days or not, gives the
// counts a plain GROUP BY over the sessions gives.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../db/database';
import { openRepositoryTestDb, sessionRecord, type RepositoryTestDb } from './repository-test-db';
import { DAY_MS, SqliteSessionDimensionsRepository, WEEK_DAYS, weekRollupSql, type Breakdown, type BreakdownDimension, type ClientDimensions } from './session-dimensions';
import { SqliteSessionsRepository } from './sessions';

let testDb: RepositoryTestDb;
let db: Db;
let sessions: SqliteSessionsRepository;
let dimensions: SqliteSessionDimensionsRepository;
let seq = 0;

const D0 = Date.UTC(2026, 0, 10); // a UTC midnight

function add(createdAt: number, client: ClientDimensions | undefined, projectId = 'prj_1'): void {
  seq += 1;
  const s = sessionRecord(`session_${createdAt}_${seq}`, createdAt, { projectId, ...(client === undefined ? {} : { client }) });
  sessions.insert(s, { sessionId: s.sessionId, projectId, status: 'Enqueued', region: 'Europe' });
}

const LONDON: ClientDimensions = { browser: 'Chrome', os: 'Windows', deviceType: 'desktop', country: 'United Kingdom', countryCode: 'GB', city: 'London' };
const BERLIN: ClientDimensions = { browser: 'Firefox', os: 'Linux', deviceType: 'desktop', country: 'Germany', countryCode: 'DE', city: 'Berlin' };
const PHONE: ClientDimensions = { browser: 'Mobile Safari', os: 'iOS', deviceType: 'mobile', country: 'Germany', countryCode: 'DE', city: 'Munich' };
// Two cities of one name in two countries stay two entries.
const LONDON_CA: ClientDimensions = { browser: 'Chrome', os: 'Android', deviceType: 'tablet', country: 'Canada', countryCode: 'CA', city: 'London' };

const COLUMN: Record<BreakdownDimension, string> = { country: 'country', city: 'city', browser: 'browser', os: 'os', device: 'device_type' };

/** The breakdown computed the slow way, straight from the sessions. */
function bruteForce(projectId: string, dimension: BreakdownDimension, from: number, to: number, countryCode?: string): Breakdown {
  const col = COLUMN[dimension];
  const rows = db
    .prepare(
      `SELECT ${col} AS value, country_code AS code, country, COUNT(*) AS n FROM sessions
       WHERE project_id = ? AND created_at >= ? AND created_at < ? AND ${col} IS NOT NULL ${countryCode === undefined ? '' : 'AND country_code = ?'}
       GROUP BY ${dimension === 'city' ? 'country_code, ' : ''}${col}`,
    )
    .all(...[projectId, from, to, ...(countryCode === undefined ? [] : [countryCode])]) as { value: string; code: string; country: string; n: number }[];
  const entries = rows
    .map((r) => (dimension === 'city' ? { value: r.value, count: r.n, country: r.country, countryCode: r.code } : { value: r.value, count: r.n }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0) || ((a.countryCode ?? '') < (b.countryCode ?? '') ? -1 : 1));
  return { total: entries.reduce((sum, e) => sum + e.count, 0), entries };
}

beforeEach(() => {
  testDb = openRepositoryTestDb('pf-dimensions-');
  db = testDb.db;
  sessions = new SqliteSessionsRepository(db);
  dimensions = new SqliteSessionDimensionsRepository(db);
});

afterEach(() => testDb.remove());

describe('SqliteSessionDimensionsRepository.breakdown', () => {
  it('counts sessions by value, most first then by value, with total = sessions having a value', () => {
    add(D0 + 1000, LONDON);
    add(D0 + 2000, BERLIN);
    add(D0 + 3000, PHONE);
    add(D0 + 4000, LONDON_CA);
    add(D0 + 5000, { browser: 'Chrome' }); // no geo (a private address)
    add(D0 + 6000, undefined); // a bot: nothing
    const window = { projectId: 'prj_1', from: D0, to: D0 + DAY_MS };
    expect(dimensions.breakdown({ ...window, dimension: 'browser' })).toEqual({
      total: 5,
      entries: [
        { value: 'Chrome', count: 3 },
        { value: 'Firefox', count: 1 },
        { value: 'Mobile Safari', count: 1 },
      ],
    });
    expect(dimensions.breakdown({ ...window, dimension: 'country' })).toEqual({
      total: 4,
      entries: [
        { value: 'Germany', count: 2 },
        { value: 'Canada', count: 1 },
        { value: 'United Kingdom', count: 1 },
      ],
    });
    expect(dimensions.breakdown({ ...window, dimension: 'city' })).toEqual({
      total: 4,
      entries: [
        { value: 'Berlin', count: 1, country: 'Germany', countryCode: 'DE' },
        { value: 'London', count: 1, country: 'Canada', countryCode: 'CA' },
        { value: 'London', count: 1, country: 'United Kingdom', countryCode: 'GB' },
        { value: 'Munich', count: 1, country: 'Germany', countryCode: 'DE' },
      ],
    });
    expect(dimensions.breakdown({ ...window, dimension: 'city', countryCode: 'DE' })).toEqual({
      total: 2,
      entries: [
        { value: 'Berlin', count: 1, country: 'Germany', countryCode: 'DE' },
        { value: 'Munich', count: 1, country: 'Germany', countryCode: 'DE' },
      ],
    });
    expect(dimensions.breakdown({ ...window, dimension: 'device' }).entries).toEqual([
      { value: 'desktop', count: 2 },
      { value: 'mobile', count: 1 },
      { value: 'tablet', count: 1 },
    ]);
    // Another project's sessions are not counted; an empty or inverted window counts nothing.
    expect(dimensions.breakdown({ ...window, projectId: 'prj_2', dimension: 'os' })).toEqual({ total: 0, entries: [] });
    expect(dimensions.breakdown({ ...window, to: D0, dimension: 'os' })).toEqual({ total: 0, entries: [] });
    expect(() => dimensions.breakdown({ ...window, dimension: 'browser', countryCode: 'DE' })).toThrow(RangeError);
  });

  it('is exact at day and week edges: [from, to) whatever the hour; whole weeks and days from the rollups, edges from the sessions', () => {
    // Sessions right at, just before and just after each midnight of 24 days (three weeks and
    // more, whatever day of the week D0 is), and mid-day.
    const clients = [LONDON, BERLIN, PHONE, LONDON_CA, { browser: 'Chrome', os: 'Windows' }];
    let i = 0;
    for (let day = 0; day < 24; day += 1) {
      for (const offset of [-1, 0, 1, DAY_MS / 2, DAY_MS / 2 + 1]) add(D0 + day * DAY_MS + offset, clients[i++ % clients.length]);
    }
    add(D0 + DAY_MS, LONDON, 'prj_2');
    // Window edges: around D0's midnight, mid-days, and every day and week boundary up to day 25.
    const firstWeekDay = Math.ceil(D0 / DAY_MS / WEEK_DAYS) * WEEK_DAYS - D0 / DAY_MS;
    const edges = [
      ...new Set([-DAY_MS, -1, 0, 1, DAY_MS / 2, DAY_MS - 1, DAY_MS, DAY_MS + 1, 3 * DAY_MS + 7, 11 * DAY_MS + DAY_MS / 2, 25 * DAY_MS].concat(
        [0, 1, 2, 3].flatMap((w) => [-1, 0, 1].map((d) => (firstWeekDay + w * WEEK_DAYS + d) * DAY_MS)),
        [0, 1, 2].map((w) => (firstWeekDay + w * WEEK_DAYS) * DAY_MS + 5),
      )),
    ];
    let windows = 0;
    for (const a of edges) {
      for (const b of edges) {
        if (b < a) continue;
        for (const dimension of ['country', 'city', 'browser', 'os', 'device'] as const) {
          const q = { projectId: 'prj_1', dimension, from: D0 + a, to: D0 + b };
          expect(dimensions.breakdown(q), `${dimension} [${a}, ${b})`).toEqual(bruteForce('prj_1', dimension, q.from, q.to));
          windows += 1;
        }
        const city = { projectId: 'prj_1', dimension: 'city' as const, from: D0 + a, to: D0 + b, countryCode: 'DE' };
        expect(dimensions.breakdown(city)).toEqual(bruteForce('prj_1', 'city', city.from, city.to, 'DE'));
      }
    }
    expect(windows).toBeGreaterThan(1500);
    // The whole days really come from the rollup: one row per day and value, not one per session.
    const distinct = db.prepare("SELECT COUNT(*) AS n FROM (SELECT DISTINCT created_at / 86400000, browser FROM sessions WHERE project_id = 'prj_1' AND browser IS NOT NULL)").get() as { n: number };
    expect(db.prepare("SELECT SUM(sessions) AS n, COUNT(*) AS rows FROM session_dimension_days WHERE project_id = 'prj_1' AND dimension = 'browser'").get()).toEqual({
      n: 120,
      rows: distinct.n,
    });
    expect(distinct.n).toBeLessThan(120);
    expect(db.prepare("SELECT SUM(sessions) AS n FROM session_dimension_weeks WHERE project_id = 'prj_1' AND dimension = 'browser'").get()).toEqual({ n: 120 });
  });

  it('reads the rollup for whole days: a day whose sessions are gone still counts (rows are the source)', () => {
    add(D0 + 10, LONDON);
    add(D0 + 20, LONDON);
    db.prepare('DELETE FROM session_snapshots').run();
    db.prepare('DELETE FROM sessions').run();
    expect(dimensions.breakdown({ projectId: 'prj_1', dimension: 'browser', from: D0, to: D0 + DAY_MS })).toEqual({ total: 2, entries: [{ value: 'Chrome', count: 2 }] });
    // ...while a partial day is counted from the sessions themselves.
    expect(dimensions.breakdown({ projectId: 'prj_1', dimension: 'browser', from: D0, to: D0 + DAY_MS - 1 })).toEqual({ total: 0, entries: [] });
  });

  it('groups the week rollup straight off its key: no sort, whatever the statistics say', () => {
    const plan = (byCountry = false) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${weekRollupSql(byCountry)}`).all('prj_1', 'city', 1, 2, ...(byCountry ? ['DE'] : [])) as { detail: string }[]).map((r) => r.detail).join(' | ');
    for (const analyzed of [false, true]) {
      if (analyzed) {
        for (let day = 0; day < 60; day += 1) add(D0 + day * DAY_MS, LONDON);
        db.exec('ANALYZE');
      }
      expect(plan()).toContain('USING PRIMARY KEY (project_id=? AND dimension=?)');
      expect(plan()).not.toContain('TEMP B-TREE');
      expect(plan(true)).toContain('USING PRIMARY KEY (project_id=? AND dimension=? AND country_code=?)');
      expect(plan(true)).not.toContain('TEMP B-TREE');
    }
  });

  it('deletes rollup days before a day and the weeks that ended by then, a bounded batch at a time', () => {
    for (let day = 0; day < 21; day += 1) add(D0 + day * DAY_MS, LONDON);
    const rows = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    const days = rows('session_dimension_days');
    const weeks = rows('session_dimension_weeks');
    const before = Math.floor(D0 / DAY_MS) + 10;
    // Weeks ending by `before`: (week + 1) * 7 <= before.
    const endedWeeks = (db.prepare('SELECT COUNT(*) AS n FROM session_dimension_weeks WHERE (week + 1) * 7 <= ?').get(before) as { n: number }).n;
    expect(dimensions.deleteDaysBefore(before, 3)).toBe(3);
    let deleted = 3;
    for (let n = dimensions.deleteDaysBefore(before, 7); n > 0; n = dimensions.deleteDaysBefore(before, 7)) {
      expect(n).toBeLessThanOrEqual(7);
      deleted += n;
    }
    expect(deleted).toBe(10 * 5 + endedWeeks);
    expect(rows('session_dimension_days')).toBe(days - 50);
    expect(rows('session_dimension_weeks')).toBe(weeks - endedWeeks);
    expect((db.prepare('SELECT MIN(day) AS d FROM session_dimension_days').get() as { d: number }).d).toBe(before);
    expect((db.prepare('SELECT MIN(week) AS w FROM session_dimension_weeks').get() as { w: number }).w).toBe(Math.floor(before / WEEK_DAYS));
  });
});

describe('the session row keeps its client dimensions', () => {
  it('reads them back with the session, and none for a session without', () => {
    add(D0, LONDON);
    add(D0 + 1, undefined);
    const [a, b] = sessions.list({ projectId: 'prj_1', limit: 10 }).reverse();
    expect(a!.client).toEqual(LONDON);
    expect(b!.client).toBeUndefined();
  });
});
