// GET /projects/projects-status and GET /projects/userStats/{projectId}: every row of the spec's
// error tables in the spec's precedence, key scope (owner, FULL, READONLY, removed member,
// rotated key), bad input, and the log check; and the one read path every project read route takes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_ERRORS } from '@pixelfleet/control-plane';
import { seedSession, setProjectEnabled } from '../support/seed';
import { answer, expectNoKeysLogged, startApiFixture, type Account, type ApiFixture } from './api-fixture';

let f: ApiFixture;
let a: Account;
let other: Account;

beforeAll(async () => {
  f = await startApiFixture();
  a = await f.account();
  other = await f.account();
});
afterAll(async () => {
  await f.close();
});

const message = (name: keyof typeof HTTP_ERRORS) => ({ message: HTTP_ERRORS[name].message });

describe('GET /projects/userStats/{projectId}', () => {
  it('answers the live and queued counts of the project', async () => {
    const p = (await f.t.cp.accounts.createProject(a.userId, 'Counts', 'europe')).projectId;
    seedSession(f.t.cp, { projectId: p, status: 'Running', workerId: 'wrk_x' });
    seedSession(f.t.cp, { projectId: p, status: 'Starting', workerId: 'wrk_x' });
    f.t.cp.sessions.create(f.t.cp.accounts.requireProject(p));
    const res = await f.get(`/projects/userStats/${p}`, { userId: a.userId, apikey: a.apiKey });
    expect(answer(res)).toEqual([200, { liveUser: 2, queueUser: 1 }]);
  });

  it('answers the 400 row when projectId is left out of the path', async () => {
    for (const path of ['/projects/userStats', '/projects/userStats/']) {
      expect(answer(await f.get(path, { userId: a.userId, apikey: a.apiKey }))).toEqual([400, { message: 'projectId, userId and apikey are required' }]);
    }
  });

  it('follows every row of the spec table, in the spec precedence', async () => {
    const { userId, apiKey, projectId } = a;
    const rows: [string, string, Record<string, string>, number, string][] = [
      ['missing userId', projectId, { apikey: apiKey }, 400, 'projectId, userId and apikey are required'],
      ['missing apikey', projectId, { userId }, 400, 'projectId, userId and apikey are required'],
      ['missing both', projectId, {}, 400, 'projectId, userId and apikey are required'],
      ['empty apikey', projectId, { userId, apikey: '' }, 400, 'projectId, userId and apikey are required'],
      ['missing parameter before unknown user', projectId, { userId: 'usr_nobody' }, 400, 'projectId, userId and apikey are required'],
      ['unknown user', projectId, { userId: 'usr_nobody', apikey: apiKey }, 401, 'Invalid User'],
      ['unknown user before bad key', 'prj_nothing', { userId: 'usr_nobody', apikey: 'pfk_wrong' }, 401, 'Invalid User'],
      ['wrong key', projectId, { userId, apikey: 'pfk_wrong' }, 401, 'Unauthorized: Invalid API Key'],
      ["another user's key", projectId, { userId, apikey: other.apiKey }, 401, 'Unauthorized: Invalid API Key'],
      ['bad key before unknown project', 'prj_nothing', { userId, apikey: 'pfk_wrong' }, 401, 'Unauthorized: Invalid API Key'],
      ['project of another account', other.projectId, { userId, apikey: apiKey }, 403, 'Access denied'],
      ['unknown project', 'prj_nothing', { userId, apikey: apiKey }, 404, 'Project not found'],
    ];
    for (const [why, p, query, status, msg] of rows) {
      const res = await f.get(`/projects/userStats/${p}`, query);
      expect([why, ...answer(res)]).toEqual([why, status, { message: msg }]);
    }
  });

  it('answers 500 Internal server error without the stack for an unexpected failure', async () => {
    const original = f.t.cp.sessions.counts.bind(f.t.cp.sessions);
    f.t.cp.sessions.counts = () => {
      throw new Error('disk on fire');
    };
    try {
      const res = await f.get(`/projects/userStats/${a.projectId}`, { userId: a.userId, apikey: a.apiKey });
      expect(answer(res)).toEqual([500, { message: 'Internal server error' }]);
      expect(res.body).not.toContain('disk on fire');
      expect(f.t.logs.text()).toContain('disk on fire');
    } finally {
      f.t.cp.sessions.counts = original;
    }
  });

  it('gives FULL and READONLY members their listed projects; a removed member loses it at once', async () => {
    const member = await f.user();
    const path = `/projects/userStats/${a.projectId}`;
    const q = { userId: member.userId, apikey: member.apiKey };
    expect(answer(await f.get(path, q))).toEqual([403, message('accessDenied')]);
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'READONLY');
    expect((await f.get(path, q)).statusCode).toBe(200);
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'FULL');
    expect((await f.get(path, q)).statusCode).toBe(200);
    f.t.cp.accounts.removeMember(a.projectId, member.userId);
    expect(answer(await f.get(path, q))).toEqual([403, message('accessDenied')]);
  });

  it('refuses a rotated key at once, and a key with whitespace', async () => {
    const u = await f.account();
    const path = `/projects/userStats/${u.projectId}`;
    const fresh = await f.rotate(u.userId);
    expect(answer(await f.get(path, { userId: u.userId, apikey: u.apiKey }))).toEqual([401, message('invalidApiKey')]);
    expect((await f.get(path, { userId: u.userId, apikey: fresh })).statusCode).toBe(200);
    expect(answer(await f.get(path, { userId: u.userId, apikey: ` ${fresh} ` }))).toEqual([401, message('invalidApiKey')]);
  });

  it('treats a key sent only in an Authorization header as missing', async () => {
    const res = await f.inject({ method: 'GET', url: `/api/projects/userStats/${a.projectId}?userId=${a.userId}`, headers: { authorization: `Bearer ${a.apiKey}` } });
    expect(answer(res)).toEqual([400, message('userStatsParamsRequired')]);
  });

  it('refuses repeated query parameters with 400', async () => {
    const res = await f.get(`/projects/userStats/${a.projectId}`, { userId: [a.userId, other.userId], apikey: a.apiKey });
    expect(answer(res)).toEqual([400, { message: 'Query parameter userId must be given once' }]);
  });

  it('treats SQL-looking, unicode and huge values as the unknown values they are', async () => {
    for (const p of ["' OR 1=1 --", 'prj_ünïcødé_🚀', 'x'.repeat(90)]) {
      const res = await f.get(`/projects/userStats/${encodeURIComponent(p)}`, { userId: a.userId, apikey: a.apiKey });
      expect(answer(res)).toEqual([404, message('projectNotFound')]);
    }
    const huge = await f.get(`/projects/userStats/${'x'.repeat(1_000_000)}`, { userId: a.userId, apikey: a.apiKey });
    expect(answer(huge)).toEqual([414, message('paramTooLong')]);
    expect(huge.body).not.toContain(a.apiKey);
    const res = await f.get(`/projects/userStats/${a.projectId}`, { userId: "usr_' OR '1'='1", apikey: a.apiKey });
    expect(answer(res)).toEqual([401, message('invalidUser')]);
  });
});

