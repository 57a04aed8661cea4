// The client dimensions of sessions (browser, os, device type, country, city) counted per UTC day
// and per week of 7 days: session_dimension_days and session_dimension_weeks are kept current in
// the transaction that inserts a session. A breakdown over 92 days reads 13 weeks and at most 12
// days of rollup rows, whatever the number of sessions; the partial days at a window's edges (one
// that does not start or end on a UTC day boundary) are counted from the sessions table through
// its (project_id, created_at) index, so every window is exact.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

/** The breakdown dimensions, as the analytics API names them. */
export const BREAKDOWN_DIMENSIONS = ['country', 'city', 'browser', 'os', 'device'] as const;
export type BreakdownDimension = (typeof BREAKDOWN_DIMENSIONS)[number];

/** One UTC day in ms; a rollup row's day is floor(created_at / DAY_MS). */
export const DAY_MS = 24 * 60 * 60 * 1000;
/** Days in a rollup week; a week row's week is floor(day / WEEK_DAYS) (weeks start on Thursdays, as day 0 did). */
export const WEEK_DAYS = 7;

/** What the server derived of a session's viewer when the session was created; absent = unknown. */
export interface ClientDimensions {
  browser?: string;
  os?: string;
  /** `desktop`, `mobile`, `tablet`, `smarttv`, `console`, `wearable`, `embedded`, `xr`. */
  deviceType?: string;
  /** Country name in English (`Germany`). */
  country?: string;
  /** ISO 3166-1 alpha-2 (`DE`). */
  countryCode?: string;
  city?: string;
}

export interface BreakdownQuery {
  projectId: string;
  dimension: BreakdownDimension;
  /** Window start, ms since the epoch, inclusive (sessions with createdAt >= from). */
  from: number;
  /** Window end, ms since the epoch, exclusive (sessions with createdAt < to). */
  to: number;
  /** Only sessions of this country (ISO alpha-2, compared as given: pass it upper-case). Only with `city` or `country`. */
  countryCode?: string;
}

export interface BreakdownEntry {
  value: string;
  /** Sessions with that value in the window. */
  count: number;
  /** Only for the `city` dimension: the city's country name and code. */
  country?: string;
  countryCode?: string;
}

export interface Breakdown {
  /** Sessions in the window having a value for the dimension (the sum of the entries' counts). */
  total: number;
  /** By count descending, then value ascending (then countryCode for two cities of one name). */
  entries: BreakdownEntry[];
}

export interface SessionDimensionsRepository {
  /** Groups the project's sessions created in [from, to) by one dimension. Throws RangeError for countryCode with browser, os or device. */
  breakdown(query: BreakdownQuery): Promise<Breakdown>;
  /** Counts a new session in its day's rollup rows; called inside the transaction inserting the session. */
  record(projectId: string, createdAt: number, dims: ClientDimensions): Promise<void>;
  /** Deletes at most limit rollup rows of days before beforeDay (a day number) and of weeks ending by then; returns how many. */
  deleteDaysBefore(beforeDay: number, limit: number): Promise<number>;
}

/** The sessions column holding each dimension. */
export const DIMENSION_COLUMNS: Record<BreakdownDimension, string> = {
  country: 'country',
  city: 'city',
  browser: 'browser',
  os: 'os',
  device: 'device_type',
};

interface CountRow {
  value: string;
  country_code: string;
  country: string;
  n: number;
}

/** The rollup rows one session adds: [dimension, value, countryCode, country]. */
export function rollupKeys(dims: ClientDimensions): [BreakdownDimension, string, string, string][] {
  const keys: [BreakdownDimension, string, string, string][] = [];
  const code = dims.countryCode ?? '';
  const country = dims.country ?? '';
  if (dims.country) keys.push(['country', dims.country, code, country]);
  if (dims.city) keys.push(['city', dims.city, code, country]);
  if (dims.browser) keys.push(['browser', dims.browser, '', '']);
  if (dims.os) keys.push(['os', dims.os, '', '']);
  if (dims.deviceType) keys.push(['device', dims.deviceType, '', '']);
  return keys;
}

