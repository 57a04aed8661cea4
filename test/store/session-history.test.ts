// SessionHistoryRepository held to one contract in both stores: a session's snapshots oldest first;
// a project's session list in a window, newest first, filtered by status, diagnosis, country and
// browser alone and together, each entry with its status times (the first snapshot of each status)
// and its stored diagnosis; counted exactly, or up to a cap. (Which index SQLite walks is
// control-plane/src/repositories/session-history.test.ts's.)
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClientDimensions, PostgresRepositories } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

type SessionListQuery = Parameters<PostgresRepositories['sessionHistory']['list']>[0];

const T0 = Date.UTC(2026, 10, 21, 6);
const HOUR = 3_600_000;
const chrome: ClientDimensions = { browser: 'Chrome', os: 'Windows', country: 'Germany', countryCode: 'DE' };
const firefox: ClientDimensions = { browser: 'Firefox', os: 'Linux', country: 'France', countryCode: 'FR' };

describe.each(cases)('SessionHistoryRepository ($name)', (store) => {
  let db: OpenedStore;

  /** Inserts one row; SQL both dialects read alike (RETURNING so SQLite's probe, which reads rows, accepts an INSERT). */
  const insert = async (table: string, values: Record<string, string | number | null>) => {
    const columns = Object.keys(values);
    await db.rows(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1 AS inserted`, Object.values(values));
  };

  /** A snapshot row of the session, as the sessions repository writes one. */
  const snapshot = (sessionId: string, status: string, receivedAt: number, projectId = 'prj_1') =>
    insert('session_snapshots', { session_id: sessionId, received_at: receivedAt, data: JSON.stringify({ sessionId, projectId, status, region: 'europe' }) });

  /**
   * A Terminated session created at T0 + minute minutes by that client, with its Enqueued snapshot,
   * whose player reported video (or not, or nothing), through the ingest's own write, which stores
   * the diagnosis.
   */
  const session = async (id: string, minute: number, client: ClientDimensions, video: boolean | undefined, projectId = 'prj_1') => {
    const at = T0 + minute * 60_000;
    await insert('sessions', {
      id,
      project_id: projectId,
      region: 'europe',
      status: 'Terminated',
      created_at: at,
      updated_at: at,
      browser: client.browser ?? null,
      os: client.os ?? null,
      country: client.country ?? null,
      country_code: client.countryCode ?? null,
    });
    await snapshot(id, 'Enqueued', at, projectId);
    if (video === undefined) return;
    const timestamp = new Date(at).toISOString();
    await db.repositories.telemetry.insertMany([
      { sessionId: id, projectId, logType: 'Webrtc', event: 'connected', timestamp, receivedAt: at, row: { event: 'connected' } },
      { sessionId: id, projectId, logType: undefined, event: undefined, timestamp, receivedAt: at, row: { framesDecoded: video ? '300' : '0', FPS: video ? '60' : '0' } },
    ]);
  };

  const history = () => db.repositories.sessionHistory;
  const list = (q: Partial<SessionListQuery>) => history().list({ projectId: 'prj_1', fromMs: T0, toMs: T0 + HOUR, limit: 50, skip: 0, ...q });
  const ids = async (q: Partial<SessionListQuery>) => (await list(q)).sessions.map((s) => s.session.sessionId);

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_1', email: 'u@example.com', createdAt: 1 });
    for (const id of ['prj_1', 'prj_2']) await insert('projects', { id, owner_user_id: 'usr_1', name: 'p', region: 'europe', created_at: 1 });
    await session('s_1', 1, chrome, true);
    await session('s_2', 2, firefox, false);
    await session('s_3', 3, chrome, undefined);
    await session('s_4', 4, firefox, true);
    await session('s_5', 5, chrome, false);
    await session('s_late', 90, chrome, true); // outside the hour
    await session('s_other', 3, chrome, true, 'prj_2'); // another project's
  });

  afterEach(async () => {
    await db.close();
  });

  it('filters by status, diagnosis, country and browser, alone and together, newest first within the window', async () => {
    expect(await ids({})).toEqual(['s_5', 's_4', 's_3', 's_2', 's_1']);
    expect(await ids({ diagnosis: 'videoDelivered' })).toEqual(['s_4', 's_1']);
    expect(await ids({ diagnosis: 'connectedWithoutVideo' })).toEqual(['s_5', 's_2']);
    expect(await ids({ diagnosis: 'neverReported' })).toEqual(['s_3']);
    expect(await ids({ country: 'France' })).toEqual(['s_4', 's_2']);
    expect(await ids({ browser: 'Chrome' })).toEqual(['s_5', 's_3', 's_1']);
    expect(await ids({ browser: 'Chrome', diagnosis: 'connectedWithoutVideo' })).toEqual(['s_5']);
    expect(await ids({ status: 'Terminated', country: 'Germany', browser: 'Chrome', diagnosis: 'videoDelivered' })).toEqual(['s_1']);
    expect(await ids({ browser: 'Chrome', country: 'France' })).toEqual([]);
    expect(await ids({ browser: 'Firefox', status: 'Terminated' })).toEqual(['s_4', 's_2']);
    expect(await ids({ browser: 'Firefox', diagnosis: 'videoDelivered', status: 'Terminated' })).toEqual(['s_4']);
    expect(await ids({ status: 'Running' })).toEqual([]);
    expect(await ids({ country: 'Nowhere' })).toEqual([]);
    expect(await ids({ toMs: T0 + 2 * HOUR, diagnosis: 'videoDelivered' })).toEqual(['s_late', 's_4', 's_1']);
    // The window is inclusive at both ends.
    expect(await ids({ fromMs: T0 + 2 * 60_000, toMs: T0 + 4 * 60_000 })).toEqual(['s_4', 's_3', 's_2']);
    // Each listed session carries its stored diagnosis.
    expect((await list({ limit: 2 })).sessions.map((s) => s.diagnosis)).toEqual(['connectedWithoutVideo', 'videoDelivered']);
  });

  it('lists sessions of the same time by id, newest first, and pages through them', async () => {
    for (const id of ['s_t_b', 's_t_a', 's_t_c']) await session(id, 10, chrome, undefined);
    expect(await ids({ fromMs: T0 + 10 * 60_000 })).toEqual(['s_t_c', 's_t_b', 's_t_a']);
    expect(await ids({ fromMs: T0 + 10 * 60_000, limit: 1, skip: 1 })).toEqual(['s_t_b']);
    expect(await ids({ limit: 2, skip: 4 })).toEqual(['s_4', 's_3']);
    expect(await ids({ limit: 0 })).toEqual([]);
  });

  it('never lists a warm instance no viewer has claimed', async () => {
    await insert('sessions', { id: 's_warm', project_id: 'prj_1', region: 'europe', status: 'Running', created_at: T0 + 30 * 60_000, updated_at: T0, pooled: 1 });
    expect(await ids({})).toEqual(['s_5', 's_4', 's_3', 's_2', 's_1']);
    expect(await ids({ status: 'Running' })).toEqual([]);
    expect((await list({})).total).toBe(5);
  });

  it('gives each listed session the session as stored and when each of its statuses was first recorded', async () => {
    const at = T0 + 20 * 60_000;
    await insert('sessions', {
      id: 's_full',
      project_id: 'prj_1',
      region: 'europe',
      status: 'Terminated',
      assigned_worker: 'wrk_1',
      streaming_id: 'str_1',
      player_id: 'ply_1',
      max_run_time: 600,
      end_reason: 'viewer left',
      placed_at: at + 500,
      created_at: at,
      updated_at: at + 9_000,
      upload_id: 'upl_1',
      identified_at: at + 700,
      claimed_at: at,
      browser: 'Chrome',
      os: 'Windows',
      device_type: 'desktop',
      country: 'Germany',
      country_code: 'DE',
      city: 'Berlin',
    });
    // Out of order and repeated: the first time of each status counts.
    await snapshot('s_full', 'Running', at + 2_000);
    await snapshot('s_full', 'Enqueued', at);
    await snapshot('s_full', 'Starting', at + 500);
    await snapshot('s_full', 'Running', at + 1_500);
    await snapshot('s_full', 'Terminated', at + 9_000);
    const [entry] = (await list({ fromMs: at })).sessions;
    expect(entry).toEqual({
      session: {
        sessionId: 's_full',
        projectId: 'prj_1',
        region: 'europe',
        status: 'Terminated',
        assignedWorker: 'wrk_1',
        streamingId: 'str_1',
        playerId: 'ply_1',
        maxRunTime: 600,
        endReason: 'viewer left',
        placedAt: at + 500,
        identifiedAt: at + 700,
        createdAt: at,
        updatedAt: at + 9_000,
        uploadId: 'upl_1',
        claimedAt: at,
        client: { browser: 'Chrome', os: 'Windows', deviceType: 'desktop', country: 'Germany', countryCode: 'DE', city: 'Berlin' },
      },
      statusTimes: { Enqueued: at, Starting: at + 500, Running: at + 1_500, Terminated: at + 9_000 },
      diagnosis: 'neverReported',
    });
    // A session without snapshots has no status times; the others have their Enqueued only.
    await insert('sessions', { id: 's_bare', project_id: 'prj_1', region: 'europe', status: 'Enqueued', created_at: at + 1, updated_at: at + 1 });
    const page = await list({ fromMs: at });
    expect(page.sessions.map((s) => [s.session.sessionId, s.statusTimes])).toEqual([
      ['s_bare', {}],
      ['s_full', { Enqueued: at, Starting: at + 500, Running: at + 1_500, Terminated: at + 9_000 }],
    ]);
    expect((await list({ limit: 1, toMs: T0 + 10 * 60_000 })).sessions[0]?.statusTimes).toEqual({ Enqueued: T0 + 5 * 60_000 });
  });

  it('counts exactly without a cap; with one, stops at it and says the count is not exact', async () => {
    const page = (q: Partial<SessionListQuery>) => list({ limit: 2, ...q });
    expect(await page({})).toMatchObject({ total: 5, totalExact: true });
    expect(await page({ countCap: 3 })).toMatchObject({ total: 3, totalExact: false });
    expect((await page({ countCap: 3 })).sessions).toHaveLength(2);
    expect(await page({ countCap: 5 })).toMatchObject({ total: 5, totalExact: false }); // the cap reached: more may match
    expect(await page({ countCap: 6 })).toMatchObject({ total: 5, totalExact: true });
    expect(await page({ diagnosis: 'videoDelivered', countCap: 3 })).toMatchObject({ total: 2, totalExact: true });
    expect(await page({ browser: 'Chrome', country: 'Germany' })).toMatchObject({ total: 3, totalExact: true });
    // A page past a capped count still reads the sessions there; past an exact one, none.
    expect((await page({ countCap: 3, skip: 4 })).sessions.map((s) => s.session.sessionId)).toEqual(['s_1']);
    expect((await page({ skip: 5 })).sessions).toEqual([]);
  });

  it("reads a session's snapshots oldest first, and its diagnosis (neverReported for an unknown session)", async () => {
    await snapshot('s_1', 'Starting', T0 + 61_000);
    await snapshot('s_1', 'Running', T0 + 60_500);
    const snapshots = await history().snapshots('s_1');
    expect(snapshots.map((s) => [s.receivedAt, s.data.status])).toEqual([
      [T0 + 60_000, 'Enqueued'],
      [T0 + 61_000, 'Starting'],
      [T0 + 60_500, 'Running'],
    ]);
    expect(snapshots[0]).toEqual({ id: snapshots[0]!.id, receivedAt: T0 + 60_000, data: { sessionId: 's_1', projectId: 'prj_1', status: 'Enqueued', region: 'europe' } });
    expect(snapshots.map((s) => s.id)).toEqual([...snapshots.map((s) => s.id)].sort((a, b) => a - b));
    expect(await history().snapshots('s_nobody')).toEqual([]);
    expect(await history().diagnosisOf('s_1')).toBe('videoDelivered');
    expect(await history().diagnosisOf('s_2')).toBe('connectedWithoutVideo');
    expect(await history().diagnosisOf('s_nobody')).toBe('neverReported');
  });
});
