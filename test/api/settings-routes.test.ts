// GET/PATCH /projects/{projectId}/settings (allow-list, case-sensitive codec, cross-field rules,
// webhook URL policy, safe to repeat) and POST /projects/test-webhook with a real local receiver;
// build.uploaded reaches the same receiver.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_ERRORS } from '@pixelfleet/control-plane';
import { answer, expectNoKeysLogged, startApiFixture, type Account, type ApiFixture } from './api-fixture';
import { webhookDeliveries } from '../support/seed';

let f: ApiFixture;
let strict: ApiFixture;
let receiver: Server;
let receiverUrl: string;
const received: { path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
let arrivals: (() => void)[] = [];

beforeAll(async () => {
  f = await startApiFixture();
  strict = await startApiFixture({ overrides: { network: { allowPrivateUrls: false } } });
  receiver = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text) as Record<string, unknown> });
      res.statusCode = req.url?.includes('fail') ? 500 : 200;
      res.end('ok');
      for (const notify of arrivals) notify();
      arrivals = [];
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await f.close();
  await strict.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

const message = (name: keyof typeof HTTP_ERRORS) => ({ message: HTTP_ERRORS[name].message });
const creds = (a: Account) => ({ apiKey: a.apiKey, userId: a.userId });
const nextArrival = () => new Promise<void>((resolve) => arrivals.push(resolve));

describe('GET /projects/{projectId}/settings', () => {
  it('answers the settings with their defaults', async () => {
    const a = await f.account();
    const res = await f.get(`/projects/${a.projectId}/settings`, { userId: a.userId, apikey: a.apiKey });
    expect(answer(res)).toEqual([
      200,
      {
        projectId: a.projectId,
        region: 'europe',
        name: expect.any(String) as string,
        webhookUrl: null,
        webhookEvents: null,
        codec: 'H264',
        minBitrate: 1_000_000,
        maxBitrate: 20_000_000,
        resX: 1920,
        resY: 1080,
        fps: 30,
        maxRunTime: 60,
        afkTimeout: 0,
        maxConcurrentSessions: 0,
        launchArgs: [],
        embedOrigins: [],
        warmPoolMinIdle: 0,
        warmPoolQueueWaitTargetSeconds: 0,
        warmInstanceMaxAgeMinutes: 60,
      },
    ]);
    expect(answer(await f.get(`/projects/${a.projectId}/settings`, { userId: a.userId }))).toEqual([400, message('userStatsParamsRequired')]);
  });
});

