// Telemetry rows reported by viewers' players, stored as received (the analytics API reads them).
import type { Db } from '../db/database';

export interface TelemetryRowRecord {
  sessionId: string;
  projectId: string;
  logType: string | undefined;
  event: string | undefined;
  timestamp: string;
  receivedAt: number;
  row: Record<string, unknown>;
}

export interface TelemetryRepository {
  insertMany(rows: readonly TelemetryRowRecord[]): void;
  countBySession(sessionId: string): number;
  listBySession(sessionId: string): TelemetryRowRecord[];
}

export class SqliteTelemetryRepository implements TelemetryRepository {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        'INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, received_at, row) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      count: db.prepare('SELECT COUNT(*) AS n FROM telemetry_rows WHERE session_id = ?'),
      list: db.prepare('SELECT session_id, project_id, log_type, event, timestamp, received_at, row FROM telemetry_rows WHERE session_id = ? ORDER BY id'),
    };
  }

  insertMany(rows: readonly TelemetryRowRecord[]): void {
    this.db.transaction(() => {
      for (const r of rows) this.stmts.insert.run(r.sessionId, r.projectId, r.logType ?? null, r.event ?? null, r.timestamp, r.receivedAt, JSON.stringify(r.row));
    })();
  }

  countBySession(sessionId: string): number {
    return (this.stmts.count.get(sessionId) as { n: number }).n;
  }

  listBySession(sessionId: string): TelemetryRowRecord[] {
    type Row = { session_id: string; project_id: string; log_type: string | null; event: string | null; timestamp: string; received_at: number; row: string };
    return (this.stmts.list.all(sessionId) as Row[]).map((r) => ({
      sessionId: r.session_id,
      projectId: r.project_id,
      logType: r.log_type ?? undefined,
      event: r.event ?? undefined,
      timestamp: r.timestamp,
      receivedAt: r.received_at,
      row: JSON.parse(r.row) as Record<string, unknown>,
    }));
  }
}