describe('GET /projects/projects-status', () => {
  it('lists every project the user owns, with totalProjects', async () => {
    const u = await f.account();
    const second = (await f.t.cp.accounts.createProject(u.userId, 'Second', 'asia-pacific')).projectId;
    f.t.cp.accounts.setSubscriptionStatus(second, 'expired');
    setProjectEnabled(f.t.cp, second, false);
    const res = await f.get('/projects/projects-status', { userId: u.userId, apikey: u.apiKey });
    const body = res.json<{ totalProjects: number; projects: { _id: string }[] }>();
    expect(res.statusCode).toBe(200);
    expect(body.totalProjects).toBe(2);
    expect([...body.projects].sort((x, y) => (x._id === u.projectId ? -1 : y._id === u.projectId ? 1 : 0))).toEqual([
      { _id: u.projectId, name: expect.any(String) as string, status: true, subscriptionStatus: 'active' },
      { _id: second, name: 'Second', status: false, subscriptionStatus: 'expired' },
    ]);
  });

  it('answers an empty list for a user without projects', async () => {
    const u = await f.user();
    expect(answer(await f.get('/projects/projects-status', { userId: u.userId, apikey: u.apiKey }))).toEqual([200, { totalProjects: 0, projects: [] }]);
  });

  it('follows every row of the spec table, in the spec precedence', async () => {
    const rows: [string, Record<string, string | string[]>, number, string][] = [
      ['userId omitted', { apikey: a.apiKey }, 400, 'User ID is required'],
      ['userId empty', { userId: '', apikey: a.apiKey }, 400, 'User ID is required'],
      ['userId omitted, no key', {}, 400, 'User ID is required'],
      ['userId omitted, apikey given twice', { apikey: [a.apiKey, a.apiKey] }, 400, 'User ID is required'],
      ['unknown user', { userId: 'usr_nobody', apikey: a.apiKey }, 401, 'Invalid User'],
      ['apikey missing', { userId: a.userId }, 401, 'Unauthorized: Invalid API Key'],
      ['apikey wrong', { userId: a.userId, apikey: 'pfk_wrong' }, 401, 'Unauthorized: Invalid API Key'],
      ["another user's key", { userId: a.userId, apikey: other.apiKey }, 401, 'Unauthorized: Invalid API Key'],
    ];
    for (const [why, query, status, msg] of rows) {
      expect([why, ...answer(await f.get('/projects/projects-status', query))]).toEqual([why, status, { message: msg }]);
    }
  });

  it('answers 500 Internal server error for an unexpected failure', async () => {
    const res = await f.inject({ method: 'GET', url: `/api/projects/projects-status?userId=${a.userId}&apikey=${a.apiKey}`, headers: {} });
    expect(res.statusCode).toBe(200);
    // Raw SQL on purpose: a table gone is a failure no repository can cause, and it is the failure under test.
    f.t.cp.db.exec('ALTER TABLE projects RENAME TO projects_gone');
    try {
      expect(answer(await f.get('/projects/projects-status', { userId: a.userId, apikey: a.apiKey }))).toEqual([500, message('internal')]);
    } finally {
      f.t.cp.db.exec('ALTER TABLE projects_gone RENAME TO projects');
    }
  });

  it('treats a key sent only in an Authorization header as missing (401)', async () => {
    const res = await f.inject({ method: 'GET', url: `/api/projects/projects-status?userId=${a.userId}`, headers: { authorization: `Bearer ${a.apiKey}` } });
    expect(answer(res)).toEqual([401, message('invalidApiKey')]);
  });
});

