// TelemetryRepository held to one contract in both stores: each batch is stored whole, in order and
// in one transaction, adds its rows and UTF-8 bytes to its sessions' totals and stores their
// diagnoses as the rows now read (also when two batches of the same sessions commit at once); pages
// are newest first by the row's own time with inclusive filters. The stored diagnosis is read back
// through SessionHistoryRepository.diagnosisOf.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PostgresRepositories } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

type TelemetryRowRecord = Parameters<PostgresRepositories['telemetry']['insertMany']>[0][number];
type PageQuery = Parameters<PostgresRepositories['telemetry']['pageBySession']>[0];

const T0 = Date.UTC(2026, 10, 21, 6);
const iso = (ms: number) => new Date(ms).toISOString();
const storedRowBytes = (row: Record<string, unknown>) => Buffer.byteLength(JSON.stringify(row));

/** An event row (with an event) or a statistics row (without) of the session, timed at `at`. */
const row = (sessionId: string, at: number, event?: string): TelemetryRowRecord => ({
  sessionId,
  projectId: 'prj_1',
  logType: event === undefined ? undefined : 'Webrtc',
  event,
  timestamp: iso(at),
  receivedAt: T0 + 60_000,
  row: event === undefined ? { timestamp: iso(at), FPS: '30' } : { logType: 'Webrtc', event, timestamp: iso(at) },
});

/** A statistics row with these counters (the player reports strings). */
const stats = (sessionId: string, at: number, framesDecoded: string, fps: string): TelemetryRowRecord => ({
  ...row(sessionId, at),
  row: { timestamp: iso(at), framesDecoded, FPS: fps },
});

