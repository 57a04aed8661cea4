// A project's session list over a real SQLite file: each filter (status, diagnosis, country,
// browser) alone and together, newest first within the window, each through its own index; the
// exact count, and the count the dashboard asks for, stopped at a cap.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../db/database';
import { openRepositoryTestDb, seedSession, sessionRecord, type RepositoryTestDb } from './repository-test-db';
import { SqliteSessionHistoryRepository, type SessionListQuery } from './session-history';
import { SqliteTelemetryRepository } from './telemetry';
import type { ClientDimensions } from './session-dimensions';

let testDb: RepositoryTestDb;
let db: Db;
let history: SqliteSessionHistoryRepository;

const T0 = Date.UTC(2026, 10, 21, 6);
const chrome: ClientDimensions = { browser: 'Chrome', os: 'Windows', country: 'Germany', countryCode: 'DE' };
const firefox: ClientDimensions = { browser: 'Firefox', os: 'Linux', country: 'France', countryCode: 'FR' };

/** A Terminated session created at T0 + minute minutes, by that client, whose player reported video or not. */
function session(id: string, minute: number, client: ClientDimensions, video: boolean | undefined, projectId = 'prj_1'): void {
  const at = T0 + minute * 60_000;
  seedSession(db, sessionRecord(id, at, { projectId, status: 'Terminated', client }));
  if (video === undefined) return;
  const timestamp = new Date(at).toISOString();
  // Through the ingest's own write, which stores the diagnosis.
  new SqliteTelemetryRepository(db).insertMany([
    { sessionId: id, projectId, logType: 'Webrtc', event: 'connected', timestamp, receivedAt: at, row: { event: 'connected' } },
    { sessionId: id, projectId, logType: undefined, event: undefined, timestamp, receivedAt: at, row: { framesDecoded: video ? '300' : '0', FPS: video ? '60' : '0' } },
  ]);
}

const ids = (q: Partial<SessionListQuery>) => history.list({ projectId: 'prj_1', fromMs: T0, toMs: T0 + 3_600_000, limit: 50, skip: 0, ...q }).sessions.map((s) => s.session.sessionId);

beforeEach(() => {
  testDb = openRepositoryTestDb('pf-session-history-');
  db = testDb.db;
  history = new SqliteSessionHistoryRepository(db);
  session('s_1', 1, chrome, true);
  session('s_2', 2, firefox, false);
  session('s_3', 3, chrome, undefined);
  session('s_4', 4, firefox, true);
  session('s_5', 5, chrome, false);
  session('s_late', 90, chrome, true); // outside the hour
  session('s_other', 3, chrome, true, 'prj_2'); // another project's
});

afterEach(() => testDb.remove());

