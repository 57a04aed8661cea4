// The few facts of one session's telemetry that its diagnosis (analytics/session-diagnosis.ts)
// reads, each one probe of an index (migration 12), however many rows the session has.
import type { Db } from '../db/database';

/** One statistics row's counters, as numbers (the player reports strings). */
export interface StatisticsSample {
  framesDecoded: number;
  fps: number;
}

/** What the spec's reading rules look at, for one session. */
export interface DiagnosisFacts {
  hasRows: boolean;
  /** Rows the session ever had accepted (sessions.telemetry_count; retention never lowers it). */
  rowsEverAccepted: number;
  /** The relay saw video reach the viewer (sessions.video_shown_at: its receiver reports acknowledged a whole keyframe). */
  videoShown: boolean;
  sdpAnswer: boolean;
  connected: boolean;
  /** The oldest and newest statistics rows (framesDecoded is cumulative: the newest holds the most). */
  oldestStatistics: StatisticsSample | undefined;
  newestStatistics: StatisticsSample | undefined;
}

export interface TelemetryDiagnosisRepository {
  diagnosisFacts(sessionId: string): DiagnosisFacts;
}

/**
 * The diagnosis's statements, each answered by an index probe (a test reads their query plans).
 * `log_type IS NOT NULL` / `IS NULL` are spelled out so the partial indexes of migration 12 apply.
 */
export const DIAGNOSIS_QUERIES = {
  hasRows: 'SELECT EXISTS (SELECT 1 FROM telemetry_rows WHERE session_id = ?) AS yes',
  rowsEverAccepted: 'SELECT telemetry_count AS n, video_shown_at IS NOT NULL AS shown FROM sessions WHERE id = ?',
  hasEvent: 'SELECT EXISTS (SELECT 1 FROM telemetry_rows WHERE session_id = ? AND event = ? AND log_type IS NOT NULL) AS yes',
  oldestStatistics: 'SELECT row FROM telemetry_rows WHERE session_id = ? AND log_type IS NULL ORDER BY ts, id LIMIT 1',
  newestStatistics: 'SELECT row FROM telemetry_rows WHERE session_id = ? AND log_type IS NULL ORDER BY ts DESC, id DESC LIMIT 1',
} as const;

/** A statistics row's stored JSON as its sample (both stores); undefined when there is no row. */
export function statisticsSampleOf(rowJson: string | undefined): StatisticsSample | undefined {
  if (rowJson === undefined) return undefined;
  const row = JSON.parse(rowJson) as Record<string, unknown>;
  const num = (v: unknown) => {
    const n = typeof v === 'string' || typeof v === 'number' ? Number(v) : NaN;
    return Number.isFinite(n) ? n : 0;
  };
  return { framesDecoded: num(row.framesDecoded), fps: num(row.FPS) };
}

export class SqliteTelemetryDiagnosisRepository implements TelemetryDiagnosisRepository {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      hasRows: db.prepare(DIAGNOSIS_QUERIES.hasRows),
      rowsEverAccepted: db.prepare(DIAGNOSIS_QUERIES.rowsEverAccepted),
      hasEvent: db.prepare(DIAGNOSIS_QUERIES.hasEvent),
      oldestStatistics: db.prepare(DIAGNOSIS_QUERIES.oldestStatistics),
      newestStatistics: db.prepare(DIAGNOSIS_QUERIES.newestStatistics),
    };
  }

  diagnosisFacts(sessionId: string): DiagnosisFacts {
    const yes = (r: unknown) => (r as { yes: number }).yes === 1;
    const rowOf = (r: unknown) => (r as { row: string } | undefined)?.row;
    const session = this.stmts.rowsEverAccepted.get(sessionId) as { n: number; shown: number } | undefined;
    return {
      hasRows: yes(this.stmts.hasRows.get(sessionId)),
      rowsEverAccepted: session?.n ?? 0,
      videoShown: session?.shown === 1,
      sdpAnswer: yes(this.stmts.hasEvent.get(sessionId, 'sdpAnswer')),
      connected: yes(this.stmts.hasEvent.get(sessionId, 'connected')),
      oldestStatistics: statisticsSampleOf(rowOf(this.stmts.oldestStatistics.get(sessionId))),
      newestStatistics: statisticsSampleOf(rowOf(this.stmts.newestStatistics.get(sessionId))),
    };
  }
}