// Every project read route (userStats, builds, settings) authorizes through the one cached path
// (http/api/project-read.ts): the same rows in the same precedence, the same member rules, and
// answers from the cached key and access facts (no other key read behind them).
const READ_ROUTES = [(p: string) => `/projects/userStats/${p}`, (p: string) => `/projects/${p}/builds`, (p: string) => `/projects/${p}/settings`];

describe.each(READ_ROUTES.map((route) => [route('{projectId}'), route] as const))('GET %s', (_name, route) => {
  it('answers the read rows in the spec precedence', async () => {
    const { userId, apiKey, projectId } = a;
    const rows: [string, string, Record<string, string>, number, string][] = [
      ['missing apikey', projectId, { userId }, 400, 'projectId, userId and apikey are required'],
      ['missing parameter before unknown user', projectId, { userId: 'usr_nobody' }, 400, 'projectId, userId and apikey are required'],
      ['unknown user before bad key', 'prj_nothing', { userId: 'usr_nobody', apikey: 'pfk_wrong' }, 401, 'Invalid User'],
      ['bad key before unknown project', 'prj_nothing', { userId, apikey: 'pfk_wrong' }, 401, 'Unauthorized: Invalid API Key'],
      ["another user's key", projectId, { userId, apikey: other.apiKey }, 401, 'Unauthorized: Invalid API Key'],
      ['unknown project', 'prj_nothing', { userId, apikey: apiKey }, 404, 'Project not found'],
      ['project of another account', other.projectId, { userId, apikey: apiKey }, 403, 'Access denied'],
    ];
    for (const [why, p, query, status, message] of rows) expect([why, ...answer(await f.get(route(p), query))]).toEqual([why, status, { message }]);
    expect((await f.get(route(projectId), { userId, apikey: apiKey })).statusCode).toBe(200);
  });

  it('lets members read, drops a removed member and a rotated key at once, and reads on an expired subscription', async () => {
    const owner = await f.account();
    const member = await f.user();
    const q = { userId: member.userId, apikey: member.apiKey };
    for (const access of ['READONLY', 'FULL'] as const) {
      await f.t.cp.accounts.addMember(owner.projectId, member.userId, access);
      expect([access, (await f.get(route(owner.projectId), q)).statusCode]).toEqual([access, 200]);
    }
    f.t.cp.accounts.removeMember(owner.projectId, member.userId);
    expect(answer(await f.get(route(owner.projectId), q))).toEqual([403, { message: 'Access denied' }]);
    f.t.cp.accounts.setSubscriptionStatus(owner.projectId, 'expired');
    expect((await f.get(route(owner.projectId), { userId: owner.userId, apikey: owner.apiKey })).statusCode).toBe(200);
    await f.rotate(owner.userId);
    expect(answer(await f.get(route(owner.projectId), { userId: owner.userId, apikey: owner.apiKey }))).toEqual([401, { message: 'Unauthorized: Invalid API Key' }]);
  });
});