describe.each(cases)('TelemetryRepository ($name)', (store) => {
  let db: OpenedStore;

  /** Inserts one row; SQL both dialects read alike (RETURNING so SQLite's probe, which reads rows, accepts an INSERT). */
  const insert = async (table: string, values: Record<string, string | number>) => {
    const columns = Object.keys(values);
    await db.rows(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1 AS inserted`, Object.values(values));
  };

  const session = (id: string) => insert('sessions', { id, project_id: 'prj_1', region: 'europe', status: 'Running', created_at: 1, updated_at: 1 });

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_1', email: 'u@example.com', createdAt: 1 });
    await insert('projects', { id: 'prj_1', owner_user_id: 'usr_1', name: 'p', region: 'europe', created_at: 1 });
    for (const id of ['session_1_1', 'session_2_2']) await session(id);
  });

  afterEach(async () => {
    await db.close();
  });

  const telemetry = () => db.repositories.telemetry;
  const diagnosisOf = (sessionId: string) => db.repositories.sessionHistory.diagnosisOf(sessionId);

  it('keeps the accepted rows and their stored bytes on the session, batch by batch', async () => {
    const rows = [row('session_1_1', T0), row('session_1_1', T0 + 1, 'connected'), row('session_2_2', T0), row('session_1_1', T0 + 2)];
    await telemetry().insertMany(rows.slice(0, 3));
    await telemetry().insertMany(rows.slice(3));
    const bytesOf = (sessionId: string) => rows.filter((r) => r.sessionId === sessionId).reduce((n, r) => n + storedRowBytes(r.row), 0);
    expect(await telemetry().usageBySession('session_1_1')).toEqual({ rows: 3, bytes: bytesOf('session_1_1') });
    expect(await telemetry().usageBySession('session_2_2')).toEqual({ rows: 1, bytes: bytesOf('session_2_2') });
    expect(await telemetry().usageBySession('session_9_9')).toEqual({ rows: 0, bytes: 0 });
    // Bytes are UTF-8 bytes, not characters.
    await telemetry().insertMany([{ ...row('session_2_2', T0 + 3), row: { note: 'é€😀' } }]);
    expect((await telemetry().usageBySession('session_2_2')).bytes).toBe(bytesOf('session_2_2') + Buffer.byteLength('{"note":"é€😀"}'));
  });

  it('stores a batch of any size whole and in order, every field as given', async () => {
    const batch = Array.from({ length: 123 }, (_, i) => row(i % 2 === 0 ? 'session_1_1' : 'session_2_2', T0 + i, i % 10 === 0 ? 'connected' : undefined));
    // Text as the page wrote it: quotes, backslashes, braces and commas (array syntax) and non-ASCII survive.
    batch.push({ ...row('session_1_1', T0 + 200, 'a "quoted", {braced} \\ évent'), row: { s: '"{,}\\ ✓', n: 1, nested: { list: [1, 'two', null] } } });
    await telemetry().insertMany(batch);
    const stored = [...(await telemetry().listBySession('session_1_1')), ...(await telemetry().listBySession('session_2_2'))].sort((a, b) => a.id - b.id);
    expect(stored.map(({ id: _id, ts: _ts, ...r }) => r)).toEqual(batch);
    expect(stored.map((r) => r.ts)).toEqual(batch.map((r) => Date.parse(r.timestamp)));
    expect([(await telemetry().usageBySession('session_1_1')).rows, (await telemetry().usageBySession('session_2_2')).rows]).toEqual([63, 61]);
    // Each session's list is in insertion order.
    const ids = (await telemetry().listBySession('session_1_1')).map((r) => r.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('stores nothing for an empty batch', async () => {
    await telemetry().insertMany([]);
    expect(await telemetry().usageBySession('session_1_1')).toEqual({ rows: 0, bytes: 0 });
    expect(await diagnosisOf('session_1_1')).toBe('neverReported');
  });

  it("keeps the session's diagnosis as its rows read after each batch, and keeps it when the rows are deleted", async () => {
    expect(await diagnosisOf('session_1_1')).toBe('neverReported');
    await telemetry().insertMany([row('session_1_1', T0, 'sdpAnswer')]);
    expect(await diagnosisOf('session_1_1')).toBe('mediaNeverConnected');
    await telemetry().insertMany([row('session_1_1', T0 + 1, 'connected'), stats('session_1_1', T0 + 2, '0', '0')]);
    expect(await diagnosisOf('session_1_1')).toBe('connectedWithoutVideo');
    await telemetry().insertMany([stats('session_1_1', T0 + 3, '240', '60')]);
    expect(await diagnosisOf('session_1_1')).toBe('videoDelivered');
    expect(await diagnosisOf('session_2_2')).toBe('neverReported'); // untouched by another session's rows
    // Retention deletes the rows (all were received at T0 + 60 s); what they said stays with the session.
    expect(await db.repositories.logRetention.deleteTelemetryBefore(T0 + 60_001, 100)).toBe(4);
    expect(await telemetry().listBySession('session_1_1')).toEqual([]);
    expect(await diagnosisOf('session_1_1')).toBe('videoDelivered');
  });

  it('reads the oldest and newest statistics rows by their time, not by their arrival', async () => {
    // framesDecoded rose from the oldest row (0) to the newest (540), FPS 0 in each: delivered only
    // when the rows are ordered by time; they arrived newest first, so by arrival the first is the
    // highest (540) and the last the lowest (0).
    await telemetry().insertMany([
      row('session_1_1', T0 + 1_000, 'sdpAnswer'),
      stats('session_1_1', T0 + 9_000, '540', '0'),
      stats('session_1_1', T0 + 6_000, '180', '0'),
      stats('session_1_1', T0 + 3_000, '0', '0'),
    ]);
    expect(await diagnosisOf('session_1_1')).toBe('videoDelivered');
    // `connected` counts only on an event row: a statistics row (no logType) may carry an event field too.
    await telemetry().insertMany([row('session_2_2', T0, 'sdpAnswer'), { ...stats('session_2_2', T0 + 1, '0', '0'), event: 'connected' }]);
    expect(await diagnosisOf('session_2_2')).toBe('mediaNeverConnected');
  });

  it("takes the relay's witness of video shown into the diagnosis, unless the player's statistics say otherwise", async () => {
    const videoShown = (sessionId: string) => db.rows('UPDATE sessions SET video_shown_at = ? WHERE id = ? RETURNING id', [T0, sessionId]);
    // A viewer who left before its player reported anything; its events arrive late (pagehide):
    // delivered, the statistics being silent.
    await videoShown('session_1_1');
    await telemetry().insertMany([row('session_1_1', T0, 'connected')]);
    expect(await diagnosisOf('session_1_1')).toBe('videoDelivered');
    // Statistics that decoded nothing outrank the relay.
    await telemetry().insertMany([stats('session_2_2', T0, '0', '0')]);
    await videoShown('session_2_2');
    await telemetry().insertMany([row('session_2_2', T0 + 1, 'connected')]);
    expect(await diagnosisOf('session_2_2')).toBe('connectedWithoutVideo');
  });

  it('stores a batch in one transaction: a failing row stores none of it, nor its totals or diagnosis', async () => {
    await expect(telemetry().insertMany([row('session_1_1', T0, 'sdpAnswer'), row('session_gone', T0)])).rejects.toThrow(/foreign key/i);
    expect(await telemetry().listBySession('session_1_1')).toEqual([]);
    expect(await telemetry().usageBySession('session_1_1')).toEqual({ rows: 0, bytes: 0 });
    expect(await diagnosisOf('session_1_1')).toBe('neverReported');
  });

  it('two batches naming the same sessions at once both count, and each diagnosis reads both', async () => {
    // Reads at once first, so that a pooled store has a connection open for each batch and the two
    // transactions overlap, rather than the second waiting for a connection to be opened.
    await Promise.all([1, 2, 3, 4].map(() => telemetry().usageBySession('session_1_1')));
    // Several rounds, on fresh sessions: how two transactions interleave varies from one run to the next.
    for (let round = 1; round <= 5; round++) {
      const [a, b] = [`session_a_${round}`, `session_b_${round}`];
      await session(a);
      await session(b);
      // Each batch names both sessions, in opposite orders; each session gets sdpAnswer from one
      // batch and connected from the other: only a diagnosis that reads both says connectedWithoutVideo.
      await Promise.all([
        telemetry().insertMany([row(a, T0, 'sdpAnswer'), row(b, T0, 'connected')]),
        telemetry().insertMany([row(b, T0 + 1, 'sdpAnswer'), row(a, T0 + 1, 'connected')]),
      ]);
      for (const id of [a, b]) {
        expect((await telemetry().usageBySession(id)).rows).toBe(2);
        expect(await diagnosisOf(id)).toBe('connectedWithoutVideo');
      }
    }
  });

  it('pages newest first by the row time (ties by arrival), with logType and inclusive date filters and the matching total', async () => {
    // Arrival order differs from row time; two rows share a time.
    await telemetry().insertMany([row('session_1_1', T0 + 3000), row('session_1_1', T0 + 1000, 'sdpOffer'), row('session_1_1', T0 + 2000, 'connected')]);
    await telemetry().insertMany([row('session_1_1', T0 + 2000), row('session_1_1', T0 + 4000, 'disconnected'), row('session_2_2', T0 + 5000, 'connected')]);
    // An offset timestamp is ordered by the instant it names.
    await telemetry().insertMany([{ ...row('session_1_1', 0, 'visibilitychange'), timestamp: '2026-11-21T08:00:02.500+02:00' }]);
    const times = async (q: PageQuery) => {
      const page = await telemetry().pageBySession(q);
      return [page.total, page.rows.map((r) => [r.ts - T0, r.event ?? 'stats'])];
    };
    const all = { sessionId: 'session_1_1', limit: 100, skip: 0 };
    expect(await times(all)).toEqual([
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
    expect(await times({ ...all, limit: 2, skip: 2 })).toEqual([6, [[2500, 'visibilitychange'], [2000, 'stats']]]);
    expect(await times({ ...all, logType: 'Webrtc' })).toEqual([4, [[4000, 'disconnected'], [2500, 'visibilitychange'], [2000, 'connected'], [1000, 'sdpOffer']]]);
    expect(await times({ ...all, logType: 'statistics' })).toEqual([2, [[3000, 'stats'], [2000, 'stats']]]);
    expect(await times({ ...all, logType: 'Webrtc', from: T0 + 2000, to: T0 + 2500 })).toEqual([2, [[2500, 'visibilitychange'], [2000, 'connected']]]);
    expect(await times({ ...all, from: T0 + 3000 })).toEqual([2, [[4000, 'disconnected'], [3000, 'stats']]]);
    expect(await times({ ...all, to: T0 + 1999 })).toEqual([1, [[1000, 'sdpOffer']]]);
    expect(await times({ ...all, skip: 6 })).toEqual([6, []]);
    expect(await times({ ...all, limit: 0 })).toEqual([6, []]);
    expect(await times({ ...all, sessionId: 'session_9_9' })).toEqual([0, []]);
    // The stored row is the one to return, with the time the page wrote.
    expect((await telemetry().pageBySession({ ...all, limit: 1 })).rows[0]).toMatchObject({
      row: { logType: 'Webrtc', event: 'disconnected', timestamp: iso(T0 + 4000) },
      timestamp: iso(T0 + 4000),
      sessionId: 'session_1_1',
      projectId: 'prj_1',
      receivedAt: T0 + 60_000,
    });
  });
});
