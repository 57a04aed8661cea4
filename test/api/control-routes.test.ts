// POST /projects/enable, /projects/disable and /projects/end-session: idempotent control
// actions with the write rules; disabling ends the project's sessions. Plus the fair-use buckets
// (per address and userId, per address alone) and the OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_ERRORS } from '@pixelfleet/control-plane';
import { decodeStoredCommand } from '@pixelfleet/proto';
import { ManualClock } from '@pixelfleet/common';
import { seedEndedSessions, seedSession, sessionStatus, workerCommands } from '../support/seed';
import { answer, expectNoKeysLogged, startApiFixture, type Account, type ApiFixture } from './api-fixture';

let f: ApiFixture;
const clock = new ManualClock();
let limited: ApiFixture;
let addressLimited: ApiFixture;

beforeAll(async () => {
  f = await startApiFixture({ withoutPipeline: true });
  limited = await startApiFixture({ clock, overrides: { limits: { fairUseBurst: 3, fairUsePerSecond: 0.5 } }, withoutPipeline: true });
  addressLimited = await startApiFixture({ clock, overrides: { limits: { fairUseBurst: 100, fairUsePerSecond: 100, fairUseAddressBurst: 4, fairUseAddressPerSecond: 1 } }, withoutPipeline: true });
});
afterAll(async () => {
  await f.close();
  await limited.close();
  await addressLimited.close();
});

const message = (name: keyof typeof HTTP_ERRORS) => ({ message: HTTP_ERRORS[name].message });
const body = (a: Account, extra: Record<string, unknown> = {}) => ({ apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, ...extra });

describe('POST /projects/enable and /projects/disable', () => {
  it('switch the project status, idempotently; disable ends its sessions', async () => {
    const a = await f.account();
    const queued = seedSession(f.t.cp, { projectId: a.projectId, status: 'Enqueued' });
    for (let i = 0; i < 2; i++) expect(answer(await f.post('/projects/disable', body(a)))).toEqual([200, { projectId: a.projectId, status: false }]);
    expect(sessionStatus(f.t.cp, queued)).toEqual({ status: 'Terminated', endReason: 'project disabled' });
    const list = (await f.get('/projects/projects-status', { userId: a.userId, apikey: a.apiKey })).json<{ projects: { status: boolean }[] }>();
    expect(list.projects[0]?.status).toBe(false);
    for (let i = 0; i < 2; i++) expect(answer(await f.post('/projects/enable', body(a)))).toEqual([200, { projectId: a.projectId, status: true }]);
    expect(f.t.cp.accounts.requireProject(a.projectId).enabled).toBe(true);
  });

  it('disable ends a Running session however many newer sessions the project has', async () => {
    const a = await f.account();
    const { workerId } = f.t.cp.registry.enroll({ hostname: 'w', region: 'europe', slots: 1, agentVersion: 't' });
    const old = seedSession(f.t.cp, { projectId: a.projectId, status: 'Running', workerId });
    seedEndedSessions(f.t.cp, a.projectId, 10_001);
    expect(answer(await f.post('/projects/disable', body(a)))).toEqual([200, { projectId: a.projectId, status: false }]);
    // It has an app on a worker: Terminating until the agent confirms the stop, already counted as ended.
    expect(sessionStatus(f.t.cp, old)).toEqual({ status: 'Terminating', endReason: 'project disabled' });
    const stops = workerCommands(f.t.cp, workerId, 'stopSession');
    expect(stops.map((c) => (decodeStoredCommand(c.payload) as { sessionId: string }).sessionId)).toEqual([old]);
  });

  it('apply the write rules', async () => {
    const a = await f.account();
    const other = await f.account();
    const member = await f.user();
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'READONLY');
    for (const path of ['/projects/enable', '/projects/disable']) {
      expect(answer(await f.post(path, { userId: a.userId, projectId: a.projectId }))).toEqual([400, { message: 'Missing required field: apiKey' }]);
      expect(answer(await f.post(path, body(a, { projectId: '' })))).toEqual([400, { message: 'Missing required field: projectId' }]);
      expect(answer(await f.post(path, JSON.stringify(body(a)), { 'content-type': 'text/plain' }))).toEqual([415, message('unsupportedMediaType')]);
      expect(answer(await f.post(path, body(a, { apiKey: other.apiKey })))).toEqual([401, message('invalidUser')]);
      expect(answer(await f.post(path, body(a, { projectId: other.projectId })))).toEqual([403, message('forbidden')]);
      expect(answer(await f.post(path, body(a, { projectId: 'prj_nothing' })))).toEqual([404, message('projectNotFound')]);
      expect(answer(await f.post(path, { apiKey: member.apiKey, userId: member.userId, projectId: a.projectId }))).toEqual([403, message('readOnlyAccess')]);
    }
  });
});

describe('POST /projects/end-session', () => {
  it('ends a session of the project, idempotently', async () => {
    const a = await f.account();
    const sessionId = f.t.cp.sessions.create(f.t.cp.accounts.requireProject(a.projectId)).session.sessionId;
    for (let i = 0; i < 2; i++) expect(answer(await f.post('/projects/end-session', body(a, { sessionId })))).toEqual([200, { sessionId, status: 'Terminated' }]);
  });

  it('answers 404 for an unknown session or one of another project', async () => {
    const a = await f.account();
    const b = await f.account();
    const bSession = seedSession(f.t.cp, { projectId: b.projectId, status: 'Enqueued' });
    expect(answer(await f.post('/projects/end-session', body(a, { sessionId: 'session_1_1' })))).toEqual([404, message('sessionNotFound')]);
    expect(answer(await f.post('/projects/end-session', body(a, { sessionId: bSession })))).toEqual([404, message('sessionNotFound')]);
    expect(answer(await f.post('/projects/end-session', body(a)))).toEqual([400, { message: 'Missing required field: sessionId' }]);
    expect(sessionStatus(f.t.cp, bSession).status).toBe('Enqueued');
  });
});

