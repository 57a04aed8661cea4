// POST /projects/upload-file, /projects/distribute-file, /projects/set-active-build and
// GET /projects/{projectId}/builds: body validation, 415, auth and access rules, the fileUrl
// policy, and the shared build-call window (on a ManualClock), with the bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_ERRORS } from '@pixelfleet/control-plane';
import { maskFileUrl, type BuildStatus } from '@pixelfleet/control-plane/test-support';
import { ManualClock } from '@pixelfleet/common';
import { answer, expectNoKeysLogged, startApiFixture, type Account, type ApiFixture } from './api-fixture';
import { buildsOfProject, fleetEvents, recordBuildArchive, setBuildStatus } from '../support/seed';

const clock = new ManualClock();
let f: ApiFixture;
let strict: ApiFixture;

// The routes alone: statuses are moved by hand here, so no pipeline works on the builds in the background
// (test/integration/build-pipeline.test.ts runs it).
beforeAll(async () => {
  f = await startApiFixture({ clock, withoutPipeline: true });
  strict = await startApiFixture({ overrides: { network: { allowPrivateUrls: false } }, withoutPipeline: true });
});
afterAll(async () => {
  await f.close();
  await strict.close();
});

const message = (name: keyof typeof HTTP_ERRORS) => ({ message: HTTP_ERRORS[name].message });
const FILE_URL = 'http://127.0.0.1:9/build.zip';
const upload = (a: Account, extra: Record<string, unknown> = {}) => ({ apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, fileUrl: FILE_URL, ...extra });
const setStatus = (fx: ApiFixture, uploadId: string, status: BuildStatus) => setBuildStatus(fx.t.cp, uploadId, status);
/** Moves past the build-call window so the next call of any user is accepted. */
const nextWindow = () => clock.advance(120_000);

