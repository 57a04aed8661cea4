// The dashboard's sign-in over real HTTP, as a browser's requests would be: the CSRF token and its
// cookie, the session cookie's flags, sign-in refused alike for every wrong pair, throttled with a
// wait, sign-out, a password set through the mailed invitation link (read from the outbox folder's
// .eml file), and the requests of another site refused by Origin and by CSRF token.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { mailBody } from '../support/smtp-receiver';
import { DashboardClient as Browser } from '../support/dashboard-client';

const PASSWORD = 'correct horse battery';
let t: TestControlPlane;

beforeAll(async () => {
  t = await startTestControlPlane();
});

afterAll(async () => {
  await t?.destroy();
});

/** Invites the address and sets its password through the link mailed to the outbox folder. */
async function personWithPassword(email: string, browser: Browser): Promise<void> {
  const { invited } = await t.cp.people.invite(email);
  expect(invited).toBe(true);
  await t.cp.mail.idle();
  const outbox = join(t.dataDir, 'outbox');
  const newest = readdirSync(outbox).sort().at(-1)!;
  const token = /set-password#token=(pfi_[A-Za-z0-9_-]+)/.exec(mailBody(readFileSync(join(outbox, newest), 'utf8')))?.[1];
  expect(token).toBeDefined();
  const set = await browser.post('/dashboard/api/set-password', { token, purpose: 'invitation', password: PASSWORD });
  expect(set.status).toBe(200);
  expect(set.json).toMatchObject({ email });
  // The link worked once.
  expect((await browser.post('/dashboard/api/set-password', { token, purpose: 'invitation', password: PASSWORD })).status).toBe(404);
}

describe('dashboard sign-in', () => {
  it('signs in with the password set through the invitation: an HttpOnly, SameSite=Lax session cookie on the dashboard path; me, then sign-out', async () => {
    const browser = new Browser(t.started.httpOrigin);
    await browser.fetchCsrf();
    expect(browser.lastSetCookie.join('\n')).toMatch(/^pf_csrf=[^;]+; Path=\/; HttpOnly; SameSite=Strict$/m);
    await personWithPassword('ada@example.com', browser);

    const signedIn = await browser.post('/dashboard/api/sign-in', { email: 'ada@example.com', password: PASSWORD });
    expect(signedIn.status).toBe(200);
    expect(signedIn.json).toEqual({ userId: expect.stringMatching(/^usr_/) as unknown, email: 'ada@example.com', operator: false });
    expect(signedIn.headers.get('cache-control')).toBe('no-store');
    const cookie = browser.lastSetCookie.find((line) => line.startsWith('pf_session='))!;
    // Plain HTTP on loopback: not Secure (a browser would drop a Secure cookie here); everything else is set.
    expect(cookie).toMatch(/^pf_session=pfs_[A-Za-z0-9_-]{43}; Max-Age=1209600; Path=\/dashboard; HttpOnly; SameSite=Lax$/);

    expect((await browser.request('GET', '/dashboard/api/me')).json).toEqual(signedIn.json);
    expect(await new Browser(t.started.httpOrigin).request('GET', '/dashboard/api/me')).toMatchObject({ status: 401, json: { message: 'Not signed in' } });

    expect((await browser.post('/dashboard/api/sign-out')).status).toBe(204);
    expect(browser.cookies.has('pf_session')).toBe(false);
    const session = cookie.split(';')[0]!.split('=')[1]!;
    // The token itself no longer works, whoever still holds it.
    expect((await browser.request('GET', '/dashboard/api/me', undefined, { cookie: `pf_session=${session}` })).status).toBe(401);
  });

  it('refuses a wrong password and an unknown address alike, then throttles the account with the wait', async () => {
    const browser = new Browser(t.started.httpOrigin);
    await browser.fetchCsrf();
    await personWithPassword('bob@example.com', browser);
    const wrong = await browser.post('/dashboard/api/sign-in', { email: 'bob@example.com', password: 'not the password' });
    const unknown = await browser.post('/dashboard/api/sign-in', { email: 'nobody@example.com', password: 'not the password' });
    expect([wrong.status, wrong.json]).toEqual([401, { message: 'Wrong e-mail address or password' }]);
    expect([unknown.status, unknown.json]).toEqual([401, { message: 'Wrong e-mail address or password' }]);
    for (let i = 0; i < 4; i += 1) expect((await browser.post('/dashboard/api/sign-in', { email: 'bob@example.com', password: 'not the password' })).status).toBe(401);
    const throttled = await browser.post('/dashboard/api/sign-in', { email: 'bob@example.com', password: PASSWORD });
    expect(throttled.status).toBe(429);
    expect(throttled.json.message).toMatch(/^Too many failed sign-ins\. Try again in (59|60) seconds\.$/);
    expect(throttled.headers.get('retry-after')).toMatch(/^(59|60)$/);
  });

  it('answers a password reset request the same for any address, and a network that asks too often with the wait', async () => {
    const browser = new Browser(t.started.httpOrigin);
    await browser.fetchCsrf();
    const known = await browser.post('/dashboard/api/password-reset', { email: 'ada@example.com' });
    const unknown = await browser.post('/dashboard/api/password-reset', { email: 'nobody@example.com' });
    expect(known).toMatchObject({ status: 202 });
    expect([unknown.status, unknown.json]).toEqual([known.status, known.json]);
    // Ten from one client network back to back, whatever the addresses; then the wait.
    for (let i = 0; i < 8; i += 1) expect((await browser.post('/dashboard/api/password-reset', { email: `walker${i}@example.com` })).status).toBe(202);
    const throttled = await browser.post('/dashboard/api/password-reset', { email: 'ada@example.com' });
    expect(throttled).toMatchObject({ status: 429, json: { message: 'Too many password reset requests from your network. Try again in 60 seconds.' } });
    expect(throttled.headers.get('retry-after')).toBe('60');
  });
});

