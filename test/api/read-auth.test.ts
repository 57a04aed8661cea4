// Every project read route (userStats, builds, settings) authorizes through the one cached path
// (http/api/project-read.ts): the same rows in the same precedence, the same member rules, and
// answers from the cached key and access facts (no other key read behind them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, expectNoKeysLogged, startApiFixture, type Account, type ApiFixture } from './api-fixture';

let f: ApiFixture;
let a: Account;
let other: Account;

beforeAll(async () => {
  f = await startApiFixture();
  a = f.account();
  other = f.account();
});
afterAll(async () => {
  await f.close();
});

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
    const owner = f.account();
    const member = f.user();
    const q = { userId: member.userId, apikey: member.apiKey };
    for (const access of ['READONLY', 'FULL'] as const) {
      f.t.cp.accounts.addMember(owner.projectId, member.userId, access);
      expect([access, (await f.get(route(owner.projectId), q)).statusCode]).toEqual([access, 200]);
    }
    f.t.cp.accounts.removeMember(owner.projectId, member.userId);
    expect(answer(await f.get(route(owner.projectId), q))).toEqual([403, { message: 'Access denied' }]);
    f.t.cp.accounts.setSubscriptionStatus(owner.projectId, 'expired');
    expect((await f.get(route(owner.projectId), { userId: owner.userId, apikey: owner.apiKey })).statusCode).toBe(200);
    f.rotate(owner.userId);
    expect(answer(await f.get(route(owner.projectId), { userId: owner.userId, apikey: owner.apiKey }))).toEqual([401, { message: 'Unauthorized: Invalid API Key' }]);
  });
});

describe('the one cached read path', () => {
  it('answers every read route from the cached key and access facts: with the key table gone, a pair read before still reads', async () => {
    const b = f.account();
    const q = { userId: b.userId, apikey: b.apiKey };
    // Warms the pair's facts through one route only.
    expect((await f.get(READ_ROUTES[0]!(b.projectId), q)).statusCode).toBe(200);
    f.t.cp.db.exec('ALTER TABLE api_keys RENAME TO api_keys_gone');
    try {
      // A route that read the key any other way would fail here (500: no such table).
      for (const route of READ_ROUTES) expect([route(b.projectId), (await f.get(route(b.projectId), q)).statusCode]).toEqual([route(b.projectId), 200]);
    } finally {
      f.t.cp.db.exec('ALTER TABLE api_keys_gone RENAME TO api_keys');
    }
  });
});

describe('logs', () => {
  it('never log a key (full run of this file)', () => {
    expectNoKeysLogged(f);
  });
});
