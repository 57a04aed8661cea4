import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../db/database';
import { openRepositoryTestDb, seedSession, sessionRecord, type RepositoryTestDb } from './repository-test-db';
import { SqliteTelemetryRepository, storedRowBytes, type TelemetryRowRecord } from './telemetry';
import { SqliteSessionHistoryRepository } from './session-history';
import { SqliteLogRetentionRepository } from './log-retention';
import { SqliteSessionDiagnosisRepository } from './session-diagnosis-store';

let testDb: RepositoryTestDb;
let db: Db;
let telemetry: SqliteTelemetryRepository;

const T0 = Date.UTC(2026, 10, 21, 6);
const iso = (ms: number) => new Date(ms).toISOString();
const row = (sessionId: string, at: number, event?: string): TelemetryRowRecord => ({
  sessionId,
  projectId: 'prj_1',
  logType: event === undefined ? undefined : 'Webrtc',
  event,
  timestamp: iso(at),
  receivedAt: T0 + 60_000,
  row: event === undefined ? { timestamp: iso(at), FPS: '30' } : { logType: 'Webrtc', event, timestamp: iso(at) },
});

beforeEach(() => {
  testDb = openRepositoryTestDb('pf-telemetry-');
  db = testDb.db;
  telemetry = new SqliteTelemetryRepository(db);
  for (const id of ['session_1_1', 'session_2_2']) seedSession(db, sessionRecord(id, 1, { status: 'Running' }));
});

afterEach(() => testDb.remove());

