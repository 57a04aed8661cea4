// The client dimensions of sessions counted per UTC day and per 7-day week, in PostgreSQL; the
// SQLite twin is ../session-dimensions.ts, whose header explains the rollups. A breakdown is one
// statement here: SQLite's statements for the week rollup, the day rollups beside it and the
// partial edge days from the sessions become the parts of one UNION ALL, merged by the server in
// one round trip and one snapshot.
import {
  BREAKDOWN_DIMENSIONS,
  DAY_MS,
  DIMENSION_COLUMNS,
  rollupKeys,
  WEEK_DAYS,
  type Breakdown,
  type BreakdownDimension,
  type BreakdownEntry,
  type BreakdownQuery,
  type ClientDimensions,
  type SessionDimensionsRepository,
} from '../session-dimensions';
import { changesOf, rowsOf, type Queryable } from './postgres-sql';

/** Half-open ranges [start, end) of the five parts of a breakdown's window; an unused part is empty. */
interface WindowParts {
  weeks: [number, number];
  firstDays: [number, number];
  lastDays: [number, number];
  /** ms since the epoch. */
  firstEdge: [number, number];
  lastEdge: [number, number];
}

const NONE: [number, number] = [0, 0];

/**
 * How SQLite's breakdown cuts [from, to): whole weeks inside it from the week rollup, whole days
 * beside them from the day rollup, the partial days at the edges from the sessions.
 */
function windowParts(from: number, to: number): WindowParts {
  const parts: WindowParts = { weeks: NONE, firstDays: NONE, lastDays: NONE, firstEdge: NONE, lastEdge: NONE };
  if (to <= from) return parts;
  const firstDay = Math.ceil(from / DAY_MS);
  const endDay = Math.floor(to / DAY_MS);
  if (firstDay >= endDay) return { ...parts, firstEdge: [from, to] };
  const firstWeek = Math.ceil(firstDay / WEEK_DAYS);
  const endWeek = Math.floor(endDay / WEEK_DAYS);
  const days =
    firstWeek < endWeek
      ? { weeks: [firstWeek, endWeek] as [number, number], firstDays: [firstDay, firstWeek * WEEK_DAYS] as [number, number], lastDays: [endWeek * WEEK_DAYS, endDay] as [number, number] }
      : { firstDays: [firstDay, endDay] as [number, number] };
  return { ...parts, ...days, firstEdge: [from, firstDay * DAY_MS], lastEdge: [endDay * DAY_MS, to] };
}

/**
 * The breakdown of one dimension: $1 project, $2 dimension, $3..$12 the parts' ranges, $13 the
 * country code when filtered by one. Each part is grouped as SQLite's statement of it is; the
 * parts are then merged by value (by country code and value for cities), a city's country being
 * the first non-empty one in the parts' order, as SQLite's merge keeps it.
 */
function breakdownSql(dimension: BreakdownDimension, byCountry: boolean): string {
  const col = DIMENSION_COLUMNS[dimension];
  const geo = dimension === 'country' || dimension === 'city';
  const country = byCountry ? ' AND country_code = $13' : '';
  const rollup = (part: number, table: string, unit: string, lo: number) =>
    `SELECT ${part} AS part, value, country_code, max(country) AS country, SUM(sessions) AS n FROM ${table}
     WHERE project_id = $1 AND dimension = $2 AND ${unit} >= $${lo} AND ${unit} < $${lo + 1}${country}
     GROUP BY country_code, value`;
  // Partial edge days: the sessions of [start, end) through sessions_project_created.
  const edge = (part: number, lo: number) =>
    `SELECT ${part} AS part, ${col} AS value, ${geo ? "coalesce(country_code, '')" : "''"} AS country_code, ${geo ? "coalesce(max(country), '')" : "''"} AS country,
       COUNT(*) AS n FROM sessions
     WHERE project_id = $1 AND pooled = 0 AND created_at >= $${lo} AND created_at < $${lo + 1} AND ${col} IS NOT NULL AND ${col} <> ''${country}
     GROUP BY ${geo ? "coalesce(country_code, ''), " : ''}${col}`;
  const key = dimension === 'city' ? 'country_code, value' : 'value';
  return `WITH parts AS (
      ${rollup(1, 'session_dimension_weeks', 'week', 3)}
      UNION ALL ${rollup(2, 'session_dimension_days', 'day', 5)}
      UNION ALL ${rollup(3, 'session_dimension_days', 'day', 7)}
      UNION ALL ${edge(4, 9)}
      UNION ALL ${edge(5, 11)})
    SELECT ${key}, coalesce((array_agg(country ORDER BY part) FILTER (WHERE country <> ''))[1], '') AS country, SUM(n) AS n
    FROM parts GROUP BY ${key}`;
}

