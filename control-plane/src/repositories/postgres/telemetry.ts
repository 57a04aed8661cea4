// Telemetry rows reported by viewers' players, in PostgreSQL; the SQLite twin is ../telemetry.ts.
// Each batch is one transaction: its rows, its sessions' totals and their diagnoses
// (telemetry-diagnosis.ts), as in SQLite.
import type { PostgresPool } from '../../db/postgres-database';
import {
  storedTelemetryRowOf,
  TELEMETRY_ROWS_COLUMNS,
  timestampMs,
  type StoredTelemetryRow,
  type TelemetryPageQuery,
  type TelemetryRepository,
  type TelemetryRowRecord,
  type TelemetryRowsRow,
  type TelemetryUsage,
} from '../telemetry';
import { firstRowOf, inTransaction, rowsOf } from './postgres-sql';
import { refreshPostgresDiagnosis } from './telemetry-diagnosis';

/**
 * The whole batch in one statement, its columns as arrays: rows are numbered as given and inserted
 * in that order, so ids follow the batch's order as SQLite's multi-row INSERTs do.
 */
const INSERT_BATCH = `INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, ts, received_at, row)
  SELECT session_id, project_id, log_type, event, timestamp, ts, received_at, row
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[])
    WITH ORDINALITY AS b (session_id, project_id, log_type, event, timestamp, ts, received_at, row, n)
  ORDER BY n`;

/** The page's filter on log_type (the SQLite twin's three statement kinds). */
const KIND = { all: '', webrtc: " AND log_type = 'Webrtc'", statistics: ' AND log_type IS NULL' } as const;

export class PostgresTelemetryRepository implements TelemetryRepository {
  constructor(private readonly pool: PostgresPool) {}

  async insertMany(rows: readonly TelemetryRowRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const columns: unknown[][] = Array.from({ length: 8 }, () => []);
    const perSession = new Map<string, TelemetryUsage>();
    for (const r of rows) {
      const ts = timestampMs(r.timestamp);
      const json = JSON.stringify(r.row);
      [r.sessionId, r.projectId, r.logType ?? null, r.event ?? null, r.timestamp, Number.isNaN(ts) ? r.receivedAt : ts, r.receivedAt, json].forEach((v, i) => columns[i]!.push(v));
      const usage = perSession.get(r.sessionId) ?? { rows: 0, bytes: 0 };
      usage.rows += 1;
      usage.bytes += Buffer.byteLength(json);
      perSession.set(r.sessionId, usage);
    }
    // Sessions in id order: two batches naming the same sessions lock their rows in the same order,
    // so they queue instead of deadlocking.
    const sessionIds = [...perSession.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    await inTransaction(this.pool, async (tx) => {
      await tx.query(INSERT_BATCH, columns);
      for (const sessionId of sessionIds) {
        const usage = perSession.get(sessionId)!;
        // The row lock this takes is held to the commit: a concurrent batch of the session waits
        // here, then reads this batch's rows into its diagnosis.
        await tx.query('UPDATE sessions SET telemetry_count = telemetry_count + $1, telemetry_bytes = telemetry_bytes + $2 WHERE id = $3', [usage.rows, usage.bytes, sessionId]);
        await refreshPostgresDiagnosis(tx, sessionId);
      }
    });
  }

  async usageBySession(sessionId: string): Promise<TelemetryUsage> {
    return (await firstRowOf<TelemetryUsage>(this.pool, 'SELECT telemetry_count AS rows, telemetry_bytes AS bytes FROM sessions WHERE id = $1', [sessionId])) ?? { rows: 0, bytes: 0 };
  }

  async listBySession(sessionId: string): Promise<StoredTelemetryRow[]> {
    return (await rowsOf<TelemetryRowsRow>(this.pool, `SELECT ${TELEMETRY_ROWS_COLUMNS} FROM telemetry_rows WHERE session_id = $1 ORDER BY id`, [sessionId])).map(storedTelemetryRowOf);
  }

  async pageBySession(query: TelemetryPageQuery): Promise<{ total: number; rows: StoredTelemetryRow[] }> {
    const kind = KIND[query.logType === 'Webrtc' ? 'webrtc' : query.logType === 'statistics' ? 'statistics' : 'all'];
    // The statements of SQLite's twin, which telemetry_rows_session_ts (and, for statistics rows, telemetry_rows_session_statistics) serve.
    const where = `session_id = $1 AND ts >= $2 AND ts <= $3${kind}`;
    const params = [query.sessionId, query.from ?? Number.MIN_SAFE_INTEGER, query.to ?? Number.MAX_SAFE_INTEGER];
    const total = (await firstRowOf<{ n: number }>(this.pool, `SELECT COUNT(*) AS n FROM telemetry_rows WHERE ${where}`, params))!.n;
    if (query.limit <= 0 || query.skip >= total) return { total, rows: [] };
    const rows = await rowsOf<TelemetryRowsRow>(
      this.pool,
      `SELECT ${TELEMETRY_ROWS_COLUMNS} FROM telemetry_rows WHERE ${where} ORDER BY ts DESC, id DESC LIMIT $4 OFFSET $5`,
      [...params, query.limit, query.skip],
    );
    return { total, rows: rows.map(storedTelemetryRowOf) };
  }
}
