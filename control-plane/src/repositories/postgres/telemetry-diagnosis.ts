// A session's diagnosis in PostgreSQL: the facts analytics/session-diagnosis.ts reads, and the
// stored diagnosis they give, written on the connection of the caller's transaction. The SQLite
// twins are ../telemetry-diagnosis.ts (the facts) and ../session-diagnosis-store.ts (the update).
import { diagnose } from '../../analytics/session-diagnosis';
import { statisticsSampleOf, type DiagnosisFacts } from '../telemetry-diagnosis';
import { firstRowOf, type Queryable } from './postgres-sql';

interface FactsRow {
  has_rows: boolean;
  /** Null when the session has no row. */
  rows_ever_accepted: number | null;
  video_shown: boolean | null;
  sdp_answer: boolean;
  connected: boolean;
  oldest_statistics: string | null;
  newest_statistics: string | null;
}

/**
 * SQLite's five statements (DIAGNOSIS_QUERIES) as the subqueries of one, so that a refresh is one
 * round trip. `log_type IS NOT NULL` / `IS NULL` are spelled out, as there, so that the partial
 * indexes of migration 12 (in the PostgreSQL baseline too) can answer them.
 */
const FACTS = `SELECT
  EXISTS (SELECT 1 FROM telemetry_rows WHERE session_id = $1) AS has_rows,
  (SELECT telemetry_count FROM sessions WHERE id = $1) AS rows_ever_accepted,
  (SELECT video_shown_at IS NOT NULL FROM sessions WHERE id = $1) AS video_shown,
  EXISTS (SELECT 1 FROM telemetry_rows WHERE session_id = $1 AND event = 'sdpAnswer' AND log_type IS NOT NULL) AS sdp_answer,
  EXISTS (SELECT 1 FROM telemetry_rows WHERE session_id = $1 AND event = 'connected' AND log_type IS NOT NULL) AS connected,
  (SELECT row FROM telemetry_rows WHERE session_id = $1 AND log_type IS NULL ORDER BY ts, id LIMIT 1) AS oldest_statistics,
  (SELECT row FROM telemetry_rows WHERE session_id = $1 AND log_type IS NULL ORDER BY ts DESC, id DESC LIMIT 1) AS newest_statistics`;

/** What the spec's reading rules look at, for one session, read in one statement on db (a pool or a transaction's connection). */
export async function postgresDiagnosisFacts(db: Queryable, sessionId: string): Promise<DiagnosisFacts> {
  const r = (await firstRowOf<FactsRow>(db, FACTS, [sessionId]))!;
  return {
    hasRows: r.has_rows,
    rowsEverAccepted: r.rows_ever_accepted ?? 0,
    videoShown: r.video_shown === true,
    sdpAnswer: r.sdp_answer,
    connected: r.connected,
    oldestStatistics: statisticsSampleOf(r.oldest_statistics ?? undefined),
    newestStatistics: statisticsSampleOf(r.newest_statistics ?? undefined),
  };
}

/**
 * Reads the session's facts and stores the diagnosis they give (sessions.diagnosis, migration 20),
 * on db: inside the caller's transaction, after it has written the session's row (so that the row
 * lock makes a concurrent batch of the same session read these rows too).
 */
export async function refreshPostgresDiagnosis(db: Queryable, sessionId: string): Promise<void> {
  const diagnosis = diagnose(await postgresDiagnosisFacts(db, sessionId));
  await db.query('UPDATE sessions SET diagnosis = $1 WHERE id = $2 AND diagnosis <> $1', [diagnosis, sessionId]);
}