/** The statement of each dimension, unfiltered and by country. */
const BREAKDOWN_SQL = Object.fromEntries(BREAKDOWN_DIMENSIONS.map((d) => [d, { all: breakdownSql(d, false), byCountry: breakdownSql(d, true) }])) as Record<
  BreakdownDimension,
  { all: string; byCountry: string }
>;

export class PostgresSessionDimensionsRepository implements SessionDimensionsRepository {
  /** db: the pool, or the connection of the transaction inserting a session (record belongs in it). */
  constructor(private readonly db: Queryable) {}

  async breakdown(query: BreakdownQuery): Promise<Breakdown> {
    const { projectId, dimension, from, to, countryCode } = query;
    const byCountry = countryCode !== undefined;
    if (byCountry && dimension !== 'city' && dimension !== 'country') {
      throw new RangeError(`countryCode filters only the city and country dimensions, not ${dimension}`);
    }
    if (to <= from) return { total: 0, entries: [] };
    const p = windowParts(from, to);
    const params = [projectId, dimension, ...p.weeks, ...p.firstDays, ...p.lastDays, ...p.firstEdge, ...p.lastEdge, ...(byCountry ? [countryCode] : [])];
    const rows = await rowsOf<{ value: string; country_code?: string; country: string; n: number }>(
      this.db,
      byCountry ? BREAKDOWN_SQL[dimension].byCountry : BREAKDOWN_SQL[dimension].all,
      params,
    );
    let total = 0;
    const entries: BreakdownEntry[] = rows.map((r) => {
      total += r.n;
      return dimension === 'city' ? { value: r.value, count: r.n, country: r.country, countryCode: r.country_code ?? '' } : { value: r.value, count: r.n };
    });
    // In JavaScript, as SQLite's twin sorts: its string order, not the server's.
    entries.sort((a, b) => b.count - a.count || compare(a.value, b.value) || compare(a.countryCode ?? '', b.countryCode ?? ''));
    return { total, entries };
  }

  async record(projectId: string, createdAt: number, dims: ClientDimensions): Promise<void> {
    const day = Math.floor(createdAt / DAY_MS);
    const week = Math.floor(day / WEEK_DAYS);
    for (const [dimension, value, code, country] of rollupKeys(dims)) {
      await this.db.query(
        `INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions) VALUES ($1, $2, $3, $4, $5, $6, 1)
         ON CONFLICT (project_id, dimension, day, country_code, value) DO UPDATE SET sessions = session_dimension_days.sessions + 1`,
        [projectId, dimension, day, code, value, country],
      );
      await this.db.query(
        `INSERT INTO session_dimension_weeks (project_id, dimension, country_code, value, week, country, sessions) VALUES ($1, $2, $3, $4, $5, $6, 1)
         ON CONFLICT (project_id, dimension, country_code, value, week) DO UPDATE SET sessions = session_dimension_weeks.sessions + 1`,
        [projectId, dimension, code, value, week, country],
      );
    }
  }

  async deleteDaysBefore(beforeDay: number, limit: number): Promise<number> {
    const days = await changesOf(
      this.db,
      `DELETE FROM session_dimension_days WHERE (project_id, dimension, day, country_code, value) IN
         (SELECT project_id, dimension, day, country_code, value FROM session_dimension_days WHERE day < $1 LIMIT $2)`,
      [beforeDay, limit],
    );
    if (days >= limit) return days;
    // Weeks that ended by beforeDay: (week + 1) * 7 <= beforeDay.
    return (
      days +
      (await changesOf(
        this.db,
        `DELETE FROM session_dimension_weeks WHERE (project_id, dimension, country_code, value, week) IN
           (SELECT project_id, dimension, country_code, value, week FROM session_dimension_weeks WHERE week < $1 LIMIT $2)`,
        [Math.floor(beforeDay / WEEK_DAYS), limit - days],
      ))
    );
  }
}

/** Code-point order, the same on every machine (no locale), as the SQLite twin compares. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
