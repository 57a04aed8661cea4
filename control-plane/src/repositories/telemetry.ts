// Telemetry rows reported by viewers' players, stored as received (the analytics API reads them);
// each batch also brings its sessions' stored diagnosis up to date, in the same transaction.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';
import { SqliteSessionDiagnosisRepository } from './session-diagnosis-store';

export interface TelemetryRowRecord {
  sessionId: string;
  projectId: string;
  logType: string | undefined;
  event: string | undefined;
  /** The row's own ISO 8601 time, as the page wrote it. */
  timestamp: string;
  receivedAt: number;
  row: Record<string, unknown>;
}

/** A stored row: its id (insertion order) and the row's time in ms since the epoch. */
export interface StoredTelemetryRow extends TelemetryRowRecord {
  id: number;
  /** `timestamp` in ms since the epoch (the order and the date filters of the page). */
  ts: number;
}

export interface TelemetryUsage {
  rows: number;
  /** UTF-8 bytes of the stored rows' JSON (storedRowBytes). */
  bytes: number;
}

/** The bytes a row costs the session's budget: its JSON as stored. */
export function storedRowBytes(row: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(row));
}

export interface TelemetryPageQuery {
  sessionId: string;
  /** `Webrtc`: event rows only; `statistics`: the player's statistics rows only (the dashboard's charts). */
  logType?: 'Webrtc' | 'statistics';
  /** Rows whose timestamp is at or after this time (ms since the epoch). */
  from?: number;
  /** Rows whose timestamp is at or before this time (ms since the epoch). */
  to?: number;
  /** Rows to return (the caller caps it: at most 1,000). */
  limit: number;
  skip: number;
}

export interface TelemetryRepository {
  /**
   * Stores one batch in one transaction, adds its rows and bytes to the session's totals and
   * writes the session's diagnosis as its rows now read (sessions.diagnosis, migration 20).
   */
  insertMany(rows: readonly TelemetryRowRecord[]): Promise<void>;
  /** Rows and stored bytes ever accepted for the session (sessions.telemetry_count / telemetry_bytes: one row read). */
  usageBySession(sessionId: string): Promise<TelemetryUsage>;
  /** Every row of the session in insertion order. */
  listBySession(sessionId: string): Promise<StoredTelemetryRow[]>;
  /** One page of the session's rows, newest first (ts descending, then id descending), and how many match. */
  pageBySession(query: TelemetryPageQuery): Promise<{ total: number; rows: StoredTelemetryRow[] }>;
}

/** The ms of an ISO 8601 time with a zone (the ingest validates the form); NaN when not one. */
export function timestampMs(timestamp: string): number {
  return Date.parse(timestamp);
}

/** A telemetry_rows row as TELEMETRY_ROWS_COLUMNS reads it (both stores map it with storedTelemetryRowOf). */
export type TelemetryRowsRow = {
  id: number;
  session_id: string;
  project_id: string;
  log_type: string | null;
  event: string | null;
  timestamp: string;
  received_at: number;
  ts: number;
  row: string;
};

export const TELEMETRY_ROWS_COLUMNS = 'id, session_id, project_id, log_type, event, timestamp, received_at, ts, row';
const INSERT = 'INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, ts, received_at, row) VALUES';
/** Rows per multi-row INSERT: one statement step instead of 50 (8 x 50 = 400 parameters, under SQLite's limit). */
const INSERT_CHUNK = 50;

export const storedTelemetryRowOf = (r: TelemetryRowsRow): StoredTelemetryRow => ({
  id: r.id,
  sessionId: r.session_id,
  projectId: r.project_id,
  logType: r.log_type ?? undefined,
  event: r.event ?? undefined,
  timestamp: r.timestamp,
  receivedAt: r.received_at,
  ts: r.ts,
  row: JSON.parse(r.row) as Record<string, unknown>,
});

export class SqliteTelemetryRepository implements Sync<TelemetryRepository> {
  private readonly stmts;

  /** Brings each batch's sessions' diagnoses up to date inside insertMany's transaction. */
  private readonly diagnoses: SqliteSessionDiagnosisRepository;

