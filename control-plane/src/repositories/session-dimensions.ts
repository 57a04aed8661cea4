// The client dimensions of sessions (browser, os, device type, country, city) counted per UTC day:
// the table session_dimension_days is kept current in the transaction that inserts a session, so a
// breakdown over 92 days reads at most 92 x values rollup rows, whatever the number of sessions.
// A window that does not start or end on a UTC day boundary is still exact: its partial edge days
// are counted from the sessions table through its (project_id, created_at) index.
import type { Db } from '../db/database';

/** The breakdown dimensions, as the analytics API names them. */
export const BREAKDOWN_DIMENSIONS = ['country', 'city', 'browser', 'os', 'device'] as const;
export type BreakdownDimension = (typeof BREAKDOWN_DIMENSIONS)[number];

/** One UTC day in ms; a rollup row's day is floor(created_at / DAY_MS). */
export const DAY_MS = 24 * 60 * 60 * 1000;

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
  breakdown(query: BreakdownQuery): Breakdown;
  /** Counts a new session in its day's rollup rows; called inside the transaction inserting the session. */
  record(projectId: string, createdAt: number, dims: ClientDimensions): void;
  /** Deletes at most limit rollup rows of days before beforeDay (a day number); returns how many. */
  deleteDaysBefore(beforeDay: number, limit: number): number;
}

/** The sessions column holding each dimension. */
const COLUMN: Record<BreakdownDimension, string> = {
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
function rollupKeys(dims: ClientDimensions): [BreakdownDimension, string, string, string][] {
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
 * The rollup read of a breakdown: the key (project_id, dimension, country_code, value, day) walked
 * in order, so the GROUP BY needs no sort. `+day` keeps the planner off session_dimension_days_day
 * (retention's index), which would read the window's days in day order and sort them all.
 */
export function rollupSql(byCountry: boolean): string {
  return `SELECT value, country_code, max(country) AS country, SUM(sessions) AS n FROM session_dimension_days
    WHERE project_id = ? AND dimension = ? AND +day >= ? AND +day < ?${byCountry ? ' AND country_code = ?' : ''}
    GROUP BY country_code, value`;
}

export class SqliteSessionDimensionsRepository implements SessionDimensionsRepository {
  private readonly stmts;

  constructor(db: Db) {
    const rollup = (byCountry: boolean) => db.prepare(rollupSql(byCountry));
    // Partial edge days: the sessions of [from, to) through sessions_project_created.
    const edge = (dimension: BreakdownDimension, byCountry: boolean) => {
      const col = COLUMN[dimension];
      const geo = dimension === 'country' || dimension === 'city';
      return db.prepare(
        `SELECT ${col} AS value, ${geo ? "coalesce(country_code, '')" : "''"} AS country_code, ${geo ? "coalesce(max(country), '')" : "''"} AS country,
           COUNT(*) AS n FROM sessions
         WHERE project_id = ? AND created_at >= ? AND created_at < ? AND ${col} IS NOT NULL AND ${col} <> ''${byCountry ? ' AND country_code = ?' : ''}
         GROUP BY ${geo ? "coalesce(country_code, ''), " : ''}${col}`,
      );
    };
    const edges = (byCountry: boolean) =>
      Object.fromEntries(BREAKDOWN_DIMENSIONS.map((d) => [d, edge(d, byCountry)])) as Record<BreakdownDimension, ReturnType<typeof edge>>;
    this.stmts = {
      rollup: rollup(false),
      rollupByCountry: rollup(true),
      edge: edges(false),
      edgeByCountry: edges(true),
      upsert: db.prepare(
        `INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions) VALUES (?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT (project_id, dimension, country_code, value, day) DO UPDATE SET sessions = sessions + 1`,
      ),
      deleteBefore: db.prepare(
        `DELETE FROM session_dimension_days WHERE (project_id, dimension, country_code, value, day) IN
           (SELECT project_id, dimension, country_code, value, day FROM session_dimension_days WHERE day < ? LIMIT ?)`,
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
    if (to > from) {
      // Whole UTC days inside the window come from the rollup, the rest from the sessions.
      const firstDay = Math.ceil(from / DAY_MS);
      const endDay = Math.floor(to / DAY_MS);
      if (firstDay < endDay) {
        const rows = byCountry
          ? this.stmts.rollupByCountry.all(projectId, dimension, firstDay, endDay, countryCode)
          : this.stmts.rollup.all(projectId, dimension, firstDay, endDay);
        add(rows as CountRow[]);
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
    for (const [dimension, value, code, country] of rollupKeys(dims)) this.stmts.upsert.run(projectId, dimension, day, code, value, country);
  }

  deleteDaysBefore(beforeDay: number, limit: number): number {
    return this.stmts.deleteBefore.run(beforeDay, limit).changes;
  }
}

/** Code-point order, the same on every machine (no locale). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