describe('fair use (token buckets per client address and userId, and per address alone)', () => {
  it('answers 429 with Retry-After once the bucket is empty, and refills over time', async () => {
    const a = await limited.account();
    const b = await limited.account();
    const q = { userId: a.userId, apikey: a.apiKey };
    for (let i = 0; i < 3; i++) expect((await limited.get(`/projects/userStats/${a.projectId}`, q)).statusCode).toBe(200);
    const refused = await limited.get(`/projects/userStats/${a.projectId}`, q);
    expect(answer(refused)).toEqual([429, { message: 'Too many requests. Try again in 2 seconds.' }]);
    expect(refused.headers['retry-after']).toBe('2');
    expect((await limited.get('/projects/projects-status', q)).statusCode).toBe(429);
    // Another user is not starved by this one.
    expect((await limited.get(`/projects/userStats/${b.projectId}`, { userId: b.userId, apikey: b.apiKey })).statusCode).toBe(200);
    clock.advance(2_000);
    expect((await limited.get(`/projects/userStats/${a.projectId}`, q)).statusCode).toBe(200);
    expect((await limited.get(`/projects/userStats/${a.projectId}`, q)).statusCode).toBe(429);
  });

  it('counts writes too, with the userId from the JSON body', async () => {
    const a = await limited.account();
    const b = await limited.account();
    for (let i = 0; i < 3; i++) expect((await limited.post('/projects/enable', body(a))).statusCode).toBe(200);
    const refused = await limited.post('/projects/disable', body(a));
    expect(answer(refused)).toEqual([429, { message: 'Too many requests. Try again in 2 seconds.' }]);
    expect(refused.headers['retry-after']).toBe('2');
    expect(limited.t.cp.accounts.requireProject(a.projectId).enabled).toBe(true); // refused before it ran
    expect((await limited.post('/projects/enable', body(b))).statusCode).toBe(200);
  });

  it("refuses a flood from one address even when every request names another userId", async () => {
    const a = await addressLimited.account();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await addressLimited.get(`/projects/userStats/${a.projectId}`, { userId: `usr_made_up_${i}`, apikey: a.apiKey })).statusCode);
    expect(statuses.slice(0, 4).every((s) => s !== 429)).toBe(true);
    const refused = await addressLimited.get(`/projects/userStats/${a.projectId}`, { userId: a.userId, apikey: a.apiKey });
    expect(answer(refused)).toEqual([429, { message: 'Too many requests. Try again in 1 seconds.' }]);
    expect((await addressLimited.post('/projects/enable', body(a))).statusCode).toBe(429);
    clock.advance(1_000);
    expect((await addressLimited.get(`/projects/userStats/${a.projectId}`, { userId: a.userId, apikey: a.apiKey })).statusCode).toBe(200);
  });
});

describe('OpenAPI', () => {
  it('documents every route of the API with request and response schemas, and serves a docs page', async () => {
    const res = await f.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<{ openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters?: unknown[]; requestBody?: unknown }>> }>();
    expect(doc.openapi).toMatch(/^3\./);
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(routes.sort()).toEqual(
      [
        'GET /api/projects/projects-status',
        'GET /api/projects/userStats/{projectId}',
        'GET /api/projects/{projectId}/builds',
        'GET /api/projects/{projectId}/settings',
        'PATCH /api/projects/{projectId}/settings',
        'POST /api/projects/upload-file',
        'POST /api/projects/distribute-file',
        'POST /api/projects/set-active-build',
        'POST /api/projects/enable',
        'POST /api/projects/disable',
        'POST /api/projects/end-session',
        'POST /api/projects/test-webhook',
        'GET /api/v1/analytics/projects/{projectId}/analytics/breakdown',
        'GET /api/v1/analytics/frontend-streaming-logs',
        'GET /api/v1/analytics/sessions/{sessionId}',
        'GET /api/v1/analytics/log-files/session/{sessionId}',
        'GET /api/v1/analytics/log-files/{logFileId}/download',
        'GET /api/v1/analytics/projects/{projectId}/sessions',
      ].sort(),
    );
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['4XX', '5XX']));
        expect(op.parameters !== undefined || op.requestBody !== undefined, `${method} ${path}`).toBe(true);
      }
    }
    // DB-IP's licence: its credit, linked, wherever country and city are shown.
    expect((doc as unknown as { info: { description: string } }).info.description).toContain('[IP Geolocation by DB-IP](https://db-ip.com)');
    const page = await f.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
  });

  it('serves the docs page and its files with a CSP (framed only by this site, scripts only its own), nosniff, and nothing from elsewhere', async () => {
    for (const url of ['/docs/', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
      const res = await f.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      const csp = String(res.headers['content-security-policy']);
      expect(csp, url).toContain("frame-ancestors 'self'");
      expect(csp, url).toContain("default-src 'self'");
      expect(csp, url).toMatch(/script-src 'self'( 'sha256-[A-Za-z0-9+/=]+')* ?;/);
      expect(csp, url).not.toContain('validator.swagger.io');
      expect(csp, url).not.toContain('upgrade-insecure-requests');
    }
  });
});

describe('logs', () => {
  it('never log a key (full run of this file)', () => {
    expectNoKeysLogged(f);
    expectNoKeysLogged(limited);
  });
});