describe('the one cached read path', () => {
  it('answers every read route from the cached key and access facts: with the key table gone, a pair read before still reads', async () => {
    const b = await f.account();
    const q = { userId: b.userId, apikey: b.apiKey };
    // Warms the pair's facts through one route only.
    expect((await f.get(READ_ROUTES[0]!(b.projectId), q)).statusCode).toBe(200);
    // Raw SQL on purpose: the key table itself gone is the condition under test.
    f.t.cp.db.exec('ALTER TABLE api_keys RENAME TO api_keys_gone');
    try {
      // A route that read the key any other way would fail here (500: no such table).
      for (const route of READ_ROUTES) expect([route(b.projectId), (await f.get(route(b.projectId), q)).statusCode]).toEqual([route(b.projectId), 200]);
    } finally {
      f.t.cp.db.exec('ALTER TABLE api_keys_gone RENAME TO api_keys');
    }
  });
});

describe('the HTTP edge', () => {
  it('answers an unknown route with 404 JSON', async () => {
    expect(answer(await f.inject({ method: 'GET', url: '/api/projects/nothing/here/at/all' }))).toEqual([404, message('routeNotFound')]);
  });

  it('never logs a key sent under an encoded or differently cased parameter name', async () => {
    const res = await f.inject({ method: 'GET', url: `/api/projects/userStats/${a.projectId}?userId=${a.userId}&api%6Bey=${a.apiKey}` });
    expect(res.statusCode).toBe(200); // the query parser decodes the name: it authenticates
    await f.inject({ method: 'GET', url: `/api/projects/projects-status?userId=${a.userId}&APIKEY=${a.apiKey}` });
    expectNoKeysLogged(f);
  });

  it('never logs a key (full run of this file)', () => {
    expectNoKeysLogged(f);
  });
});
