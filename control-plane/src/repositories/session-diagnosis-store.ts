// Keeps sessions.diagnosis (migration 20) as a session's facts now read: after a batch of its
// telemetry, and when the relay saw video reach its viewer. One writer for both, each call inside
// the caller's transaction.
import type { Db } from '../db/database';
import { diagnose } from '../analytics/session-diagnosis';
import { SqliteTelemetryDiagnosisRepository } from './telemetry-diagnosis';

export interface SessionDiagnosisRepository {
  /** Reads the session's facts and stores the diagnosis they give. */
  refresh(sessionId: string): void;
  /** Records the relay's witness of video shown (the first one counts) and refreshes the diagnosis; false when it was already recorded. */
  videoShown(sessionId: string, atMs: number): boolean;
}

export class SqliteSessionDiagnosisRepository implements SessionDiagnosisRepository {
  private readonly facts: SqliteTelemetryDiagnosisRepository;
  private readonly stmts;

  constructor(db: Db) {
    this.facts = new SqliteTelemetryDiagnosisRepository(db);
    this.stmts = {
      set: db.prepare('UPDATE sessions SET diagnosis = ? WHERE id = ? AND diagnosis <> ?'),
      videoShown: db.prepare('UPDATE sessions SET video_shown_at = ? WHERE id = ? AND video_shown_at IS NULL'),
    };
  }

  /** Reads the session's facts (five index probes, whatever its row count) and stores what they say. */
  refresh(sessionId: string): void {
    const diagnosis = diagnose(this.facts.diagnosisFacts(sessionId));
    this.stmts.set.run(diagnosis, sessionId, diagnosis);
  }

  /** Records the relay's witness (the first one counts) and refreshes the diagnosis; false when it was already recorded. */
  videoShown(sessionId: string, atMs: number): boolean {
    if (this.stmts.videoShown.run(atMs, sessionId).changes === 0) return false;
    this.refresh(sessionId);
    return true;
  }
}