describe('POST /projects/upload-file', () => {
  it('creates a pending build and answers 201 { uploadId }', async () => {
    const a = await f.account();
    const res = await f.post('/projects/upload-file', upload(a, { autoRelease: true }));
    expect(res.statusCode).toBe(201);
    const { uploadId, status } = res.json<{ uploadId: string; status: string }>();
    expect(uploadId).toMatch(/^upl_[0-9a-f]{24}$/);
    expect(status).toBe('pending');
    const list = await f.get(`/projects/${a.projectId}/builds`, { userId: a.userId, apikey: a.apiKey });
    expect(answer(list)).toEqual([
      200,
      { totalBuilds: 1, builds: [{ uploadId, fileUrl: FILE_URL, status: 'pending', objection: null, autoRelease: true, live: false, createdAt: expect.any(String) as string, updatedAt: expect.any(String) as string }] },
    ]);
  });

  it('defaults autoRelease to false', async () => {
    nextWindow();
    const a = await f.account();
    expect((await f.post('/projects/upload-file', upload(a))).statusCode).toBe(201);
    const [build] = buildsOfProject(f.t.cp, a.projectId);
    expect(build?.autoRelease).toBe(false);
  });

  it('answers 400 Missing required field for each required field, in body order', async () => {
    const a = await f.account();
    for (const field of ['apiKey', 'userId', 'projectId', 'fileUrl']) {
      for (const missing of [undefined, null, '']) {
        const body: Record<string, unknown> = upload(a);
        if (missing === undefined) delete body[field];
        else body[field] = missing;
        expect([field, missing, ...answer(await f.post('/projects/upload-file', body))]).toEqual([field, missing, 400, { message: `Missing required field: ${field}` }]);
      }
    }
    expect(answer(await f.post('/projects/upload-file', {}))).toEqual([400, { message: 'Missing required field: apiKey' }]);
  });

  it('answers 400 naming the field for each wrong type', async () => {
    const a = await f.account();
    const cases: [string, unknown, string][] = [
      ['apiKey', 123, 'Invalid field: apiKey must be a string'],
      ['userId', true, 'Invalid field: userId must be a string'],
      ['projectId', { $ne: 1 }, 'Invalid field: projectId must be a string'],
      ['fileUrl', ['https://a/b.zip'], 'Invalid field: fileUrl must be a string'],
      ['autoRelease', 'yes', 'Invalid field: autoRelease must be a boolean'],
    ];
    for (const [field, value, msg] of cases) {
      expect([field, ...answer(await f.post('/projects/upload-file', upload(a, { [field]: value })))]).toEqual([field, 400, { message: msg }]);
    }
    for (const body of ['[]', '"text"', 'null', '42']) {
      expect(answer(await f.post('/projects/upload-file', body))).toEqual([400, { message: 'Request body must be a JSON object' }]);
    }
  });

  it('answers 400 for malformed JSON, 413 for an oversized body, 400 for a huge field', async () => {
    expect(answer(await f.post('/projects/upload-file', '{"apiKey": '))).toEqual([400, message('malformedJson')]);
    expect(answer(await f.post('/projects/upload-file', 'not json at all'))).toEqual([400, message('malformedJson')]);
    const a = await f.account();
    expect(answer(await f.post('/projects/upload-file', upload(a, { fileUrl: 'x'.repeat(1_100_000) })))).toEqual([413, message('bodyTooLarge')]);
    expect(answer(await f.post('/projects/upload-file', upload(a, { fileUrl: `https://example.com/${'x'.repeat(1_000_000)}` })))).toEqual([400, { message: 'Invalid field: fileUrl must be at most 2048 characters' }]);
    expect(answer(await f.post('/projects/upload-file', upload(a, { userId: 'u'.repeat(1_000_000) })))).toEqual([400, { message: 'Invalid field: userId must be at most 128 characters' }]);
  });

  it('answers 415 for any content type but application/json, and accepts charset parameters', async () => {
    const a = await f.account();
    const body = JSON.stringify(upload(a, { fileUrl: 'not a url' }));
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'text/json']) {
      expect([type, ...answer(await f.post('/projects/upload-file', body, { 'content-type': type }))]).toEqual([type, 415, message('unsupportedMediaType')]);
    }
    expect(answer(await f.inject({ method: 'POST', url: '/api/projects/upload-file', payload: body, headers: { 'content-type': '' } }))).toEqual([415, message('unsupportedMediaType')]);
    expect(answer(await f.inject({ method: 'POST', url: '/api/projects/upload-file' }))).toEqual([415, message('unsupportedMediaType')]);
    // Accepted: the request reaches validation (the URL is refused there, so no window is used).
    for (const type of ['application/json; charset=utf-8', 'Application/JSON;charset=UTF-8']) {
      expect([type, ...answer(await f.post('/projects/upload-file', body, { 'content-type': type }))]).toEqual([type, 400, { message: 'Invalid fileUrl: must be an absolute URL' }]);
    }
  });

  it('applies the key rules: wrong, whitespace, rotated, another user, Authorization header only', async () => {
    const a = await f.account();
    const b = await f.account();
    const cases: [string, Record<string, unknown>, number, string][] = [
      ['wrong key', upload(a, { apiKey: 'pfk_wrong' }), 401, 'Unauthorized: Invalid API Key'],
      ['key with whitespace', upload(a, { apiKey: ` ${a.apiKey}\n` }), 401, 'Unauthorized: Invalid API Key'],
      ["another user's key", upload(a, { apiKey: b.apiKey }), 401, 'Invalid User'],
      ['unknown userId', upload(a, { userId: 'usr_nobody' }), 401, 'Invalid User'],
      ['SQL in userId', upload(a, { userId: "' OR '1'='1" }), 401, 'Invalid User'],
    ];
    for (const [why, body, status, msg] of cases) expect([why, ...answer(await f.post('/projects/upload-file', body))]).toEqual([why, status, { message: msg }]);
    const { apiKey: _omitted, ...withoutKey } = upload(a);
    const res = await f.post('/projects/upload-file', withoutKey, { 'content-type': 'application/json', authorization: `Bearer ${a.apiKey}` });
    expect(answer(res)).toEqual([401, message('invalidApiKey')]);
    const rotated = await f.account();
    await f.rotate(rotated.userId);
    expect(answer(await f.post('/projects/upload-file', upload(rotated)))).toEqual([401, message('invalidApiKey')]);
  });

  it('applies the project rules: unknown 404, other account 403, READONLY, removed member, expired subscription', async () => {
    const a = await f.account();
    const other = await f.account();
    const member = await f.user();
    const asMember = { ...upload(a), apiKey: member.apiKey, userId: member.userId };
    const cases: [string, Record<string, unknown>, number, string][] = [
      ['unknown project', upload(a, { projectId: 'prj_nothing' }), 404, 'Project not found'],
      ['unicode project', upload(a, { projectId: 'prj_ünïcødé_🚀' }), 404, 'Project not found'],
      ['SQL project', upload(a, { projectId: "prj'; DROP TABLE builds; --" }), 404, 'Project not found'],
      ['project of another account', upload(a, { projectId: other.projectId }), 403, 'Forbidden'],
      ['not a member', asMember, 403, 'Forbidden'],
    ];
    for (const [why, body, status, msg] of cases) expect([why, ...answer(await f.post('/projects/upload-file', body))]).toEqual([why, status, { message: msg }]);
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'READONLY');
    expect(answer(await f.post('/projects/upload-file', asMember))).toEqual([403, message('readOnlyAccess')]);
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'FULL');
    nextWindow();
    expect((await f.post('/projects/upload-file', asMember)).statusCode).toBe(201);
    f.t.cp.accounts.removeMember(a.projectId, member.userId);
    nextWindow();
    expect(answer(await f.post('/projects/upload-file', asMember))).toEqual([403, message('forbidden')]);
    f.t.cp.accounts.setSubscriptionStatus(a.projectId, 'expired');
    expect(answer(await f.post('/projects/upload-file', upload(a)))).toEqual([403, message('subscriptionInactive')]);
    // Reads stay allowed on an expired subscription.
    expect((await f.get(`/projects/${a.projectId}/builds`, { userId: a.userId, apikey: a.apiKey })).statusCode).toBe(200);
  });
});