describe('SqliteSessionHistoryRepository.list', () => {
  it('filters by status, diagnosis, country and browser, alone and together, newest first within the window', () => {
    expect(ids({})).toEqual(['s_5', 's_4', 's_3', 's_2', 's_1']);
    expect(ids({ diagnosis: 'videoDelivered' })).toEqual(['s_4', 's_1']);
    expect(ids({ diagnosis: 'connectedWithoutVideo' })).toEqual(['s_5', 's_2']);
    expect(ids({ diagnosis: 'neverReported' })).toEqual(['s_3']);
    expect(ids({ country: 'France' })).toEqual(['s_4', 's_2']);
    expect(ids({ browser: 'Chrome' })).toEqual(['s_5', 's_3', 's_1']);
    expect(ids({ browser: 'Chrome', diagnosis: 'connectedWithoutVideo' })).toEqual(['s_5']);
    expect(ids({ status: 'Terminated', country: 'Germany', browser: 'Chrome', diagnosis: 'videoDelivered' })).toEqual(['s_1']);
    expect(ids({ status: 'Running' })).toEqual([]);
    expect(ids({ country: 'Nowhere' })).toEqual([]);
    expect(ids({ toMs: T0 + 2 * 3_600_000, diagnosis: 'videoDelivered' })).toEqual(['s_late', 's_4', 's_1']);
    // Each listed session carries its stored diagnosis.
    expect(history.list({ projectId: 'prj_1', fromMs: T0, toMs: T0 + 3_600_000, limit: 2, skip: 0 }).sessions.map((s) => s.diagnosis)).toEqual(['connectedWithoutVideo', 'videoDelivered']);
  });

  it('walks the index of its filter (or the window\'s), newest first, with no sort step; counts from the index alone', () => {
    const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join(' | ');
    const window = 'created_at >= 0 AND created_at <= 1';
    for (const filter of ['status', 'diagnosis', 'country', 'browser']) {
      const from = `sessions INDEXED BY sessions_project_${filter} WHERE project_id = 'prj_1' AND pooled = 0 AND ${filter} = 'x' AND ${window}`;
      expect(plan(`SELECT * FROM ${from} ORDER BY created_at DESC, id DESC LIMIT 25`)).toBe(
        `SEARCH sessions USING INDEX sessions_project_${filter} (project_id=? AND ${filter}=? AND created_at>? AND created_at<?)`,
      );
      expect(plan(`SELECT COUNT(*) FROM ${from}`)).toContain(`USING COVERING INDEX sessions_project_${filter} `);
    }
    expect(plan(`SELECT * FROM sessions INDEXED BY sessions_project_created WHERE project_id = 'prj_1' AND pooled = 0 AND ${window} ORDER BY created_at DESC, id DESC LIMIT 25`)).toBe(
      'SEARCH sessions USING INDEX sessions_project_created (project_id=? AND created_at>? AND created_at<?)',
    );
  });

  it('with several filters, walks the index of the one that matches fewest sessions in the window', () => {
    const prepared: string[] = [];
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      prepared.push(sql);
      return prepare(sql);
    });
    const walked = (q: Partial<SessionListQuery>) => {
      prepared.length = 0;
      const listed = ids(q);
      // The last page statement prepared: choosing prepares each filter's own statements first.
      const page = prepared.findLast((sql) => sql.includes('ORDER BY'));
      return { listed, index: page === undefined ? 'prepared before' : /INDEXED BY (\w+)/.exec(page)?.[1] };
    };
    // France: 2 of the hour's 5 sessions; Chrome: 3.
    expect(walked({ browser: 'Chrome', country: 'France' })).toEqual({ listed: [], index: 'sessions_project_country' });
    expect(walked({ browser: 'Firefox', status: 'Terminated' })).toEqual({ listed: ['s_4', 's_2'], index: 'sessions_project_browser' });
    // Firefox 2, videoDelivered 2, Terminated 5: the first of the fewest, in FILTERS' order.
    expect(walked({ browser: 'Firefox', diagnosis: 'videoDelivered', status: 'Terminated' })).toEqual({ listed: ['s_4'], index: 'sessions_project_diagnosis' });
    session('s_6', 6, { ...chrome, country: 'France' }, true);
    session('s_7', 7, { ...chrome, country: 'France' }, true);
    // France now 4, Chrome 5, videoDelivered 4: the first of the fewest (diagnosis before country in FILTERS).
    expect(walked({ browser: 'Chrome', country: 'France', diagnosis: 'videoDelivered' })).toEqual({ listed: ['s_7', 's_6'], index: 'sessions_project_diagnosis' });
  });

  it('counts exactly without a cap; with one, stops at it and says the count is not exact', () => {
    const page = (q: Partial<SessionListQuery>) => history.list({ projectId: 'prj_1', fromMs: T0, toMs: T0 + 3_600_000, limit: 2, skip: 0, ...q });
    expect(page({})).toMatchObject({ total: 5, totalExact: true });
    expect(page({ countCap: 3 })).toMatchObject({ total: 3, totalExact: false });
    expect(page({ countCap: 3 }).sessions).toHaveLength(2);
    expect(page({ countCap: 5 })).toMatchObject({ total: 5, totalExact: false }); // the cap reached: more may match
    expect(page({ countCap: 6 })).toMatchObject({ total: 5, totalExact: true });
    expect(page({ diagnosis: 'videoDelivered', countCap: 3 })).toMatchObject({ total: 2, totalExact: true });
    // A page past a capped count still reads the sessions there; past an exact one, none.
    expect(page({ countCap: 3, skip: 4 }).sessions.map((s) => s.session.sessionId)).toEqual(['s_1']);
    expect(page({ skip: 5 }).sessions).toEqual([]);
  });
});
