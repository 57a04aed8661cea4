// The analytics API over real HTTP on a real SQLite file: every spec error row of the session,
// telemetry and log file reads (status, message, code, field), paging edges, the 92-day window,
// the orders (telemetry newest first, snapshots oldest first, sessions newest first), key scope
// (READONLY member reads, a removed member is refused at once), the per-key read limit on an
// injected clock, the session list's times and diagnosis, and the log file download.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { seedLogFile, seedSessionHistory, seedTelemetry } from '../support/analytics-seed';
import { repositoriesOf } from '../support/seed';
import { expectNoKeysLogged, startApiFixture, type Account, type ApiFixture } from './api-fixture';

const T0 = Date.parse('2026-05-01T10:00:00.000Z');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const DAY = 86_400_000;
const clock = new ManualClock(NOW);
const at = (ms: number) => new Date(ms).toISOString();

let f: ApiFixture;
let a: Account;
let other: Account;
let secondProject: string;
/** Sessions of a's project, one per diagnosis, and of other projects. */
const s = { delivered: '', neverConnected: '', noVideo: '', neverReported: '', ofSecondProject: '', ofOtherAccount: '' };
let logFileId = '';
let zipLogFileId = '';
const LOG_TEXT = 'LogInit: Display: Mock app starting\nLogPixelStreaming: Streamer connected\n';

interface Reply {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** `key` null: no x-api-key header. */
async function read(path: string, query: Record<string, string> = {}, key: string | null = a.apiKey, headers: Record<string, string> = {}): Promise<Reply> {
  const url = `${f.t.started.httpOrigin}/api/v1/analytics${path}?${new URLSearchParams(query).toString()}`;
  const res = await fetch(url, { headers: { ...(key === null ? {} : { 'x-api-key': key }), ...headers } });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as Record<string, unknown>) : { text }, headers: res.headers };
}

/** 12 statistics rows 5 s apart (framesDecoded rising from `from` by `step`) and the usual events. */
function streamRows(start: number, opts: { framesFrom: number; step: number; fps: string; events: string[] }): Record<string, unknown>[] {
  const events = opts.events.map((event, i) => ({ logType: 'Webrtc', event, timestamp: at(start + i * 100) }));
  const stats = Array.from({ length: 12 }, (_, i) => ({
    timestamp: at(start + 1_000 + i * 5_000),
    FPS: opts.fps,
    framesDecoded: String(opts.framesFrom + i * opts.step),
    bitrate: '8000',
    latency: '20',
  }));
  return [...events, ...stats];
}

