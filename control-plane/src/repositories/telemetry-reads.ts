// What the analytics API reads of the telemetry rows: one session's rows newest first, a page at
// a time with their total, and the few facts a session's diagnosis needs, each one index probe.
import type { Db } from '../db/database';

/** A page of one session's telemetry rows, newest first (by the row's timestamp, then arrival). */
export interface TelemetryPageQuery {
  sessionId: string;
  /** Only event rows (`logType` `Webrtc`) when set. */
  logType?: 'Webrtc';
  /** Rows whose timestamp is at or after this instant (ms since the epoch). */
  fromMs?: number;
  /** Rows whose timestamp is at or before this instant (ms since the epoch). */
  toMs?: number;
  limit: number;
  skip: number;
}

export interface TelemetryPage {
  /** Rows matching the query, whatever the page. */
  total: number;
  /** The rows as the player reported them (with the server's sessionId). */
  rows: Record<string, unknown>[];
}

/** One statistics row's counters, as numbers (the player reports strings). */
export interface StatisticsSample {
  framesDecoded: number;
  fps: number;
}

/** What the spec's reading rules look at, for one session. */
export interface DiagnosisFacts {
  hasRows: boolean;
  sdpAnswer: boolean;
  connected: boolean;
  /** The oldest and newest statistics rows (framesDecoded is cumulative: the newest holds the most). */
  oldestStatistics: StatisticsSample | undefined;
  newestStatistics: StatisticsSample | undefined;
}

export interface TelemetryReadsRepository {
  page(q: TelemetryPageQuery): TelemetryPage;
  diagnosisFacts(sessionId: string): DiagnosisFacts;
}

/**
 * Timestamps are stored as the player wrote them; ours write `Date.prototype.toISOString()` (UTC,
 * milliseconds), so the bounds are written the same way and compared as text in the
 * (session_id, timestamp) index.
 */
const isoBound = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

function sample(rowJson: string | undefined): StatisticsSample | undefined {
  if (rowJson === undefined) return undefined;
  const row = JSON.parse(rowJson) as Record<string, unknown>;
  const num = (v: unknown) => {
    const n = typeof v === 'string' || typeof v === 'number' ? Number(v) : NaN;
    return Number.isFinite(n) ? n : 0;
  };
  return { framesDecoded: num(row.framesDecoded), fps: num(row.FPS) };
}

export class SqliteTelemetryReadsRepository implements TelemetryReadsRepository {
  private readonly stmts;

  constructor(db: Db) {
    const where = `session_id = @sessionId AND (@logType IS NULL OR log_type = @logType)
      AND (@from IS NULL OR timestamp >= @from) AND (@to IS NULL OR timestamp <= @to)`;
    this.stmts = {
      count: db.prepare(`SELECT COUNT(*) AS n FROM telemetry_rows WHERE ${where}`),
      page: db.prepare(`SELECT row FROM telemetry_rows WHERE ${where} ORDER BY timestamp DESC, id DESC LIMIT @limit OFFSET @skip`),
      hasRows: db.prepare('SELECT EXISTS (SELECT 1 FROM telemetry_rows WHERE session_id = ?) AS yes'),
      // `log_type IS NOT NULL` / `IS NULL` are spelled out so the partial indexes of migration 12 apply.
      hasEvent: db.prepare('SELECT EXISTS (SELECT 1 FROM telemetry_rows WHERE session_id = ? AND event = ? AND log_type IS NOT NULL) AS yes'),
      oldestStatistics: db.prepare('SELECT row FROM telemetry_rows WHERE session_id = ? AND log_type IS NULL ORDER BY timestamp, id LIMIT 1'),
      newestStatistics: db.prepare('SELECT row FROM telemetry_rows WHERE session_id = ? AND log_type IS NULL ORDER BY timestamp DESC, id DESC LIMIT 1'),
    };
  }

  page(q: TelemetryPageQuery): TelemetryPage {
    const params = { sessionId: q.sessionId, logType: q.logType ?? null, from: isoBound(q.fromMs), to: isoBound(q.toMs) };
    const total = (this.stmts.count.get(params) as { n: number }).n;
    // Past the end there is nothing to read: the count already says so.
    const rows = q.skip >= total || q.limit === 0 ? [] : (this.stmts.page.all({ ...params, limit: q.limit, skip: q.skip }) as { row: string }[]);
    return { total, rows: rows.map((r) => JSON.parse(r.row) as Record<string, unknown>) };
  }

  diagnosisFacts(sessionId: string): DiagnosisFacts {
    const yes = (r: unknown) => (r as { yes: number }).yes === 1;
    const rowOf = (r: unknown) => (r as { row: string } | undefined)?.row;
    return {
      hasRows: yes(this.stmts.hasRows.get(sessionId)),
      sdpAnswer: yes(this.stmts.hasEvent.get(sessionId, 'sdpAnswer')),
      connected: yes(this.stmts.hasEvent.get(sessionId, 'connected')),
      oldestStatistics: sample(rowOf(this.stmts.oldestStatistics.get(sessionId))),
      newestStatistics: sample(rowOf(this.stmts.newestStatistics.get(sessionId))),
    };
  }
}