describe('SqliteTelemetryRepository', () => {
  it('keeps the accepted rows and their stored bytes on the session, batch by batch', () => {
    const rows = [row('session_1_1', T0), row('session_1_1', T0 + 1, 'connected'), row('session_2_2', T0), row('session_1_1', T0 + 2)];
    telemetry.insertMany(rows.slice(0, 3));
    telemetry.insertMany(rows.slice(3));
    const bytesOf = (sessionId: string) => rows.filter((r) => r.sessionId === sessionId).reduce((n, r) => n + storedRowBytes(r.row), 0);
    expect(telemetry.usageBySession('session_1_1')).toEqual({ rows: 3, bytes: bytesOf('session_1_1') });
    expect(telemetry.usageBySession('session_2_2')).toEqual({ rows: 1, bytes: bytesOf('session_2_2') });
    expect(telemetry.usageBySession('session_9_9')).toEqual({ rows: 0, bytes: 0 });
    // Bytes are UTF-8 bytes, not characters.
    telemetry.insertMany([{ ...row('session_2_2', T0 + 3), row: { note: 'é€😀' } }]);
    expect(telemetry.usageBySession('session_2_2').bytes).toBe(bytesOf('session_2_2') + Buffer.byteLength('{"note":"é€😀"}'));
  });

  it('stores a batch of any size whole and in order (multi-row statements, then the rest one by one)', () => {
    const batch = Array.from({ length: 123 }, (_, i) => row(i % 2 === 0 ? 'session_1_1' : 'session_2_2', T0 + i, i % 10 === 0 ? 'connected' : undefined));
    telemetry.insertMany(batch);
    const stored = [...telemetry.listBySession('session_1_1'), ...telemetry.listBySession('session_2_2')].sort((a, b) => a.id - b.id);
    expect(stored.map(({ id: _id, ts: _ts, ...r }) => r)).toEqual(batch);
    expect(stored.map((r) => r.ts)).toEqual(batch.map((_, i) => T0 + i));
    expect([telemetry.usageBySession('session_1_1').rows, telemetry.usageBySession('session_2_2').rows]).toEqual([62, 61]);
  });

  it("keeps the session's diagnosis as its rows read after each batch, and keeps it when the rows are deleted", () => {
    const history = new SqliteSessionHistoryRepository(db);
    const stats = (at: number, framesDecoded: string, fps: string): TelemetryRowRecord => ({ ...row('session_1_1', at), row: { timestamp: iso(at), framesDecoded, FPS: fps } });
    expect(history.diagnosisOf('session_1_1')).toBe('neverReported');
    telemetry.insertMany([row('session_1_1', T0, 'sdpAnswer')]);
    expect(history.diagnosisOf('session_1_1')).toBe('mediaNeverConnected');
    telemetry.insertMany([row('session_1_1', T0 + 1, 'connected'), stats(T0 + 2, '0', '0')]);
    expect(history.diagnosisOf('session_1_1')).toBe('connectedWithoutVideo');
    telemetry.insertMany([stats(T0 + 3, '240', '60')]);
    expect(history.diagnosisOf('session_1_1')).toBe('videoDelivered');
    expect(history.diagnosisOf('session_2_2')).toBe('neverReported'); // untouched by another session's rows
    // Retention deletes the rows (all were received at T0 + 60 s); what they said stays with the session.
    expect(new SqliteLogRetentionRepository(db).deleteTelemetryBefore(T0 + 60_001, 100)).toBe(4);
    expect(telemetry.listBySession('session_1_1')).toEqual([]);
    expect(history.diagnosisOf('session_1_1')).toBe('videoDelivered');
  });

  it("takes the relay's witness of video shown into the diagnosis, once, unless the player's statistics say otherwise", () => {
    const history = new SqliteSessionHistoryRepository(db);
    const store = new SqliteSessionDiagnosisRepository(db);
    // A viewer who left before its player reported anything.
    expect(store.videoShown('session_1_1', T0)).toBe(true);
    expect(store.videoShown('session_1_1', T0 + 5)).toBe(false);
    expect(history.diagnosisOf('session_1_1')).toBe('videoDelivered');
    // Its events arrive late (pagehide): still delivered, the statistics being silent.
    telemetry.insertMany([row('session_1_1', T0, 'connected')]);
    expect(history.diagnosisOf('session_1_1')).toBe('videoDelivered');
    // Statistics that decoded nothing outrank the relay.
    telemetry.insertMany([{ ...row('session_2_2', T0), row: { timestamp: iso(T0), framesDecoded: '0', FPS: '0' } }]);
    store.videoShown('session_2_2', T0);
    expect(history.diagnosisOf('session_2_2')).toBe('connectedWithoutVideo');
  });

  it('stores a batch in one transaction: a failing row stores none of it', () => {
    expect(() => telemetry.insertMany([row('session_1_1', T0), row('session_gone', T0)])).toThrow(/FOREIGN KEY/);
    expect(telemetry.listBySession('session_1_1')).toEqual([]);
    expect(telemetry.usageBySession('session_1_1')).toEqual({ rows: 0, bytes: 0 });
  });

  it('pages newest first by the row time (ties by arrival), with logType and inclusive date filters and the matching total', () => {
    // Arrival order differs from row time; two rows share a time.
    telemetry.insertMany([row('session_1_1', T0 + 3000), row('session_1_1', T0 + 1000, 'sdpOffer'), row('session_1_1', T0 + 2000, 'connected')]);
    telemetry.insertMany([row('session_1_1', T0 + 2000), row('session_1_1', T0 + 4000, 'disconnected'), row('session_2_2', T0 + 5000, 'connected')]);
    // An offset timestamp is ordered by the instant it names.
    telemetry.insertMany([{ ...row('session_1_1', 0, 'visibilitychange'), timestamp: '2026-11-21T08:00:02.500+02:00' }]);
    const times = (q: Parameters<SqliteTelemetryRepository['pageBySession']>[0]) => {
      const page = telemetry.pageBySession(q);
      return [page.total, page.rows.map((r) => [r.ts - T0, r.event ?? 'stats'])];
    };
    const all = { sessionId: 'session_1_1', limit: 100, skip: 0 };
    expect(times(all)).toEqual([
      6,
      [
        [4000, 'disconnected'],
        [3000, 'stats'],
        [2500, 'visibilitychange'],
        [2000, 'stats'],
        [2000, 'connected'],
        [1000, 'sdpOffer'],
      ],
    ]);
    expect(times({ ...all, limit: 2, skip: 2 })).toEqual([6, [[2500, 'visibilitychange'], [2000, 'stats']]]);
    expect(times({ ...all, logType: 'Webrtc' })).toEqual([4, [[4000, 'disconnected'], [2500, 'visibilitychange'], [2000, 'connected'], [1000, 'sdpOffer']]]);
    expect(times({ ...all, logType: 'Webrtc', from: T0 + 2000, to: T0 + 2500 })).toEqual([2, [[2500, 'visibilitychange'], [2000, 'connected']]]);
    expect(times({ ...all, from: T0 + 3000 })).toEqual([2, [[4000, 'disconnected'], [3000, 'stats']]]);
    expect(times({ ...all, skip: 6 })).toEqual([6, []]);
    expect(times({ ...all, limit: 0 })).toEqual([6, []]);
    // The stored row is the one to return, with the time the page wrote.
    expect(telemetry.pageBySession({ ...all, limit: 1 }).rows[0]).toMatchObject({ row: { logType: 'Webrtc', event: 'disconnected', timestamp: iso(T0 + 4000) } });
  });

  it('reads pages through the session/time index without sorting', () => {
    const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ s: 'x', a: 0, b: 1 }) as { detail: string }[]).map((r) => r.detail).join(' | ');
    const page = plan("SELECT * FROM telemetry_rows WHERE session_id = @s AND ts >= @a AND ts <= @b AND log_type = 'Webrtc' ORDER BY ts DESC, id DESC LIMIT 10 OFFSET 5");
    expect(page).toContain('telemetry_rows_session_ts');
    expect(page).not.toContain('TEMP B-TREE');
    expect(plan("SELECT COUNT(*) FROM telemetry_rows WHERE session_id = @s AND ts >= @a AND ts <= @b AND log_type = 'Webrtc'")).toContain('COVERING INDEX telemetry_rows_session_ts');
  });
});