beforeAll(async () => {
  f = await startApiFixture({ clock });
  // The sweep the control plane runs at start must be over before history older than
  // retention.logDays is seeded below (its log files are from T0, a month before NOW), or it
  // deletes them: this sweep starts once that one has ended.
  await f.t.cp.retention.sweep();
  a = await f.account();
  other = await f.account();
  secondProject = (await f.t.cp.accounts.createProject(a.userId, 'Second', 'europe')).projectId;
  const cp = f.t.cp;
  const history = (projectId: string, start: number, statuses: ('Enqueued' | 'Starting' | 'Running' | 'Terminated')[], endReason?: string) =>
    seedSessionHistory(cp, {
      projectId,
      workerId: 'wrk_gpu1',
      ...(endReason === undefined ? {} : { endReason }),
      // Enqueued at start, Starting 4 s later, Running 9 s later, Terminated 10 min later.
      statuses: statuses.map((st) => [st, start + { Enqueued: 0, Starting: 4_000, Running: 9_000, Terminated: 600_000 }[st]]),
    });
  s.delivered = history(a.projectId, T0, ['Enqueued', 'Starting', 'Running', 'Terminated'], 'viewer left');
  // Its app identified itself 7 s in: 3 s of the start-up were the app loading, 2 s the viewer's WebRTC.
  repositoriesOf(cp).sessions.markIdentified(s.delivered, T0 + 7_000);
  repositoriesOf(cp).sessions.markIdentified(s.delivered, T0 + 8_000); // an identification after a drop keeps the first
  s.neverConnected = history(a.projectId, T0 + DAY, ['Enqueued', 'Starting', 'Terminated'], 'connect timeout');
  s.noVideo = history(a.projectId, T0 + 2 * DAY, ['Enqueued', 'Starting', 'Running', 'Terminated'], 'app closed');
  s.neverReported = history(a.projectId, T0 + 3 * DAY, ['Enqueued']);
  s.ofSecondProject = history(secondProject, T0, ['Enqueued']);
  s.ofOtherAccount = history(other.projectId, T0, ['Enqueued']);
  seedTelemetry(cp, s.delivered, a.projectId, streamRows(T0 + 9_000, { framesFrom: 0, step: 300, fps: '60', events: ['sdpOffer', 'sdpAnswer', 'connected', 'videoInitialized'] }));
  // 100 more statistics rows an hour later: the session has 116 rows, past the default page.
  seedTelemetry(cp, s.delivered, a.projectId, Array.from({ length: 100 }, (_, i) => ({ timestamp: at(T0 + 3_600_000 + i * 1_000), FPS: '60', framesDecoded: String(10_000 + i * 60) })));
  seedTelemetry(cp, s.neverConnected, a.projectId, [
    { logType: 'Webrtc', event: 'sdpOffer', timestamp: at(T0 + DAY + 5_000) },
    { logType: 'Webrtc', event: 'sdpAnswer', timestamp: at(T0 + DAY + 5_100) },
    { logType: 'Webrtc', event: 'iceConnectionState', iceConnectionState: 'failed', timestamp: at(T0 + DAY + 20_000) },
  ]);
  seedTelemetry(cp, s.noVideo, a.projectId, streamRows(T0 + 2 * DAY + 9_000, { framesFrom: 0, step: 0, fps: '0', events: ['sdpOffer', 'sdpAnswer', 'connected'] }));
  logFileId = await seedLogFile(cp, { sessionId: s.delivered, projectId: a.projectId, fileName: 'MockApp.log', text: LOG_TEXT, uploadedAt: T0 + 600_000 });
  zipLogFileId = await seedLogFile(cp, { sessionId: s.delivered, projectId: a.projectId, fileName: 'crash-1.zip', text: 'PK-not-really', uploadedAt: T0 + 600_001 });
  await seedLogFile(cp, { sessionId: s.ofSecondProject, projectId: secondProject, fileName: 'Other.log', text: 'other', uploadedAt: T0 });
});
afterAll(async () => {
  await f.close();
});

const error = (message: string, code: string, extra: Record<string, unknown> = {}) => ({ message, code, ...extra });