describe('requests from another site', () => {
  it('are refused by Origin, and without the CSRF token, before any password is checked', async () => {
    const browser = new Browser(t.started.httpOrigin);
    await browser.fetchCsrf();
    const evil = new Browser('https://evil.example', t.started.httpOrigin);
    evil.cookies.set('pf_csrf', browser.cookies.get('pf_csrf')!);
    evil.csrfToken = browser.csrfToken;
    expect(await evil.post('/dashboard/api/sign-in', { email: 'ada@example.com', password: PASSWORD })).toMatchObject({ status: 403, json: { message: 'Cross-site request refused' } });

    const noToken = await browser.request('POST', '/dashboard/api/sign-in', { email: 'ada@example.com', password: PASSWORD });
    expect(noToken).toMatchObject({ status: 403, json: { message: 'Missing or invalid CSRF token' } });
    const forged = await browser.request('POST', '/dashboard/api/sign-in', { email: 'ada@example.com', password: PASSWORD }, { 'x-csrf-token': 'forged' });
    expect(forged).toMatchObject({ status: 403, json: { message: 'Missing or invalid CSRF token' } });
    // A token without its secret cookie (another browser's token) is no token.
    const stranger = new Browser(t.started.httpOrigin);
    stranger.csrfToken = browser.csrfToken;
    expect((await stranger.post('/dashboard/api/sign-in', { email: 'ada@example.com', password: PASSWORD })).status).toBe(403);
  });
});

