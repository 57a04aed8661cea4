// Deleting the history of sessions that ended long ago: the session rows and every row that hangs
// off a session (migrations: session_snapshots, telemetry_rows and log_files reference sessions(id)).
// Each statement deletes a bounded number of rows, so the retention sweep can yield between them.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

/** The tables whose rows belong to one session, deleted before the session itself. */
export const SESSION_CHILD_TABLES = ['telemetry_rows', 'session_snapshots', 'log_files'] as const;
export type SessionChildTable = (typeof SESSION_CHILD_TABLES)[number];

export interface SessionRetentionRepository {
  /** Ids of sessions Terminated before endedBeforeMs (by their last update, the end), oldest first, at most limit. */
  listEndedBefore(endedBeforeMs: number, limit: number): Promise<string[]>;
  /** Deletes at most limit rows of table belonging to the given sessions; returns how many. */
  deleteChildRows(table: SessionChildTable, sessionIds: readonly string[], limit: number): Promise<number>;
  /**
   * Deletes the given sessions that are still Terminated (at most sessionIds.length rows; their child
   * rows must be gone already, or the foreign keys' cascade deletes them in the same statement).
   */
  deleteEnded(sessionIds: readonly string[]): Promise<number>;
}

export class SqliteSessionRetentionRepository implements Sync<SessionRetentionRepository> {
  private readonly stmts;

  constructor(db: Db) {
    // Ids travel as one JSON array parameter (json_each), whatever their number.
    const child = (table: SessionChildTable) =>
      db.prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE session_id IN (SELECT value FROM json_each(?)) LIMIT ?)`);
    this.stmts = {
      // `status = 'Terminated'` is spelled out so the partial index sessions_ended applies.
      endedBefore: db.prepare(`SELECT id FROM sessions WHERE status = 'Terminated' AND updated_at < ? ORDER BY updated_at LIMIT ?`),
      child: { telemetry_rows: child('telemetry_rows'), session_snapshots: child('session_snapshots'), log_files: child('log_files') },
      deleteEnded: db.prepare(`DELETE FROM sessions WHERE id IN (SELECT value FROM json_each(?)) AND status = 'Terminated'`),
    };
  }

  listEndedBefore(endedBeforeMs: number, limit: number): string[] {
    return (this.stmts.endedBefore.all(endedBeforeMs, limit) as { id: string }[]).map((r) => r.id);
  }

  deleteChildRows(table: SessionChildTable, sessionIds: readonly string[], limit: number): number {
    return this.stmts.child[table].run(JSON.stringify(sessionIds), limit).changes;
  }

  deleteEnded(sessionIds: readonly string[]): number {
    return this.stmts.deleteEnded.run(JSON.stringify(sessionIds)).changes;
  }
}