/**
 * The week rollup read of a breakdown: the key (project_id, dimension, country_code, value, week)
 * walked in order, so the GROUP BY needs no sort. `+week` keeps the planner off
 * session_dimension_weeks_week (retention's index), which would read the weeks in week order and
 * sort them all.
 */
export function weekRollupSql(byCountry: boolean): string {
  return `SELECT value, country_code, max(country) AS country, SUM(sessions) AS n FROM session_dimension_weeks
    WHERE project_id = ? AND dimension = ? AND +week >= ? AND +week < ?${byCountry ? ' AND country_code = ?' : ''}
    GROUP BY country_code, value`;
}

/** The day rollup read: the days (at most 6 on each side of the weeks) through the day-first key. */
function dayRollupSql(byCountry: boolean): string {
  return `SELECT value, country_code, max(country) AS country, SUM(sessions) AS n FROM session_dimension_days
    WHERE project_id = ? AND dimension = ? AND day >= ? AND day < ?${byCountry ? ' AND country_code = ?' : ''}
    GROUP BY country_code, value`;
}

export class SqliteSessionDimensionsRepository implements Sync<SessionDimensionsRepository> {
  private readonly stmts;

  constructor(db: Db) {
    // Partial edge days: the sessions of [from, to) through sessions_project_created.
    const edge = (dimension: BreakdownDimension, byCountry: boolean) => {
      const col = DIMENSION_COLUMNS[dimension];
      const geo = dimension === 'country' || dimension === 'city';
      return db.prepare(
        `SELECT ${col} AS value, ${geo ? "coalesce(country_code, '')" : "''"} AS country_code, ${geo ? "coalesce(max(country), '')" : "''"} AS country,
           COUNT(*) AS n FROM sessions
         WHERE project_id = ? AND pooled = 0 AND created_at >= ? AND created_at < ? AND ${col} IS NOT NULL AND ${col} <> ''${byCountry ? ' AND country_code = ?' : ''}
         GROUP BY ${geo ? "coalesce(country_code, ''), " : ''}${col}`,
      );
    };
    const edges = (byCountry: boolean) =>
      Object.fromEntries(BREAKDOWN_DIMENSIONS.map((d) => [d, edge(d, byCountry)])) as Record<BreakdownDimension, ReturnType<typeof edge>>;
    this.stmts = {
      days: db.prepare(dayRollupSql(false)),
      daysByCountry: db.prepare(dayRollupSql(true)),
      weeks: db.prepare(weekRollupSql(false)),
      weeksByCountry: db.prepare(weekRollupSql(true)),
      edge: edges(false),
      edgeByCountry: edges(true),
      upsertDay: db.prepare(
        `INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions) VALUES (?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT (project_id, dimension, day, country_code, value) DO UPDATE SET sessions = sessions + 1`,
      ),
      upsertWeek: db.prepare(
        `INSERT INTO session_dimension_weeks (project_id, dimension, country_code, value, week, country, sessions) VALUES (?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT (project_id, dimension, country_code, value, week) DO UPDATE SET sessions = sessions + 1`,
      ),
      deleteDays: db.prepare(
        `DELETE FROM session_dimension_days WHERE (project_id, dimension, day, country_code, value) IN
           (SELECT project_id, dimension, day, country_code, value FROM session_dimension_days WHERE day < ? LIMIT ?)`,
      ),
      deleteWeeks: db.prepare(
        `DELETE FROM session_dimension_weeks WHERE (project_id, dimension, country_code, value, week) IN
           (SELECT project_id, dimension, country_code, value, week FROM session_dimension_weeks WHERE week < ? LIMIT ?)`,
      ),
    };
  }