describe('spec error rows of the session reads', () => {
  it('answers each row with its status, message, code and field', async () => {
    const rows: [string, string, Record<string, string>, string | null, number, Record<string, unknown>][] = [
      // frontend-streaming-logs
      ['logs: no key', '/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId }, null, 401, error('Unauthorized: Invalid API Key', 'UNAUTHORIZED')],
      ['logs: wrong key', '/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId }, 'pfk_wrong', 401, error('Unauthorized: Invalid API Key', 'UNAUTHORIZED')],
      ['logs: projectId missing', '/frontend-streaming-logs', { sessionId: s.delivered }, a.apiKey, 403, error('Forbidden: projectId is required', 'FORBIDDEN', { field: 'projectId' })],
      ['logs: session of another project', '/frontend-streaming-logs', { sessionId: s.ofSecondProject, projectId: a.projectId }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['logs: session of another account', '/frontend-streaming-logs', { sessionId: s.ofOtherAccount, projectId: a.projectId }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['logs: project of another account', '/frontend-streaming-logs', { sessionId: s.ofOtherAccount, projectId: other.projectId }, a.apiKey, 403, error('Access denied', 'FORBIDDEN')],
      // A project that does not exist is not the session's: 403 as for another project (the spec has no 404 for it here).
      ['logs: unknown project', '/frontend-streaming-logs', { sessionId: s.delivered, projectId: 'prj_nothing' }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['logs: unknown session', '/frontend-streaming-logs', { sessionId: 'session_1_2', projectId: a.projectId }, a.apiKey, 404, error('Session not found', 'NOT_FOUND')],
      ['logs: sessionId missing', '/frontend-streaming-logs', { projectId: a.projectId }, a.apiKey, 400, error('Missing required field: sessionId', 'VALIDATION_FAILED', { field: 'sessionId' })],
      ['logs: logType in another case', '/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId, logType: 'webrtc' }, a.apiKey, 400, error('logType must be Webrtc', 'VALIDATION_FAILED', { field: 'logType' })],
      ['logs: date not ISO', '/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId, startDate: '05/01/2026' }, a.apiKey, 400, error('startDate must be an ISO 8601 date and time', 'VALIDATION_FAILED', { field: 'startDate' })],
      ['logs: date without a zone', '/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId, endDate: '2026-05-01T10:00:00' }, a.apiKey, 400, error('endDate must be an ISO 8601 date and time', 'VALIDATION_FAILED', { field: 'endDate' })],
      ['logs: no such day', '/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId, startDate: '2026-02-30' }, a.apiKey, 400, error('startDate must be an ISO 8601 date and time', 'VALIDATION_FAILED', { field: 'startDate' })],
      // sessions/{sessionId}
      ['snapshots: no key', `/sessions/${s.delivered}`, { projectId: a.projectId }, null, 401, error('Unauthorized: Invalid API Key', 'UNAUTHORIZED')],
      ['snapshots: projectId missing', `/sessions/${s.delivered}`, {}, a.apiKey, 403, error('Forbidden: projectId is required', 'FORBIDDEN', { field: 'projectId' })],
      ['snapshots: session of another project', `/sessions/${s.ofSecondProject}`, { projectId: a.projectId }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['snapshots: session of another account', `/sessions/${s.ofOtherAccount}`, { projectId: other.projectId }, a.apiKey, 403, error('Access denied', 'FORBIDDEN')],
      ['snapshots: unknown session', '/sessions/session_1_2', { projectId: a.projectId }, a.apiKey, 404, error('Session not found', 'NOT_FOUND')],
      ['snapshots: unknown project', `/sessions/${s.delivered}`, { projectId: 'prj_nothing' }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      // log-files/session/{sessionId}
      ['log files: no key', `/log-files/session/${s.delivered}`, { projectId: a.projectId }, null, 401, error('Unauthorized: Invalid API Key', 'UNAUTHORIZED')],
      ['log files: projectId missing', `/log-files/session/${s.delivered}`, {}, a.apiKey, 403, error('Forbidden: projectId is required', 'FORBIDDEN', { field: 'projectId' })],
      ['log files: session of another project', `/log-files/session/${s.ofSecondProject}`, { projectId: a.projectId }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['log files: session of another account', `/log-files/session/${s.ofOtherAccount}`, { projectId: a.projectId }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['log files: unknown session', '/log-files/session/session_1_2', { projectId: a.projectId }, a.apiKey, 404, error('Session not found', 'NOT_FOUND')],
      ['log files: unknown project', `/log-files/session/${s.delivered}`, { projectId: 'prj_nothing' }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      // log-files/{id}/download
      ['download: projectId missing', `/log-files/${logFileId}/download`, {}, a.apiKey, 403, error('Forbidden: projectId is required', 'FORBIDDEN', { field: 'projectId' })],
      ['download: file of another project', `/log-files/${logFileId}/download`, { projectId: secondProject }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['download: unknown file', '/log-files/log_nothing/download', { projectId: a.projectId }, a.apiKey, 404, error('Log file not found', 'NOT_FOUND')],
      ['download: unknown project', `/log-files/${logFileId}/download`, { projectId: 'prj_nothing' }, a.apiKey, 403, error('Forbidden: session does not belong to this project', 'FORBIDDEN', { field: 'projectId' })],
      ['download: project of another account', `/log-files/${logFileId}/download`, { projectId: other.projectId }, a.apiKey, 403, error('Access denied', 'FORBIDDEN')],
      // projects/{projectId}/sessions
      ['sessions: no key', `/projects/${a.projectId}/sessions`, {}, null, 401, error('Unauthorized: Invalid API Key', 'UNAUTHORIZED')],
      ['sessions: project of another account', `/projects/${other.projectId}/sessions`, {}, a.apiKey, 403, error('Access denied', 'FORBIDDEN')],
      ['sessions: unknown project', '/projects/prj_nothing/sessions', {}, a.apiKey, 404, error('Project not found', 'NOT_FOUND')],
      ['sessions: page over 200', `/projects/${a.projectId}/sessions`, { limit: '201' }, a.apiKey, 400, error('limit must be a whole number from 1 to 200', 'VALIDATION_FAILED', { field: 'limit' })],
      ['sessions: unknown status', `/projects/${a.projectId}/sessions`, { status: 'running' }, a.apiKey, 400, error('status must be one of: Enqueued, Starting, Running, Terminating, Terminated', 'VALIDATION_FAILED', { field: 'status' })],
      ['sessions: dates reversed', `/projects/${a.projectId}/sessions`, { startDate: '2026-05-02', endDate: '2026-05-01' }, a.apiKey, 400, error('startDate must not be after endDate', 'VALIDATION_FAILED', { field: 'startDate' })],
    ];
    for (const [why, path, query, key, status, body] of rows) {
      const res = await read(path, query, key);
      expect([why, res.status, res.body]).toEqual([why, status, body]);
    }
  });

  it('checks the query before the key: a bad parameter is 400 whoever asks', async () => {
    const res = await read('/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId, limit: '0' }, null);
    expect([res.status, res.body]).toEqual([400, error('limit must be a whole number from 1 to 1000', 'VALIDATION_FAILED', { field: 'limit' })]);
  });
});

describe('GET /frontend-streaming-logs', () => {
  const q = (extra: Record<string, string> = {}) => ({ sessionId: s.delivered, projectId: a.projectId, ...extra });

  it('answers the rows newest first, 100 by default, with the total', async () => {
    const res = await read('/frontend-streaming-logs', q());
    expect(res.status).toBe(200);
    const logs = res.body.logs as { timestamp: string; sessionId: string }[];
    expect(res.body).toMatchObject({ success: true, total: 116, count: 100 });
    expect(logs).toHaveLength(100);
    const times = logs.map((r) => r.timestamp);
    expect(times).toEqual([...times].sort().reverse());
    expect(logs[0]).toEqual({ timestamp: at(T0 + 3_600_000 + 99_000), FPS: '60', framesDecoded: String(10_000 + 99 * 60), sessionId: s.delivered });
  });

  it('filters event rows with logType=Webrtc and by date, newest first', async () => {
    const events = await read('/frontend-streaming-logs', q({ logType: 'Webrtc' }));
    expect(events.body).toMatchObject({ total: 4, count: 4 });
    expect((events.body.logs as { event: string }[]).map((r) => r.event)).toEqual(['videoInitialized', 'connected', 'sdpAnswer', 'sdpOffer']);
    const window = await read('/frontend-streaming-logs', q({ startDate: at(T0 + 9_100), endDate: at(T0 + 11_000) }));
    expect((window.body.logs as { timestamp: string }[]).map((r) => r.timestamp)).toEqual([at(T0 + 10_000), at(T0 + 9_300), at(T0 + 9_200), at(T0 + 9_100)]);
  });

  it('pages with limit and skip; past the end is an empty page; a bad limit or skip is 400 naming it', async () => {
    const page = async (limit: string, skip: string) => read('/frontend-streaming-logs', q({ limit, skip }));
    const all = (await page('1000', '0')).body;
    expect(all).toMatchObject({ total: 116, count: 116 });
    const second = (await page('10', '10')).body;
    expect(second.logs).toEqual((all.logs as unknown[]).slice(10, 20));
    expect((await page('10', '110')).body).toMatchObject({ total: 116, count: 6 });
    for (const skip of ['116', '5000', '999999999999999']) expect((await page('10', skip)).body).toEqual({ success: true, total: 116, count: 0, logs: [] });
    const refused: [string, string, string][] = [
      ['0', '0', 'limit'],
      ['-1', '0', 'limit'],
      ['1001', '0', 'limit'],
      ['99999999999999999999', '0', 'limit'],
      ['ten', '0', 'limit'],
      ['1.5', '0', 'limit'],
      ['10', '-1', 'skip'],
      ['10', 'x', 'skip'],
      ['10', '1e3', 'skip'],
    ];
    for (const [limit, skip, field] of refused) {
      const res = await page(limit, skip);
      const rule = field === 'limit' ? 'must be a whole number from 1 to 1000' : 'must be a whole number from 0';
      expect([limit, skip, res.status, res.body]).toEqual([limit, skip, 400, error(`${field} ${rule}`, 'VALIDATION_FAILED', { field })]);
    }
  });

  it('reads rows the viewer posted through the telemetry route', async () => {
    const projectId = (await f.t.cp.accounts.createProject(a.userId, 'Ingest', 'europe')).projectId;
    const { session, viewerToken } = f.t.cp.sessions.create(f.t.cp.accounts.requireProject(projectId));
    const rows = [
      { logType: 'Webrtc', event: 'sdpAnswer', timestamp: at(NOW + 1_000) },
      { logType: 'Webrtc', event: 'connected', timestamp: at(NOW + 2_000) },
      { timestamp: at(NOW + 3_000), FPS: '30', framesDecoded: '90' },
    ];
    const posted = await fetch(`${f.t.started.httpOrigin}/api/v1/telemetry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-viewer-token': viewerToken },
      body: JSON.stringify({ sessionId: session.sessionId, rows }),
    });
    expect(posted.status).toBe(204);
    const res = await read('/frontend-streaming-logs', { sessionId: session.sessionId, projectId });
    expect(res.body).toEqual({ success: true, total: 3, count: 3, logs: [...rows].reverse().map((r) => ({ ...r, sessionId: session.sessionId })) });
  });
});

describe('GET /sessions/{sessionId}', () => {
  it('answers the snapshots oldest first with their receivedAt times', async () => {
    const res = await read(`/sessions/${s.delivered}`, { projectId: a.projectId });
    expect(res.status).toBe(200);
    const snapshots = res.body.snapshots as { id: string; receivedAt: string; data: Record<string, unknown> }[];
    expect(res.body.totalSnapshots).toBe(4);
    expect(res.body.sessionId).toBe(s.delivered);
    expect(snapshots.map((x) => [x.data.status, x.receivedAt])).toEqual([
      ['Enqueued', at(T0)],
      ['Starting', at(T0 + 4_000)],
      ['Running', at(T0 + 9_000)],
      ['Terminated', at(T0 + 600_000)],
    ]);
    expect(snapshots[1]).toMatchObject({ id: expect.stringMatching(/^snap_\d+$/) as string, data: { sessionId: s.delivered, projectId: a.projectId, region: 'Europe', assignedWorker: 'wrk_gpu1' } });
    expect(new Set(snapshots.map((x) => x.id)).size).toBe(4);
  });

  it('answers an unexpected failure with 500 Internal server error and its code, the detail only in the log', async () => {
    const projectId = (await f.t.cp.accounts.createProject(a.userId, 'Broken', 'europe')).projectId;
    const broken = seedSessionHistory(f.t.cp, { projectId, statuses: [['Enqueued', T0]] });
    // Raw SQL on purpose: a snapshot that is not JSON is a corrupt row the sessions repository never writes.
    f.t.cp.db.prepare("UPDATE session_snapshots SET data = '{not json' WHERE session_id = ?").run(broken);
    const res = await read(`/sessions/${broken}`, { projectId });
    expect([res.status, res.body]).toEqual([500, error('Internal server error', 'INTERNAL_ERROR')]);
    expect(f.t.logs.text()).toContain('unhandled error');
  });
});

describe('GET /log-files/session/{sessionId} and the download', () => {
  it('lists the files oldest first, 50 by default, with paging', async () => {
    const res = await read(`/log-files/session/${s.delivered}`, { projectId: a.projectId });
    expect(res.body).toMatchObject({ success: true, sessionId: s.delivered, total: 2, count: 2 });
    expect((res.body.logFiles as Record<string, unknown>[])[0]).toEqual({
      _id: logFileId,
      sessionId: s.delivered,
      projectId: a.projectId,
      fileName: 'MockApp.log',
      fileSize: Buffer.byteLength(LOG_TEXT),
      gzSize: expect.any(Number) as number,
      uploadedAt: at(T0 + 600_000),
    });
    expect((await read(`/log-files/session/${s.delivered}`, { projectId: a.projectId, skip: '1' })).body).toMatchObject({ total: 2, count: 1, logFiles: [{ _id: zipLogFileId }] });
    expect((await read(`/log-files/session/${s.delivered}`, { projectId: a.projectId, skip: '2' })).body).toMatchObject({ total: 2, count: 0, logFiles: [] });
    expect((await read(`/log-files/session/${s.neverReported}`, { projectId: a.projectId })).body).toEqual({ success: true, sessionId: s.neverReported, total: 0, count: 0, logFiles: [] });
    expect((await read(`/log-files/session/${s.delivered}`, { projectId: a.projectId, limit: '0' })).status).toBe(400);
  });

  it('sends the stored gzip to a client that accepts it, the text to one that does not, with the file name', async () => {
    const path = `/log-files/${logFileId}/download`;
    // fetch asks for gzip and inflates what arrives.
    const gz = await read(path, { projectId: a.projectId });
    expect(gz.status).toBe(200);
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gz.body.text).toBe(LOG_TEXT);
    expect(gz.headers.get('content-disposition')).toBe('attachment; filename="MockApp.log"');
    expect(gz.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(gz.headers.get('vary')).toContain('accept-encoding');
    for (const encoding of ['identity', 'gzip;q=0, deflate', 'br']) {
      const plain = await read(path, { projectId: a.projectId }, a.apiKey, { 'accept-encoding': encoding });
      expect([encoding, plain.status, plain.headers.get('content-encoding'), plain.body.text]).toEqual([encoding, 200, null, LOG_TEXT]);
    }
    const zip = await read(`/log-files/${zipLogFileId}/download`, { projectId: a.projectId }, a.apiKey, { 'accept-encoding': 'identity' });
    expect([zip.headers.get('content-type'), zip.headers.get('content-disposition'), zip.body.text]).toEqual(['application/zip', 'attachment; filename="crash-1.zip"', 'PK-not-really']);
  });
});

describe('GET /projects/{projectId}/sessions', () => {
  it('lists the sessions newest first with times, durations from the snapshots, worker, end reason and diagnosis', async () => {
    const res = await read(`/projects/${a.projectId}/sessions`, { endDate: at(T0 + 10 * DAY) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, projectId: a.projectId, total: 4, count: 4 });
    const sessions = res.body.sessions as Record<string, unknown>[];
    expect(sessions.map((x) => [x.sessionId, x.diagnosis])).toEqual([
      [s.neverReported, 'neverReported'],
      [s.noVideo, 'connectedWithoutVideo'],
      [s.neverConnected, 'mediaNeverConnected'],
      [s.delivered, 'videoDelivered'],
    ]);
    expect(sessions[3]).toEqual({
      sessionId: s.delivered,
      status: 'Terminated',
      region: 'europe',
      worker: 'wrk_gpu1',
      endReason: 'viewer left',
      createdAt: at(T0),
      enqueuedAt: at(T0),
      startingAt: at(T0 + 4_000),
      runningAt: at(T0 + 9_000),
      terminatedAt: at(T0 + 600_000),
      queueWaitMs: 4_000,
      startupMs: 5_000,
      identifiedAt: at(T0 + 7_000),
      launchMs: 3_000,
      negotiationMs: 2_000,
      servedWarm: false,
      lifetimeMs: 600_000,
      browser: null,
      os: null,
      deviceType: null,
      geoData: null,
      diagnosis: 'videoDelivered',
    });
    expect(sessions[0]).toMatchObject({ status: 'Enqueued', worker: null, endReason: null, startingAt: null, queueWaitMs: null, startupMs: null, identifiedAt: null, launchMs: null, negotiationMs: null, lifetimeMs: null });
    expect(sessions[2]).toMatchObject({ queueWaitMs: 4_000, startupMs: null, runningAt: null, lifetimeMs: 600_000 });
  });

  it("tells who watched, from where and on what, as the server derived it when the session was created", async () => {
    const projectId = (await f.t.cp.accounts.createProject(a.userId, 'Audience', 'europe')).projectId;
    const client = { browser: 'Chrome', os: 'Windows', deviceType: 'desktop', country: 'Germany', countryCode: 'DE', city: 'Berlin' };
    const { session } = f.t.cp.sessions.create(f.t.cp.accounts.requireProject(projectId), client);
    const res = await read(`/projects/${projectId}/sessions`);
    expect(res.body).toMatchObject({
      total: 1,
      sessions: [
        {
          sessionId: session.sessionId,
          createdAt: at(NOW),
          enqueuedAt: at(NOW),
          browser: 'Chrome',
          os: 'Windows',
          deviceType: 'desktop',
          geoData: { country: 'Germany', countryCode: 'DE', city: 'Berlin' },
          diagnosis: 'neverReported',
        },
      ],
    });
  });

  it('filters by status and window, and pages', async () => {
    const ended = await read(`/projects/${a.projectId}/sessions`, { status: 'Terminated', endDate: at(T0 + 10 * DAY) });
    expect(ended.body).toMatchObject({ total: 3, count: 3 });
    const window = await read(`/projects/${a.projectId}/sessions`, { startDate: at(T0 + DAY), endDate: at(T0 + 2 * DAY) });
    expect((window.body.sessions as { sessionId: string }[]).map((x) => x.sessionId)).toEqual([s.noVideo, s.neverConnected]);
    const paged = await read(`/projects/${a.projectId}/sessions`, { endDate: at(T0 + 10 * DAY), limit: '1', skip: '1' });
    expect(paged.body).toMatchObject({ total: 4, count: 1, sessions: [{ sessionId: s.noVideo }] });
    expect((await read(`/projects/${a.projectId}/sessions`, { endDate: at(T0 + 10 * DAY), skip: '4' })).body).toMatchObject({ total: 4, count: 0, sessions: [] });
    // By default the window is the 92 days up to now (the injected clock).
    expect((await read(`/projects/${a.projectId}/sessions`)).body).toMatchObject({ total: 4 });
  });
});

describe('the 92-day window', () => {
  it('accepts exactly 92 days and refuses one second more, before reading anything', async () => {
    const start = Date.parse('2026-03-01T00:00:00Z');
    const ok = await read(`/projects/${a.projectId}/sessions`, { startDate: at(start), endDate: at(start + 92 * DAY) });
    expect(ok.status).toBe(200);
    const tooWide = error('The window from startDate to endDate may be at most 92 days', 'VALIDATION_FAILED', { field: 'startDate', maxDays: 92 });
    const wide = await read(`/projects/${a.projectId}/sessions`, { startDate: at(start), endDate: at(start + 92 * DAY + 1_000) });
    expect([wide.status, wide.body]).toEqual([400, tooWide]);
    const logs = await read('/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId, startDate: '2026-01-01', endDate: '2026-04-03T00:00:01Z' });
    expect([logs.status, logs.body]).toEqual([400, tooWide]);
    expect((await read('/frontend-streaming-logs', { sessionId: s.delivered, projectId: a.projectId, startDate: '2026-01-01', endDate: '2026-04-03' })).status).toBe(200);
    // Refused before any query: not even the key is looked up (a wrong key still gets the 400).
    expect((await read(`/projects/${a.projectId}/sessions`, { startDate: at(start), endDate: at(start + 93 * DAY) }, 'pfk_wrong')).body).toEqual(tooWide);
  });
});

describe('key scope', () => {
  it('lets FULL and READONLY members read; a removed member and a rotated key are refused on the next request', async () => {
    const path = `/sessions/${s.delivered}`;
    const query = { projectId: a.projectId };
    for (const access of ['READONLY', 'FULL'] as const) {
      const member = await f.user();
      await f.t.cp.accounts.addMember(a.projectId, member.userId, access);
      expect((await read(path, query, member.apiKey)).status).toBe(200);
      expect((await read(`/projects/${a.projectId}/sessions`, {}, member.apiKey)).status).toBe(200);
      f.t.cp.accounts.removeMember(a.projectId, member.userId);
      const refused = await read(path, query, member.apiKey);
      expect([access, refused.status, refused.body]).toEqual([access, 403, error('Access denied', 'FORBIDDEN')]);
    }
    const owner = await f.user();
    const project = (await f.t.cp.accounts.createProject(owner.userId, 'Rotating', 'europe')).projectId;
    expect((await read(`/projects/${project}/sessions`, {}, owner.apiKey)).status).toBe(200);
    await f.rotate(owner.userId);
    expect((await read(`/projects/${project}/sessions`, {}, owner.apiKey)).body).toEqual(error('Unauthorized: Invalid API Key', 'UNAUTHORIZED'));
  });
});

describe('limits.analyticsReadsPerMinute', () => {
  it('answers 429 with Retry-After in seconds past the limit, per key, on every analytics read', async () => {
    const limitedClock = new ManualClock(NOW);
    const limited = await startApiFixture({ clock: limitedClock, overrides: { limits: { analyticsReadsPerMinute: 3 } } });
    try {
      const one = await limited.account();
      const two = await limited.account();
      const get = async (path: string, key: string) => {
        const res = await fetch(`${limited.t.started.httpOrigin}/api/v1/analytics${path}`, { headers: { 'x-api-key': key } });
        return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as unknown };
      };
      const paths = [`/projects/${one.projectId}/sessions`, '/frontend-streaming-logs?sessionId=session_1_2', `/sessions/session_1_2?projectId=${one.projectId}`];
      // Three reads of any route (their answers 200, 403 and 404) use the minute's three.
      expect((await Promise.all(paths.map((p) => get(p, one.apiKey)))).map((r) => r.status).sort()).toEqual([200, 403, 404]);
      const refused = await get(`/projects/${one.projectId}/analytics/breakdown?dimension=os&startDate=2026-05-01&endDate=2026-05-02`, one.apiKey);
      // 3 per minute refill one read every 20 s.
      expect(refused).toEqual({ status: 429, retryAfter: '20', body: error('Rate limit exceeded. Try again in 20 seconds.', 'RATE_LIMITED') });
      expect((await get(`/projects/${two.projectId}/sessions`, two.apiKey)).status).toBe(200);
      expect((await get(`/log-files/session/session_1_2?projectId=${one.projectId}`, one.apiKey)).status).toBe(429);
      limitedClock.advance(19_000);
      expect((await get(paths[0] as string, one.apiKey)).retryAfter).toBe('1');
      limitedClock.advance(1_000);
      expect((await get(paths[0] as string, one.apiKey)).status).toBe(200);
      expect((await get(paths[0] as string, one.apiKey)).status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('an address flooding made-up keys', () => {
  it('is limited by the fair-use address bucket before any key is looked up (429 + Retry-After)', async () => {
    const floodClock = new ManualClock(NOW);
    const flooded = await startApiFixture({ clock: floodClock, overrides: { limits: { fairUseAddressBurst: 5, fairUseAddressPerSecond: 1 } } });
    try {
      const get = async (key: string) => {
        const res = await fetch(`${flooded.t.started.httpOrigin}/api/v1/analytics/sessions/session_1_2?projectId=prj_x`, { headers: { 'x-api-key': key } });
        return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as unknown };
      };
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await get(`pfk_made_up_${i}`));
      expect(answers.slice(0, 5).map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
      expect(answers[5]).toEqual({ status: 429, retryAfter: '1', body: error('Rate limit exceeded. Try again in 1 seconds.', 'RATE_LIMITED') });
      floodClock.advance(1_000);
      expect((await get('pfk_made_up_7')).status).toBe(401);
    } finally {
      await flooded.close();
    }
  });
});

describe('logs', () => {
  it('never log a key (full run of this file)', () => {
    expectNoKeysLogged(f);
  });
});