  constructor(private readonly db: Db) {
    this.diagnoses = new SqliteSessionDiagnosisRepository(db);
    // The page's filters, every combination spelled out so each statement is prepared once and
    // walks telemetry_rows_session_ts (session_id, ts, id, log_type) backwards: no sort, and the
    // count answered from the index alone.
    // Statistics rows alone walk telemetry_rows_session_statistics (log_type IS NULL) the same way.
    const kinds = { all: '', webrtc: " AND log_type = 'Webrtc'", statistics: ' AND log_type IS NULL' };
    const where = (kind: keyof typeof kinds) => `session_id = @sessionId AND ts >= @from AND ts <= @to${kinds[kind]}`;
    const page = (kind: keyof typeof kinds) => ({
      count: db.prepare(`SELECT COUNT(*) AS n FROM telemetry_rows WHERE ${where(kind)}`),
      rows: db.prepare(`SELECT ${TELEMETRY_ROWS_COLUMNS} FROM telemetry_rows WHERE ${where(kind)} ORDER BY ts DESC, id DESC LIMIT @limit OFFSET @skip`),
    });
    this.stmts = {
      insert: db.prepare(`${INSERT} (?, ?, ?, ?, ?, ?, ?, ?)`),
      insertChunk: db.prepare(`${INSERT} ${Array.from({ length: INSERT_CHUNK }, () => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`),
      addUsage: db.prepare('UPDATE sessions SET telemetry_count = telemetry_count + ?, telemetry_bytes = telemetry_bytes + ? WHERE id = ?'),
      usage: db.prepare('SELECT telemetry_count AS rows, telemetry_bytes AS bytes FROM sessions WHERE id = ?'),
      list: db.prepare(`SELECT ${TELEMETRY_ROWS_COLUMNS} FROM telemetry_rows WHERE session_id = ? ORDER BY id`),
      all: page('all'),
      webrtc: page('webrtc'),
      statistics: page('statistics'),
    };
  }

  insertMany(rows: readonly TelemetryRowRecord[]): void {
    const params: unknown[] = [];
    const perSession = new Map<string, TelemetryUsage>();
    for (const r of rows) {
      const ts = timestampMs(r.timestamp);
      const json = JSON.stringify(r.row);
      params.push(r.sessionId, r.projectId, r.logType ?? null, r.event ?? null, r.timestamp, Number.isNaN(ts) ? r.receivedAt : ts, r.receivedAt, json);
      const usage = perSession.get(r.sessionId) ?? { rows: 0, bytes: 0 };
      usage.rows += 1;
      usage.bytes += Buffer.byteLength(json);
      perSession.set(r.sessionId, usage);
    }
    this.db.transaction(() => {
      // Whole statements of INSERT_CHUNK rows, then one row at a time: a batch of 200 is 4 statements.
      let at = 0;
      for (; at + INSERT_CHUNK <= rows.length; at += INSERT_CHUNK) this.stmts.insertChunk.run(params.slice(at * 8, (at + INSERT_CHUNK) * 8));
      for (; at < rows.length; at += 1) this.stmts.insert.run(params.slice(at * 8, at * 8 + 8));
      for (const [sessionId, usage] of perSession) {
        this.stmts.addUsage.run(usage.rows, usage.bytes, sessionId);
        this.diagnoses.refresh(sessionId);
      }
    })();
  }


  usageBySession(sessionId: string): TelemetryUsage {
    return (this.stmts.usage.get(sessionId) as TelemetryUsage | undefined) ?? { rows: 0, bytes: 0 };
  }

  listBySession(sessionId: string): StoredTelemetryRow[] {
    return (this.stmts.list.all(sessionId) as TelemetryRowsRow[]).map(storedTelemetryRowOf);
  }

  pageBySession(query: TelemetryPageQuery): { total: number; rows: StoredTelemetryRow[] } {
    const stmts = query.logType === 'Webrtc' ? this.stmts.webrtc : query.logType === 'statistics' ? this.stmts.statistics : this.stmts.all;
    const params = {
      sessionId: query.sessionId,
      from: query.from ?? Number.MIN_SAFE_INTEGER,
      to: query.to ?? Number.MAX_SAFE_INTEGER,
    };
    const total = (stmts.count.get(params) as { n: number }).n;
    const rows = query.limit > 0 && query.skip < total ? (stmts.rows.all({ ...params, limit: query.limit, skip: query.skip }) as TelemetryRowsRow[]).map(storedTelemetryRowOf) : [];
    return { total, rows };
  }
}