describe("what a READONLY member sees of a build's fileUrl", () => {
  it('the URL without its query, fragment or userinfo (a presigned signature is a credential); the owner and FULL members see it whole', async () => {
    nextWindow();
    const a = await f.account();
    const presigned = 'https://bucket.example.com/builds/game.zip?X-Amz-Signature=0123abcd&X-Amz-Credential=AKIA%2F20261129#part';
    expect((await f.post('/projects/upload-file', upload(a, { fileUrl: presigned }))).statusCode).toBe(201);
    const reader = await f.user();
    await f.t.cp.accounts.addMember(a.projectId, reader.userId, 'READONLY');
    const fileUrls = async (who: { userId: string; apiKey: string }) =>
      (await f.get(`/projects/${a.projectId}/builds`, { userId: who.userId, apikey: who.apiKey })).json<{ builds: { fileUrl: string }[] }>().builds.map((b) => b.fileUrl);
    expect(await fileUrls(reader)).toEqual(['https://bucket.example.com/builds/game.zip']);
    expect(await fileUrls(a)).toEqual([presigned]);
    await f.t.cp.accounts.addMember(a.projectId, reader.userId, 'FULL');
    expect(await fileUrls(reader)).toEqual([presigned]);
    expect(maskFileUrl('https://user:pass@example.com:8443/a/b.zip?sig=1')).toBe('https://example.com:8443/a/b.zip');
    expect(maskFileUrl('not a url')).toBe('…');
  });
});

describe('the build-call window (one accepted call per 120 s per user, shared)', () => {
  it('refuses the second call with 429 and Retry-After until the window has passed', async () => {
    nextWindow();
    const a = await f.account();
    expect((await f.post('/projects/upload-file', upload(a))).statusCode).toBe(201);
    const second = await f.post('/projects/upload-file', upload(a));
    expect(answer(second)).toEqual([429, { message: 'Rate limit exceeded. Try again in 2 minutes.' }]);
    expect(second.headers['retry-after']).toBe('120');
    clock.advance(119_000);
    const third = await f.post('/projects/upload-file', upload(a));
    expect(third.statusCode).toBe(429);
    expect(third.headers['retry-after']).toBe('1');
    // Another user has a window of their own.
    expect((await f.post('/projects/upload-file', upload(await f.account()))).statusCode).toBe(201);
    clock.advance(1_000);
    expect((await f.post('/projects/upload-file', upload(a))).statusCode).toBe(201);
  });

  it('is shared between upload-file, distribute-file and set-active-build', async () => {
    nextWindow();
    const a = await f.account();
    const uploadId = (await f.post('/projects/upload-file', upload(a))).json<{ uploadId: string }>().uploadId;
    setStatus(f, uploadId, 'Ready');
    const body = { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, uploadId };
    expect((await f.post('/projects/distribute-file', body)).statusCode).toBe(429);
    expect((await f.post('/projects/set-active-build', body)).statusCode).toBe(429);
    clock.advance(120_000);
    expect(answer(await f.post('/projects/distribute-file', body))).toEqual([200, { uploadId, status: 'Distributing to Servers' }]);
    expect((await f.post('/projects/upload-file', upload(a))).statusCode).toBe(429);
  });

  it('is not used by calls refused with 400, 401, 403, 404 or 415', async () => {
    nextWindow();
    const a = await f.account();
    const other = await f.account();
    const refused: [Record<string, unknown> | string, number, Record<string, string>?][] = [
      [upload(a, { fileUrl: '' }), 400],
      [upload(a, { fileUrl: 'ftp://host/b.zip' }), 400],
      [upload(a, { apiKey: 'pfk_typo' }), 401],
      [upload(a, { projectId: other.projectId }), 403],
      [upload(a, { projectId: 'prj_typo' }), 404],
      [JSON.stringify(upload(a)), 415, { 'content-type': 'text/plain' }],
    ];
    for (const [body, status, headers] of refused) expect((await f.post('/projects/upload-file', body, headers)).statusCode).toBe(status);
    expect((await f.post('/projects/upload-file', upload(a))).statusCode).toBe(201);
  });

  it('names the configured window in the message', async () => {
    const short = await startApiFixture({ overrides: { limits: { buildCallWindowSeconds: 60, fairUseBurst: 1000, fairUsePerSecond: 1000, fairUseAddressBurst: 1000, fairUseAddressPerSecond: 1000 } }, withoutPipeline: true });
    try {
      const a = await short.account();
      expect((await short.post('/projects/upload-file', upload(a))).statusCode).toBe(201);
      const res = await short.post('/projects/upload-file', upload(a));
      expect(answer(res)).toEqual([429, { message: 'Rate limit exceeded. Try again in 1 minute.' }]);
      expectNoKeysLogged(short);
    } finally {
      await short.close();
    }
  });
});

