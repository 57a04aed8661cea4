// The diagnosis's facts on real rows, and each of its statements answered through an index (no
// scan of the table, no sort): a session list of 50 entries costs 250 index probes, whatever the
// number of rows.
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { DIAGNOSIS_QUERIES, SqliteTelemetryDiagnosisRepository } from './telemetry-diagnosis';
import { seedProject, seedSession, seedUser, sessionRecord } from './repository-test-db';

let db: Db | undefined;
afterEach(() => db?.close());

/** A migrated in-memory database holding usr_1 and its project prj_1. */
function openSeeded(): Db {
  const d = openDatabase(':memory:');
  seedUser(d);
  seedProject(d, 'prj_1');
  return d;
}

function seed(d: Db, sessionId: string, rows: { logType?: string; event?: string; ts: number; row: Record<string, string> }[]): void {
  seedSession(d, sessionRecord(sessionId, 0, { status: 'Running' }));
  const insert = d.prepare("INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, ts, received_at, row) VALUES (?, 'prj_1', ?, ?, ?, ?, 0, ?)");
  for (const r of rows) insert.run(sessionId, r.logType ?? null, r.event ?? null, new Date(r.ts).toISOString(), r.ts, JSON.stringify(r.row));
}

describe('SqliteTelemetryDiagnosisRepository', () => {
  it('reads whether events came and the oldest and newest statistics rows by their time', () => {
    db = openSeeded();
    // Rows arrive out of order: the newest statistics row is the one with the latest ts.
    seed(db, 'session_1_1', [
      { logType: 'Webrtc', event: 'sdpAnswer', ts: 1_000, row: {} },
      { ts: 9_000, row: { FPS: '60', framesDecoded: '540' } },
      { ts: 3_000, row: { FPS: '0', framesDecoded: '0' } },
      { ts: 6_000, row: { FPS: '60', framesDecoded: '180' } },
    ]);
    seed(db, 'session_2_2', []);
    const repo = new SqliteTelemetryDiagnosisRepository(db);
    expect(repo.diagnosisFacts('session_1_1')).toEqual({
      hasRows: true,
      rowsEverAccepted: 0, // seeded straight into the table: the count is the ingest's
      videoShown: false,
      sdpAnswer: true,
      connected: false,
      oldestStatistics: { framesDecoded: 0, fps: 0 },
      newestStatistics: { framesDecoded: 540, fps: 60 },
    });
    expect(repo.diagnosisFacts('session_2_2')).toEqual({ hasRows: false, rowsEverAccepted: 0, videoShown: false, sdpAnswer: false, connected: false, oldestStatistics: undefined, newestStatistics: undefined });
  });

  it('answers every statement through an index, without a scan or a sort', () => {
    db = openDatabase(':memory:');
    const index: Record<keyof typeof DIAGNOSIS_QUERIES, string> = {
      hasRows: 'telemetry_rows_session_ts (session_id=?)',
      hasEvent: 'telemetry_rows_session_event (session_id=? AND event=?)',
      oldestStatistics: 'telemetry_rows_session_statistics (session_id=?)',
      newestStatistics: 'telemetry_rows_session_statistics (session_id=?)',
      rowsEverAccepted: 'sqlite_autoindex_sessions_1 (id=?)',
    };
    for (const [name, sql] of Object.entries(DIAGNOSIS_QUERIES) as [keyof typeof DIAGNOSIS_QUERIES, string][]) {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(name === 'hasEvent' ? ['s', 'connected'] : ['s'])) as { detail: string }[]).map((p) => p.detail);
      expect(plan.some((d) => /^SEARCH (telemetry_rows|sessions) USING (COVERING )?INDEX /.test(d) && d.endsWith(index[name])), `${name}: ${plan.join('; ')}`).toBe(true);
      expect(plan.some((d) => /SCAN (telemetry_rows|sessions)|TEMP B-TREE/.test(d)), `${name}: ${plan.join('; ')}`).toBe(false);
    }
  });
});