  breakdown(query: BreakdownQuery): Breakdown {
    const { projectId, dimension, from, to, countryCode } = query;
    const byCountry = countryCode !== undefined;
    if (byCountry && dimension !== 'city' && dimension !== 'country') {
      throw new RangeError(`countryCode filters only the city and country dimensions, not ${dimension}`);
    }
    const counts = new Map<string, CountRow>();
    const add = (rows: CountRow[]) => {
      for (const r of rows) {
        // A city is told apart by its country; every other value by itself.
        const key = dimension === 'city' ? `${r.country_code}\u0000${r.value}` : r.value;
        const seen = counts.get(key);
        if (seen === undefined) counts.set(key, { ...r });
        else {
          seen.n += r.n;
          if (seen.country === '') seen.country = r.country;
        }
      }
    };
    const edgeRows = (start: number, end: number) => {
      if (start >= end) return;
      const stmt = byCountry ? this.stmts.edgeByCountry[dimension] : this.stmts.edge[dimension];
      add((byCountry ? stmt.all(projectId, start, end, countryCode) : stmt.all(projectId, start, end)) as CountRow[]);
    };
    const rollupRows = (weeks: boolean, start: number, end: number) => {
      if (start >= end) return;
      const stmt = weeks ? (byCountry ? this.stmts.weeksByCountry : this.stmts.weeks) : byCountry ? this.stmts.daysByCountry : this.stmts.days;
      add((byCountry ? stmt.all(projectId, dimension, start, end, countryCode) : stmt.all(projectId, dimension, start, end)) as CountRow[]);
    };
    if (to > from) {
      // Whole weeks inside the window from the week rollup, whole days beside them from the day
      // rollup, the partial days at the edges from the sessions.
      const firstDay = Math.ceil(from / DAY_MS);
      const endDay = Math.floor(to / DAY_MS);
      if (firstDay < endDay) {
        const firstWeek = Math.ceil(firstDay / WEEK_DAYS);
        const endWeek = Math.floor(endDay / WEEK_DAYS);
        if (firstWeek < endWeek) {
          rollupRows(true, firstWeek, endWeek);
          rollupRows(false, firstDay, firstWeek * WEEK_DAYS);
          rollupRows(false, endWeek * WEEK_DAYS, endDay);
        } else {
          rollupRows(false, firstDay, endDay);
        }
        edgeRows(from, firstDay * DAY_MS);
        edgeRows(endDay * DAY_MS, to);
      } else {
        edgeRows(from, to);
      }
    }
    let total = 0;
    const entries: BreakdownEntry[] = [];
    for (const r of counts.values()) {
      total += r.n;
      entries.push(dimension === 'city' ? { value: r.value, count: r.n, country: r.country, countryCode: r.country_code } : { value: r.value, count: r.n });
    }
    entries.sort(
      (a, b) => b.count - a.count || compare(a.value, b.value) || compare(a.countryCode ?? '', b.countryCode ?? ''),
    );
    return { total, entries };
  }

  record(projectId: string, createdAt: number, dims: ClientDimensions): void {
    const day = Math.floor(createdAt / DAY_MS);
    const week = Math.floor(day / WEEK_DAYS);
    for (const [dimension, value, code, country] of rollupKeys(dims)) {
      this.stmts.upsertDay.run(projectId, dimension, day, code, value, country);
      this.stmts.upsertWeek.run(projectId, dimension, code, value, week, country);
    }
  }

  deleteDaysBefore(beforeDay: number, limit: number): number {
    const days = this.stmts.deleteDays.run(beforeDay, limit).changes;
    if (days >= limit) return days;
    // Weeks that ended by beforeDay: (week + 1) * 7 <= beforeDay.
    return days + this.stmts.deleteWeeks.run(Math.floor(beforeDay / WEEK_DAYS), limit - days).changes;
  }
}

/** Code-point order, the same on every machine (no locale). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