describe('PATCH /projects/{projectId}/settings', () => {
  it('updates allow-listed fields, and the same body twice gives the same settings', async () => {
    const a = await f.account();
    const body = { ...creds(a), name: 'Renamed ✨', codec: 'VP9', resX: 1280, resY: 720, fps: 60, maxRunTime: 30, afkTimeout: 300, maxConcurrentSessions: 4, launchArgs: ['-Windowed', '-Level=Demo'], minBitrate: 2_000_000, maxBitrate: 8_000_000 };
    const first = await f.patch(`/projects/${a.projectId}/settings`, body);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ name: 'Renamed ✨', codec: 'VP9', resX: 1280, resY: 720, fps: 60, launchArgs: ['-Windowed', '-Level=Demo'] });
    const second = await f.patch(`/projects/${a.projectId}/settings`, body);
    expect(answer(second)).toEqual(answer(first));
    expect(f.t.cp.accounts.requireProject(a.projectId).settings).toMatchObject({ codec: 'VP9', resX: 1280, maxRunTime: 30 });
  });

  it('keeps embedOrigins as origins (lower case, no default port, no trailing slash, once each); [] opens the page to every site again', async () => {
    const a = await f.account();
    const path = `/projects/${a.projectId}/settings`;
    const res = await f.patch(path, { ...creds(a), embedOrigins: ['https://Shop.Example.com/', 'https://shop.example.com:443', 'http://localhost:8080'] });
    expect(answer(res)).toEqual([200, expect.objectContaining({ embedOrigins: ['https://shop.example.com', 'http://localhost:8080'] })]);
    expect(f.t.cp.accounts.requireProject(a.projectId).settings.embedOrigins).toEqual(['https://shop.example.com', 'http://localhost:8080']);
    expect((await f.patch(path, { ...creds(a), embedOrigins: [] })).json()).toMatchObject({ embedOrigins: [] });
  });

  it('accepts the projectId in the body too when it names the project of the path', async () => {
    const a = await f.account();
    const res = await f.patch(`/projects/${a.projectId}/settings`, { ...creds(a), projectId: a.projectId, fps: 24 });
    expect(res.statusCode).toBe(200);
    expect(f.t.cp.accounts.requireProject(a.projectId).settings.fps).toBe(24);
  });

  it('refuses with 400 naming the field: region, allowedUsers, unknown fields, wrong case, odd sizes, bitrate conflicts', async () => {
    const a = await f.account();
    const cases: [Record<string, unknown>, string][] = [
      [{ region: 'us-east-1' }, 'Invalid field: region cannot be changed'],
      [{ allowedUsers: ['usr_x'] }, 'Invalid field: allowedUsers cannot be changed'],
      [{ colour: 'blue' }, 'Invalid field: colour is not a setting'],
      [{ projectId: 'prj_another', fps: 30 }, 'Invalid field: projectId must match the project in the path'],
      [{ projectId: a.projectId }, 'No settings to update'],
      [{ codec: 'H264', region: 'europe' }, 'Invalid field: region cannot be changed'],
      [{ codec: 'h264' }, 'Invalid field: codec must be one of H264, VP8, VP9, AV1 (case-sensitive)'],
      [{ codec: 264 }, 'Invalid field: codec must be one of H264, VP8, VP9, AV1 (case-sensitive)'],
      [{ resX: 1281 }, 'Invalid field: resX must be even'],
      [{ resY: 721 }, 'Invalid field: resY must be even'],
      [{ resX: '1280' }, 'Invalid field: resX must be an integer'],
      [{ fps: 0 }, 'Invalid field: fps must be between 1 and 120'],
      [{ minBitrate: 30_000_000 }, 'Invalid field: minBitrate (30000000) must not exceed maxBitrate (20000000)'],
      [{ minBitrate: 5_000_000, maxBitrate: 4_000_000 }, 'Invalid field: minBitrate (5000000) must not exceed maxBitrate (4000000)'],
      [{ name: '' }, 'Invalid field: name must be 1 to 200 characters'],
      [{ name: 'x'.repeat(1_000_000) }, 'Invalid field: name must be 1 to 200 characters'],
      [{ launchArgs: ['-PixelStreamingURL=ws://evil'] }, 'Invalid field: launchArgs[0] sets an argument the agent controls'],
      [{ launchArgs: ['-ok', 'rm -rf /'] }, 'Invalid field: launchArgs[1] must look like -Name or -Name=value'],
      [{ webhookEvents: ['build.nope'] }, expect.stringContaining('Invalid field: webhookEvents')],
      [{ webhookUrl: 'ftp://x' }, 'Invalid field: webhookUrl must be an http(s) URL'],
      [{ embedOrigins: 'https://shop.example.com' }, 'Invalid field: embedOrigins must be a list of at most 20 origins'],
      [{ embedOrigins: Array.from({ length: 21 }, (_, i) => `https://s${i}.example.com`) }, 'Invalid field: embedOrigins must be a list of at most 20 origins'],
      ...['https://shop.example.com/path', 'https://*.example.com', 'ftp://shop.example.com', 'shop.example.com', 'https://user:pw@shop.example.com', 'https://shop.example.com?x=1', 'null', 7].map(
        (origin): [Record<string, unknown>, string] => [
          { embedOrigins: ['https://ok.example.com', origin] },
          'Invalid field: embedOrigins[1] must be an origin such as https://shop.example.com (no path, no wildcard)',
        ],
      ),
      [{}, 'No settings to update'],
    ];
    for (const [patch, msg] of cases) {
      expect([patch, ...answer(await f.patch(`/projects/${a.projectId}/settings`, { ...creds(a), ...patch }))]).toEqual([patch, 400, { message: msg }]);
    }
    // Nothing was written by the refused requests.
    expect(f.t.cp.accounts.requireProject(a.projectId).settings).toMatchObject({ codec: 'H264', resX: 1920, minBitrate: 1_000_000 });
  });

  it('applies the write rules: 415, missing key, READONLY, expired subscription, other account', async () => {
    const a = await f.account();
    const b = await f.account();
    const member = await f.user();
    const path = `/projects/${a.projectId}/settings`;
    expect(answer(await f.patch(path, JSON.stringify({ ...creds(a), fps: 30 }), { 'content-type': 'text/plain' }))).toEqual([415, message('unsupportedMediaType')]);
    expect(answer(await f.patch(path, { userId: a.userId, fps: 30 }))).toEqual([400, { message: 'Missing required field: apiKey' }]);
    expect(answer(await f.patch(path, { ...creds(b), fps: 30 }))).toEqual([403, message('forbidden')]);
    expect(answer(await f.patch('/projects/prj_nothing/settings', { ...creds(a), fps: 30 }))).toEqual([404, message('projectNotFound')]);
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'READONLY');
    expect(answer(await f.patch(path, { ...creds({ ...member, projectId: a.projectId }), fps: 30 }))).toEqual([403, message('readOnlyAccess')]);
    expect((await f.get(path, { userId: member.userId, apikey: member.apiKey })).statusCode).toBe(200);
    f.t.cp.accounts.setSubscriptionStatus(a.projectId, 'expired');
    expect(answer(await f.patch(path, { ...creds(a), fps: 30 }))).toEqual([403, message('subscriptionInactive')]);
  });

  it('shows READONLY members only the webhook URL\'s origin (the full URL is the receiver\'s secret)', async () => {
    const a = await f.account();
    const member = await f.user();
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'READONLY');
    const path = `/projects/${a.projectId}/settings`;
    const secretUrl = `${receiverUrl}/hooks/s3cr3t-token-path`;
    expect((await f.patch(path, { ...creds(a), webhookUrl: secretUrl })).statusCode).toBe(200);
    const asOwner = answer(await f.get(path, { userId: a.userId, apikey: a.apiKey }));
    expect(asOwner[1]).toMatchObject({ webhookUrl: secretUrl });
    const asReader = answer(await f.get(path, { userId: member.userId, apikey: member.apiKey }));
    expect(asReader[1]).toMatchObject({ webhookUrl: `${receiverUrl}/…` });
    expect(JSON.stringify(asReader[1])).not.toContain('s3cr3t');
  });

  it('refuses a webhook URL on a private address when private URLs are not allowed', async () => {
    const a = await strict.account();
    const path = `/projects/${a.projectId}/settings`;
    for (const webhookUrl of ['https://127.0.0.1/hook', 'https://10.0.0.8/hook', 'https://[::1]/hook', 'https://localhost/hook']) {
      expect([webhookUrl, ...answer(await strict.patch(path, { ...creds(a), webhookUrl }))]).toEqual([
        webhookUrl,
        400,
        { message: 'Invalid field: webhookUrl must point to a public address (private, loopback and link-local addresses are refused)' },
      ]);
    }
    expect(answer(await strict.patch(path, { ...creds(a), webhookUrl: 'http://93.184.216.34/hook' }))).toEqual([400, { message: 'Invalid field: webhookUrl must be an https URL' }]);
    expect((await strict.patch(path, { ...creds(a), webhookUrl: 'https://93.184.216.34/hook/abc' })).statusCode).toBe(200);
  });
});