describe('a dashboard served over HTTPS', () => {
  it('sets Secure on the session cookie, on the public path, and takes only its public origin', async () => {
    const https = await startTestControlPlane({ overrides: { publicUrls: { dashboard: 'https://console.example.com/app' } } });
    try {
      const person = 'carol@example.com';
      const browser = new Browser('https://console.example.com', t.started.httpOrigin);
      const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(`${https.started.httpOrigin}${path}`, {
          method,
          headers: { 'content-type': 'application/json', origin: 'https://console.example.com', cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '), ...headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        for (const line of res.headers.getSetCookie()) browser.cookies.set(line.split('=')[0]!, line.split(';')[0]!.split('=')[1]!);
        return res;
      };
      const csrf = (await (await request('GET', '/dashboard/api/csrf')).json()) as { csrfToken: string };
      await https.cp.people.invite(person);
      await https.cp.mail.idle();
      const outbox = join(https.dataDir, 'outbox');
      const raw = readFileSync(join(outbox, readdirSync(outbox)[0]!), 'utf8');
      const token = /https:\/\/console\.example\.com\/app\/set-password#token=(pfi_[A-Za-z0-9_-]+)/.exec(mailBody(raw))?.[1];
      expect(token).toBeDefined();
      expect((await request('POST', '/dashboard/api/set-password', { token, purpose: 'invitation', password: PASSWORD }, { 'x-csrf-token': csrf.csrfToken })).status).toBe(200);
      const signedIn = await request('POST', '/dashboard/api/sign-in', { email: person, password: PASSWORD }, { 'x-csrf-token': csrf.csrfToken });
      expect(signedIn.status).toBe(200);
      expect(signedIn.headers.getSetCookie().find((l) => l.startsWith('pf_session='))).toMatch(/; Path=\/app; HttpOnly; Secure; SameSite=Lax$/);
      // The listener's own origin is not the dashboard's public one.
      const direct = await request('POST', '/dashboard/api/sign-out', {}, { 'x-csrf-token': csrf.csrfToken, origin: https.started.httpOrigin });
      expect(direct.status).toBe(403);
    } finally {
      await https.destroy();
    }
  });
});

describe('signed in', () => {
  it('lists the projects the person owns or is a member of, with their access, live numbers and share link, and no other', async () => {
    const browser = new Browser(t.started.httpOrigin);
    await browser.fetchCsrf();
    await personWithPassword('dora@example.com', browser);
    expect((await browser.post('/dashboard/api/sign-in', { email: 'dora@example.com', password: PASSWORD })).status).toBe(200);
    const dora = (await t.cp.people.userOfSession(browser.cookies.get('pf_session')!))!;
    const someoneElse = await t.cp.accounts.createUser('erin@example.com');
    const own = await t.cp.accounts.createProject(dora.userId, 'Zeta showroom', 'europe');
    const shared = await t.cp.accounts.createProject(someoneElse.userId, 'alpha configurator', 'asia-pacific');
    await t.cp.accounts.addMember(shared.projectId, dora.userId, 'READONLY');
    await t.cp.accounts.createProject(someoneElse.userId, 'Not shared', 'europe');

    const listed = await browser.request('GET', '/dashboard/api/projects');
    expect(listed.status).toBe(200);
    expect(listed.json.projects).toEqual([
      { projectId: shared.projectId, name: 'alpha configurator', region: 'asia-pacific', access: 'READONLY', enabled: true, subscriptionStatus: 'active', liveUploadId: null, liveUser: 0, queueUser: 0, shareUrl: `${t.started.publicUrls.share}/${shared.projectId}` },
      { projectId: own.projectId, name: 'Zeta showroom', region: 'europe', access: 'owner', enabled: true, subscriptionStatus: 'active', liveUploadId: null, liveUser: 0, queueUser: 0, shareUrl: `${t.started.publicUrls.share}/${own.projectId}` },
    ]);
    // A member taken off sees the project no more, at once.
    t.cp.accounts.removeMember(shared.projectId, dora.userId);
    expect(((await browser.request('GET', '/dashboard/api/projects')).json.projects as { projectId: string }[]).map((p) => p.projectId)).toEqual([own.projectId]);
    expect((await new Browser(t.started.httpOrigin).request('GET', '/dashboard/api/projects')).status).toBe(401);
  });

  it('requests a new API key: shown once, the same key mailed, the previous key refused by the REST API at once', async () => {
    const browser = new Browser(t.started.httpOrigin);
    await browser.fetchCsrf();
    await personWithPassword('fay@example.com', browser);
    expect((await browser.post('/dashboard/api/sign-in', { email: 'fay@example.com', password: PASSWORD })).status).toBe(200);
    const userId = (await t.cp.people.userOfSession(browser.cookies.get('pf_session')!))!.userId;
    const before = await t.cp.accounts.issueKey(userId);
    const status = (apikey: string) => fetch(`${t.started.publicUrls.api}/projects/projects-status?${new URLSearchParams({ userId, apikey }).toString()}`).then((r) => r.status);
    expect(await status(before)).toBe(200);

    // Not without the CSRF token.
    expect((await browser.request('POST', '/dashboard/api/api-key', {})).status).toBe(403);
    const issued = await browser.post('/dashboard/api/api-key');
    expect(issued.status).toBe(200);
    expect(issued.headers.get('cache-control')).toBe('no-store');
    const apiKey = issued.json.apiKey as string;
    expect(apiKey).toMatch(/^pfk_/);
    expect(issued.json.userId).toBe(userId);

    await t.cp.mail.idle();
    const outbox = join(t.dataDir, 'outbox');
    const mail = readFileSync(join(outbox, readdirSync(outbox).sort().at(-1)!), 'utf8');
    expect(mailBody(mail)).toContain(apiKey);
    expect(await status(apiKey)).toBe(200);
    expect(await status(before)).toBe(401);
  });
});

describe('anonymous requests', () => {
  it("take from the client address's fair-use budget, shared with the REST API: 429 with Retry-After once it is spent", async () => {
    const limited = await startTestControlPlane({ overrides: { limits: { fairUseAddressBurst: 4, fairUseAddressPerSecond: 0.01 } } });
    try {
      const get = (path: string) => fetch(`${limited.started.httpOrigin}${path}`);
      for (let i = 0; i < 3; i += 1) expect((await get('/dashboard/api/csrf')).status).toBe(200);
      // The REST API's routes spend the same budget.
      expect((await get('/api/projects/projects-status')).status).toBe(400);
      const refused = await get('/dashboard/api/csrf');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await fetch(`${limited.started.httpOrigin}/dashboard/api/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(429);
    } finally {
      await limited.destroy();
    }
  });
});

