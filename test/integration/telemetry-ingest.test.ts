// Telemetry ingest from the viewer page: rows shaped as the spec's telemetry rows, authenticated
// by the session's viewer token, stored as received; every refusal is JSON with a message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { telemetryRows } from '../support/seed';

const clock = new ManualClock(Date.now());
let t: TestControlPlane;
let sessionId: string;
let viewerToken: string;
let url: string;

beforeAll(async () => {
  t = await startTestControlPlane({ clock });
  const owner = await t.cp.accounts.createUser('telemetry@example.com');
  const project = await t.cp.accounts.createProject(owner.userId, 'T', 'europe');
  ({ session: { sessionId }, viewerToken } = t.cp.sessions.create(t.cp.accounts.requireProject(project.projectId)));
  url = `${t.started.publicUrls.platform}/api/v1/telemetry`;
});
afterAll(async () => {
  await t.destroy();
});

const eventRow = { sessionId: 'ignored', logType: 'Webrtc', event: 'sdpAnswer', timestamp: '2026-11-21T06:00:00.000Z', browser: 'Chrome', os: 'Linux', deviceType: 'desktop', embedded: false };
const statsRow = { timestamp: '2026-11-21T06:00:05.000Z', FPS: '30', framesDecoded: '150', bitrate: '2000000', latency: '12', packetLoss: '0', framesDropped: '0', videoCodec: 'video/H264', videoResolution: '1280x720' };

const statusAndBody = async (r: Response): Promise<[number, unknown]> => [r.status, (await r.json()) as unknown];

const post = (body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('POST /api/v1/telemetry', () => {
  it('stores event and statistics rows for the session (204)', async () => {
    const res = await post({ sessionId, rows: [eventRow, statsRow] }, { 'content-type': 'application/json', 'x-viewer-token': viewerToken });
    expect(res.status).toBe(204);
    const stored = telemetryRows(t.cp, sessionId);
    expect(stored.map((r) => [r.logType ?? null, r.event ?? null])).toEqual([['Webrtc', 'sdpAnswer'], [null, null]]);
    // Client details are the server's (this session, made without a share socket, has none): the
    // page's claims of browser, os and deviceType are not stored (viewer-enrichment.test.ts).
    const { browser: _b, os: _o, deviceType: _d, ...unclaimed } = eventRow;
    expect(stored[0]!.row).toEqual({ ...unclaimed, sessionId });
    expect(stored[1]!.row).toEqual({ ...statsRow, sessionId });
  });

  it('accepts sendBeacon posts: text/plain JSON with the token in the body', async () => {
    const res = await post(JSON.stringify({ sessionId, viewerToken, rows: [{ ...eventRow, event: 'visibilitychange', visibility: 'hidden' }] }), { 'content-type': 'text/plain;charset=UTF-8' });
    expect(res.status).toBe(204);
  });

  it("refuses another session's viewer token with 403: it names a viewer, not this session's", async () => {
    const project = t.cp.accounts.requireProject(t.cp.sessions.get(sessionId).projectId);
    const other = t.cp.sessions.create(project);
    const rowsOf = (id: string) => telemetryRows(t.cp, id).length;
    const before = rowsOf(sessionId);
    expect(await post({ sessionId, rows: [statsRow] }, { 'content-type': 'application/json', 'x-viewer-token': other.viewerToken }).then(statusAndBody)).toEqual([
      403,
      { message: 'Forbidden: the viewer token belongs to another session' },
    ]);
    expect([rowsOf(sessionId), rowsOf(other.session.sessionId)]).toEqual([before, 0]);
  });

  it('refuses a wrong or missing viewer token with 401, an unknown session with 404', async () => {
    expect(await post({ sessionId, rows: [statsRow] }, { 'content-type': 'application/json', 'x-viewer-token': 'pfv_wrong' }).then(statusAndBody)).toEqual([401, { message: 'Invalid viewer token' }]);
    expect(await post({ sessionId, rows: [statsRow] }).then(statusAndBody)).toEqual([401, { message: 'Invalid viewer token' }]);
    expect(await post({ sessionId: 'session_1_1', viewerToken, rows: [statsRow] }).then(statusAndBody)).toEqual([404, { message: 'Session not found' }]);
  });

  it('refuses rows that are not telemetry rows with 400 and the reason', async () => {
    const cases: [unknown, string][] = [
      [{ ...statsRow, timestamp: 'yesterday' }, 'timestamp must be an ISO 8601 string'],
      [{ ...statsRow, FPS: 30 }, 'statistics value FPS must be a string'],
      [{ ...eventRow, logType: 'Other' }, 'logType must be Webrtc'],
      [{ ...eventRow, event: '' }, 'an event row needs an event name'],
      [{ ...statsRow, junk: 'x'.repeat(5000) }, 'a row must be at most 4096 bytes'],
    ];
    for (const [row, message] of cases) {
      const res = await post({ sessionId, viewerToken, rows: [row] });
      expect([res.status, await res.json()]).toEqual([400, { message }]);
    }
    const empty = await post({ sessionId, viewerToken, rows: [] });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { message: string }).message).toContain('rows');
    const tooMany = await post({ sessionId, viewerToken, rows: Array.from({ length: 201 }, () => statsRow) });
    expect(tooMany.status).toBe(400);
  });

  it('answers malformed JSON with 400 and an oversized body with 413, as JSON', async () => {
    const bad = await post('{"sessionId": ', { 'content-type': 'application/json' });
    expect([bad.status, await bad.json()]).toEqual([400, { message: 'Malformed JSON body' }]);
    const badBeacon = await post('not json', { 'content-type': 'text/plain' });
    expect([badBeacon.status, await badBeacon.json()]).toEqual([400, { message: 'Malformed JSON body' }]);
    const huge = await post({ sessionId, viewerToken, rows: [statsRow], pad: 'x'.repeat(1_100_000) });
    expect([huge.status, await huge.json()]).toEqual([413, { message: 'Request body is too large' }]);
  });

  // Last of the posting tests: it moves the shared clock past the grace of every session here.
  it("takes a session's last rows for 2 minutes after it ended, then answers 410", async () => {
    const owner = await t.cp.accounts.createUser('telemetry-ended@example.com');
    const project = t.cp.accounts.requireProject((await t.cp.accounts.createProject(owner.userId, 'Ended', 'europe')).projectId);
    const ended = t.cp.sessions.create(project);
    t.cp.sessions.end(ended.session.sessionId, 'viewerLeft');
    const body = { sessionId: ended.session.sessionId, viewerToken: ended.viewerToken, rows: [statsRow] };
    clock.advance(2 * 60_000);
    expect((await post(body)).status).toBe(204);
    clock.advance(1);
    expect(await post(body).then(statusAndBody)).toEqual([410, { message: 'Session has ended' }]);
  });

  it('never logs the viewer token', () => {
    expect(t.logs.text()).not.toContain(viewerToken);
  });
});