describe('POST /projects/distribute-file and /projects/set-active-build', () => {
  it('moves a Ready build to Distributing to Servers; set-active-build re-queues it', async () => {
    nextWindow();
    const a = await f.account();
    const uploadId = (await f.post('/projects/upload-file', upload(a))).json<{ uploadId: string }>().uploadId;
    setStatus(f, uploadId, 'Ready');
    // As the pipeline leaves it: the archive saved. No worker is in the region, so it stays distributing.
    recordBuildArchive(f.t.cp, uploadId, { sha256: 'a'.repeat(64), bytes: 1 });
    const body = { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, uploadId };
    nextWindow();
    expect(answer(await f.post('/projects/set-active-build', body))).toEqual([200, { uploadId, status: 'Distributing to Servers' }]);
    nextWindow();
    expect(answer(await f.post('/projects/set-active-build', body))).toEqual([200, { uploadId, status: 'Distributing to Servers' }]);
  });

  it('starts from Approved too (roll back or redo); refuses every other status with 400 naming it (the stage table)', async () => {
    nextWindow();
    const a = await f.account();
    const uploadId = (await f.post('/projects/upload-file', upload(a))).json<{ uploadId: string }>().uploadId;
    const body = { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, uploadId };
    setStatus(f, uploadId, 'Approved');
    nextWindow();
    expect(answer(await f.post('/projects/distribute-file', body))).toEqual([200, { uploadId, status: 'Distributing to Servers' }]);
    for (const status of ['Downloading Files', 'Extracting & Scanning', 'Saving to Repository', 'Reject', 'Download Failed'] as const) {
      setStatus(f, uploadId, status);
      nextWindow();
      expect([status, ...answer(await f.post('/projects/distribute-file', body))]).toEqual([status, 400, { message: `Build ${uploadId} cannot be distributed while its status is ${status}` }]);
    }
    const rows = fleetEvents(f.t.cp, { projectId: a.projectId })
      .filter((e) => e.type.startsWith('build.'))
      .map((e) => ({ type: e.type, data: e.data }));
    // The distribution finds no archive (the status was set by hand, the pipeline never saved one) and rejects it.
    expect(rows).toEqual([
      { type: 'build.uploaded', data: { uploadId, autoRelease: false } },
      { type: 'build.distributing', data: { uploadId, by: a.userId } },
      { type: 'build.rejected', data: { uploadId, objection: 'the build has no archive in the repository to distribute; please submit it again' } },
    ]);
  });

  it('answers 400 per missing field, 404 for an unknown upload or one of another project, 400 for a pending build', async () => {
    nextWindow();
    const a = await f.account();
    const b = await f.account();
    const bUpload = (await f.post('/projects/upload-file', upload(b))).json<{ uploadId: string }>().uploadId;
    const aUpload = (await f.post('/projects/upload-file', upload(a))).json<{ uploadId: string }>().uploadId;
    const body = { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, uploadId: aUpload };
    for (const path of ['/projects/distribute-file', '/projects/set-active-build']) {
      for (const field of ['apiKey', 'userId', 'projectId', 'uploadId'] as const) {
        const { [field]: _gone, ...rest } = body;
        expect([path, field, ...answer(await f.post(path, rest))]).toEqual([path, field, 400, { message: `Missing required field: ${field}` }]);
      }
      expect(answer(await f.post(path, { ...body, uploadId: 42 }))).toEqual([400, { message: 'Invalid field: uploadId must be a string' }]);
      expect(answer(await f.post(path, { ...body, uploadId: 'upl_nothing' }))).toEqual([404, message('uploadNotFound')]);
      expect(answer(await f.post(path, { ...body, uploadId: bUpload }))).toEqual([404, message('uploadNotFound')]);
      expect(answer(await f.post(path, { ...body, projectId: b.projectId, uploadId: bUpload }))).toEqual([403, message('forbidden')]);
      expect(answer(await f.post(path, body))).toEqual([400, { message: `Build ${aUpload} cannot be distributed while its status is pending` }]);
      expect(answer(await f.post(path, JSON.stringify(body), { 'content-type': 'text/plain' }))).toEqual([415, message('unsupportedMediaType')]);
    }
  });
});