describe('POST /projects/test-webhook and build events', () => {
  it('answers 404 when no webhook URL is configured', async () => {
    const a = await f.account();
    expect(answer(await f.post('/projects/test-webhook', { ...creds(a), projectId: a.projectId }))).toEqual([404, message('webhookNotConfigured')]);
  });

  it('delivers webhook.test with placeholder ids to the configured URL and records the delivery', async () => {
    const a = await f.account();
    const secretPath = '/hooks/4f1c9a7e-test';
    expect((await f.patch(`/projects/${a.projectId}/settings`, { ...creds(a), webhookUrl: `${receiverUrl}${secretPath}` })).statusCode).toBe(200);
    const before = received.length;
    const res = await f.post('/projects/test-webhook', { ...creds(a), projectId: a.projectId });
    expect(answer(res)).toEqual([200, { delivered: true, statusCode: 200, error: null, durationMs: expect.any(Number) as number }]);
    const got = received[before];
    expect(got?.path).toBe(secretPath);
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.body).toEqual({ event: 'webhook.test', projectId: 'prj_webhook_test', uploadId: 'upl_webhook_test', fileUrl: null, status: 'test', objection: null, timestamp: expect.any(String) as string });
    const rows = webhookDeliveries(f.t.cp, a.projectId).map((d) => ({ event: d.event, statusCode: d.statusCode, error: d.error ?? null }));
    expect(rows).toEqual([{ event: 'webhook.test', statusCode: 200, error: null }]);
    // The URL is the receiver's shared secret: it is never logged.
    expect(f.t.logs.text()).not.toContain(secretPath);
  });

  it('reports a receiver failure without retrying', async () => {
    const a = await f.account();
    await f.patch(`/projects/${a.projectId}/settings`, { ...creds(a), webhookUrl: `${receiverUrl}/fail` });
    const before = received.length;
    const res = await f.post('/projects/test-webhook', { ...creds(a), projectId: a.projectId });
    expect(answer(res)).toEqual([200, { delivered: false, statusCode: 500, error: 'the webhook endpoint answered 500', durationMs: expect.any(Number) as number }]);
    expect(received.length).toBe(before + 1);
  });

  it('answers a generic sentence for an unreachable endpoint: no socket error, address or port', async () => {
    const a = await f.account();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await f.patch(`/projects/${a.projectId}/settings`, { ...creds(a), webhookUrl: `http://127.0.0.1:${port}/hook` });
    const res = await f.post('/projects/test-webhook', { ...creds(a), projectId: a.projectId });
    expect(answer(res)).toEqual([200, { delivered: false, statusCode: null, error: 'the webhook endpoint could not be reached', durationMs: expect.any(Number) as number }]);
    expect(res.body).not.toContain(String(port));
    // The detail stays for operators: the delivery row (not readable through the API) keeps it.
    expect(webhookDeliveries(f.t.cp, a.projectId).map((d) => d.error)).toEqual([`connect ECONNREFUSED 127.0.0.1:${port}`]);
  });

  it('sends build.uploaded when upload-file accepts a build', async () => {
    const a = await f.account();
    await f.patch(`/projects/${a.projectId}/settings`, { ...creds(a), webhookUrl: `${receiverUrl}/uploads`, webhookEvents: ['build.uploaded'] });
    const arrived = nextArrival();
    const res = await f.post('/projects/upload-file', { ...creds(a), projectId: a.projectId, fileUrl: 'http://127.0.0.1:9/b.zip' });
    expect(res.statusCode).toBe(201);
    await arrived;
    expect(received.at(-1)?.body).toEqual({
      event: 'build.uploaded',
      projectId: a.projectId,
      uploadId: res.json<{ uploadId: string }>().uploadId,
      fileUrl: 'http://127.0.0.1:9/b.zip',
      status: 'pending',
      objection: null,
      timestamp: expect.any(String) as string,
    });
  });

  it('applies the write rules to test-webhook', async () => {
    const a = await f.account();
    expect(answer(await f.post('/projects/test-webhook', { ...creds(a) }))).toEqual([400, { message: 'Missing required field: projectId' }]);
    expect(answer(await f.post('/projects/test-webhook', { ...creds(a), apiKey: 'pfk_nope', projectId: a.projectId }))).toEqual([401, message('invalidApiKey')]);
  });
});

describe('logs', () => {
  it('never log a key (full run of this file)', () => {
    expectNoKeysLogged(f);
    expectNoKeysLogged(strict);
  });
});
