// Releasing builds with real parts (the app, real agents, a real local webhook receiver):
// autoRelease false stops at Ready and nothing is copied until distribute-file; a rollback is
// set-active-build of an older build, which the workers still hold; a build call inside the
// caller's build-call window is refused 429 and fires nothing.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Agent } from '@pixelfleet/agent';
import { writeBuildZip } from '../support/build-zips';
import { startApiFixture, type ApiFixture } from '../api/api-fixture';
import { linkReaches, startTestAgent } from '../support/agent';
import { listen, sendZip, type TestServer } from '../support/local-server';
import { WebhookReceiver } from '../support/webhook-receiver';
import { liveUploadOf } from '../support/seed';

let files: string;
let server: TestServer;
const receiver = new WebhookReceiver();
/** The files the server was asked for, in order. */
const fetched: string[] = [];

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'pf-release-files-'));
  await writeBuildZip(files, 'linux', { fileName: 'v1.zip' });
  await writeBuildZip(files, 'linux', { fileName: 'v2.zip', projectName: 'PixelDemoTwo' });
  server = await listen((req, res) => {
    if (receiver.handle(req, res)) return;
    fetched.push(req.url ?? '');
    const file = join(files, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1));
    if (!existsSync(file)) return void res.writeHead(404).end();
    sendZip(req, res, file);
  });
});

afterAll(async () => {
  await server.close();
  rmSync(files, { recursive: true, force: true });
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Team {
  f: ApiFixture;
  projectId: string;
  /** Members with FULL access, each with a key: each build call uses its own build-call window. */
  members: { userId: string; apiKey: string }[];
  agent: Agent;
}

/** A project whose webhooks go to the receiver, three FULL members, and one real agent in its region. */
async function team(): Promise<Team> {
  const f = await startApiFixture();
  cleanups.push(() => f.close());
  const owner = await f.account();
  const members = [owner, await f.user(), await f.user()];
  for (const m of members.slice(1)) await f.t.cp.accounts.addMember(owner.projectId, m.userId, 'FULL');
  const res = await f.patch(`/projects/${owner.projectId}/settings`, { apiKey: owner.apiKey, userId: owner.userId, webhookUrl: `${server.origin}/hook` });
  expect(res.statusCode).toBe(200);
  const { agent } = await startTestAgent({ grpcAddress: f.t.started.grpcAddress });
  cleanups.push(() => agent.close());
  await linkReaches(agent, 'connected');
  return { f, projectId: owner.projectId, members, agent };
}

async function call(t: Team, member: number, route: 'upload-file' | 'distribute-file' | 'set-active-build', body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const m = t.members[member]!;
  const res = await t.f.post(`/projects/${route}`, { apiKey: m.apiKey, userId: m.userId, projectId: t.projectId, ...body });
  return { status: res.statusCode, body: res.json<Record<string, unknown>>() };
}

async function uploadOf(t: Team, member: number, file: string, autoRelease: boolean): Promise<string> {
  const res = await call(t, member, 'upload-file', { fileUrl: `${server.origin}/${file}`, autoRelease });
  expect(res.status).toBe(201);
  return res.body.uploadId as string;
}

const liveUpload = (t: Team) => liveUploadOf(t.f.t.cp, t.projectId) ?? null;
const archiveDownloads = (t: Team, uploadId: string) => t.f.t.logs.lines.filter((l) => l.includes('"msg":"archive download"') && l.includes(`"uploadId":"${uploadId}"`)).length;

const PROCESSED = ['build.uploaded pending', 'build.downloading Downloading Files', 'build.extracting Extracting & Scanning', 'build.saving Saving to Repository'];

describe('releasing a build', () => {
  it('autoRelease false: Ready and nothing copied; distribute-file copies it to the worker, Approved and live; the exact webhook sequence', async () => {
    const t = await team();
    const uploadId = await uploadOf(t, 0, 'v1.zip', false);
    await receiver.until(uploadId, 'build.ready');
    await t.f.t.cp.builds.pipeline?.idle();
    expect(t.agent.builds.list()).toEqual([]);
    expect(liveUpload(t)).toBeNull();

    expect(await call(t, 1, 'distribute-file', { uploadId })).toEqual({ status: 200, body: { uploadId, status: 'Distributing to Servers' } });
    await receiver.until(uploadId, 'build.approved');
    expect(receiver.stages(uploadId)).toEqual([...PROCESSED, 'build.ready Ready', 'build.distributing Distributing to Servers', 'build.approved Approved']);
    expect(liveUpload(t)).toBe(uploadId);
    expect(t.agent.builds.list()).toEqual([expect.objectContaining({ uploadId, ready: true })]);
  });

  it('a rollback (set-active-build of the older build) makes it live again from the copy the worker still holds', async () => {
    const t = await team();
    const v1 = await uploadOf(t, 0, 'v1.zip', true);
    await receiver.until(v1, 'build.approved');
    const v2 = await uploadOf(t, 1, 'v2.zip', true);
    await receiver.until(v2, 'build.approved');
    expect(liveUpload(t)).toBe(v2);
    expect(archiveDownloads(t, v1)).toBe(1);

    expect(await call(t, 2, 'set-active-build', { uploadId: v1 })).toEqual({ status: 200, body: { uploadId: v1, status: 'Distributing to Servers' } });
    await receiver.until(v1, 'build.approved', { count: 2 });
    // The v1 sequence goes on from Approved: distributing again, then Approved again.
    expect(receiver.stages(v1)).toEqual([...PROCESSED, 'build.distributing Distributing to Servers', 'build.approved Approved', 'build.distributing Distributing to Servers', 'build.approved Approved']);
    expect(liveUpload(t)).toBe(v1);
    // The worker still held v1 (its cache keeps the live and the previous build): nothing was downloaded again.
    expect(archiveDownloads(t, v1)).toBe(1);
    expect(t.agent.builds.list().map((b) => [b.uploadId, b.ready]).sort()).toEqual([[v1, true], [v2, true]].sort());
    expect(receiver.stages(v2)).toEqual([...PROCESSED, 'build.distributing Distributing to Servers', 'build.approved Approved']);
  });

  it('a second build call inside the caller\'s window is refused 429 and fires nothing; another member\'s call goes through', async () => {
    const t = await team();
    const uploadId = await uploadOf(t, 0, 'v1.zip', false);
    await receiver.until(uploadId, 'build.ready');
    const refused = await call(t, 0, 'distribute-file', { uploadId });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: expect.stringMatching(/^Rate limit exceeded. Try again in /) as string });
    expect(await call(t, 0, 'upload-file', { fileUrl: `${server.origin}/v2.zip?call=refused`, autoRelease: true })).toMatchObject({ status: 429 });
    // Nothing moved: the build waits in Ready, no further webhook, the second file was never fetched.
    expect(receiver.stages(uploadId)).toEqual([...PROCESSED, 'build.ready Ready']);
    expect(fetched).not.toContain('/v2.zip?call=refused');
    expect(await call(t, 1, 'distribute-file', { uploadId })).toEqual({ status: 200, body: { uploadId, status: 'Distributing to Servers' } });
    await receiver.until(uploadId, 'build.approved');
  });
});