describe('GET /projects/{projectId}/builds', () => {
  it('follows the GET rules (400, 401, 403, 404)', async () => {
    const a = await f.account();
    const other = await f.account();
    const rows: [string, Record<string, string>, number, string][] = [
      [a.projectId, { userId: a.userId }, 400, 'projectId, userId and apikey are required'],
      [a.projectId, { userId: 'usr_nobody', apikey: a.apiKey }, 401, 'Invalid User'],
      [a.projectId, { userId: a.userId, apikey: other.apiKey }, 401, 'Unauthorized: Invalid API Key'],
      [other.projectId, { userId: a.userId, apikey: a.apiKey }, 403, 'Access denied'],
      ['prj_nothing', { userId: a.userId, apikey: a.apiKey }, 404, 'Project not found'],
    ];
    for (const [p, q, status, msg] of rows) expect(answer(await f.get(`/projects/${p}/builds`, q))).toEqual([status, { message: msg }]);
  });
});

describe('the fileUrl policy (network.allowPrivateUrls = false)', () => {
  it('refuses http, private, loopback, link-local, CGNAT, multicast, unique-local and mapped addresses', async () => {
    const a = await strict.account();
    const https = 'Invalid fileUrl: must point to a public address (private, loopback and link-local addresses are refused)';
    const cases: [string, string][] = [
      ['http://93.184.216.34/build.zip', 'Invalid fileUrl: must be an https URL'],
      ['file:///etc/passwd', 'Invalid fileUrl: must be an https URL'],
      ['not a url', 'Invalid fileUrl: must be an absolute URL'],
      ['https://user:pw@93.184.216.34/b.zip', 'Invalid fileUrl: must not carry credentials'],
      ['https://127.0.0.1/build.zip', https],
      ['https://2130706433/build.zip', https],
      ['https://localhost/build.zip', https],
      ['https://10.1.2.3/build.zip', https],
      ['https://172.16.0.1/build.zip', https],
      ['https://192.168.1.1/build.zip', https],
      ['https://169.254.169.254/latest/meta-data', https],
      ['https://100.64.0.1/build.zip', https],
      ['https://0.0.0.0/build.zip', https],
      ['https://224.0.0.1/build.zip', https],
      ['https://[::1]/build.zip', https],
      ['https://[fd00::1]/build.zip', https],
      ['https://[fe80::1]/build.zip', https],
      ['https://[::ffff:10.0.0.1]/build.zip', https],
      ['https://[::ffff:127.0.0.1]/build.zip', https],
      ['https://[64:ff9b::a9fe:a9fe]/build.zip', https],
    ];
    for (const [fileUrl, msg] of cases) expect([fileUrl, ...answer(await strict.post('/projects/upload-file', upload(a, { fileUrl })))]).toEqual([fileUrl, 400, { message: msg }]);
  });

  it('accepts an https URL on a public address (IP literal: no DNS, nothing is fetched at submit time)', async () => {
    const a = await strict.account();
    expect((await strict.post('/projects/upload-file', upload(a, { fileUrl: 'https://93.184.216.34/builds/game.zip?X-Amz-Signature=abc' }))).statusCode).toBe(201);
  });
});

describe('logs', () => {
  it('never log a key (full run of this file)', () => {
    expectNoKeysLogged(f);
    expectNoKeysLogged(strict);
  });
});
