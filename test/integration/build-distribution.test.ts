// Distribution with real parts: a build submitted by URL goes through the pipeline, and real
// agents (real gRPC, real build caches) download its archive from the control plane's signed link,
// verify and extract it; the build is Approved and live once they have it. Failures are named; a
// worker offline at the time catches up when it connects; placement waits for a worker holding
// the live build.
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CommandFailure, type Agent, type CommandHandlers } from '@pixelfleet/agent';
import { ManualClock } from '@pixelfleet/common';
import { writeBuildZip } from '../support/build-zips';
import { startApiFixture, type Account, type ApiFixture } from '../api/api-fixture';
import { linkReaches, startTestAgent } from '../support/agent';
import { FakePlayer } from '../support/fake-player';
import { buildCopies, buildRecord, logFilesOf } from '../support/seed';

let files: string;
let fileServer: Server;
let fileOrigin: string;

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'pf-distribution-files-'));
  await writeBuildZip(files, 'linux', { fileName: 'linux.zip' });
  fileServer = createServer((req, res) => {
    const file = join(files, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1));
    if (!existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/zip', 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => fileServer.listen(0, '127.0.0.1', resolve));
  fileOrigin = `http://127.0.0.1:${(fileServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => fileServer.close(() => resolve()));
  rmSync(files, { recursive: true, force: true });
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fixture(clock?: ManualClock): Promise<{ f: ApiFixture; a: Account }> {
  const f = await startApiFixture(clock ? { clock } : {});
  cleanups.push(() => f.close());
  return { f, a: await f.account() };
}

async function agent(f: ApiFixture, options: { handlers?: CommandHandlers; dataDir?: string; slots?: number } = {}): Promise<{ agent: Agent; dataDir: string }> {
  const started = await startTestAgent({ grpcAddress: f.t.started.grpcAddress, ...options });
  cleanups.push(() => started.agent.close());
  await linkReaches(started.agent, 'connected');
  return started;
}

async function upload(f: ApiFixture, a: Account, autoRelease: boolean): Promise<string> {
  const res = await f.post('/projects/upload-file', { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, fileUrl: `${fileOrigin}/linux.zip`, autoRelease });
  expect(res.statusCode).toBe(201);
  return res.json<{ uploadId: string }>().uploadId;
}

/** The build's status, objection (`null`: none) and whether it is the project's live build. */
const build = (f: ApiFixture, uploadId: string) => {
  const b = buildRecord(f.t.cp, uploadId);
  return { status: b.status, objection: b.objection ?? null, live: b.live };
};

/** The build's copies by worker id: each one's phase and error (`null`: none). */
const copies = (f: ApiFixture, uploadId: string) => buildCopies(f.t.cp, uploadId).map((c) => ({ workerId: c.workerId, phase: c.phase, error: c.error ?? null }));

describe('distribution to the region\'s workers', () => {
  it('autoRelease: two real agents download, verify and extract the archive; the build is Approved and live', async () => {
    const { f, a } = await fixture();
    const one = await agent(f);
    const two = await agent(f);
    const uploadId = await upload(f, a, true);
    await expect.poll(() => build(f, uploadId), { timeout: 20_000 }).toEqual({ status: 'Approved', objection: null, live: true });
    expect(copies(f, uploadId).map((c) => c.phase)).toEqual(['ready', 'ready']);
    for (const w of [one, two]) {
      const cached = w.agent.builds.list();
      expect(cached).toEqual([expect.objectContaining({ uploadId, ready: true })]);
      expect(existsSync(join(w.dataDir, 'builds', uploadId, 'PixelDemo/Binaries/Linux/PixelDemo-Linux-Shipping'))).toBe(true);
    }
  });

  it('one worker failing is named but does not stop the build; all failing → Reject naming each', async () => {
    const { f, a } = await fixture();
    const failing: CommandHandlers = {
      startSession: () => Promise.resolve(),
      stopSession: () => Promise.resolve(),
      prepareBuild: () => Promise.reject(new CommandFailure('DISK_FULL', 'no room for the build')),
      deleteBuild: () => Promise.resolve(),
    };
    await agent(f, { handlers: failing });
    await agent(f);
    const ok = await upload(f, a, true);
    await expect.poll(() => build(f, ok).status, { timeout: 20_000 }).toBe('Approved');
    expect(copies(f, ok).map((c) => c.phase).sort()).toEqual(['failed', 'ready']);
    expect(copies(f, ok).find((c) => c.phase === 'failed')?.error).toBe('DISK_FULL: no room for the build');

    const { f: g, a: b } = await fixture();
    await agent(g, { handlers: failing });
    await agent(g, { handlers: failing });
    const rejected = await upload(g, b, true);
    await expect.poll(() => build(g, rejected).status, { timeout: 20_000 }).toBe('Reject');
    expect(build(g, rejected).objection).toBe('the copy to every streaming server failed: test-worker (DISK_FULL: no room for the build), test-worker (DISK_FULL: no room for the build)');
  });

  it('a worker offline during the distribution catches up with the live build when it connects', async () => {
    const { f, a } = await fixture();
    const online = await agent(f);
    const offline = await agent(f);
    await offline.agent.close();
    const uploadId = await upload(f, a, true);
    await expect.poll(() => build(f, uploadId).status, { timeout: 20_000 }).toBe('Approved');
    expect(copies(f, uploadId)).toEqual([{ workerId: online.agent.workerId, phase: 'ready', error: null }]);

    const back = await agent(f, { dataDir: offline.dataDir });
    await expect.poll(() => copies(f, uploadId).find((c) => c.workerId === back.agent.workerId)?.phase, { timeout: 20_000 }).toBe('ready');
    expect(back.agent.builds.list()).toEqual([expect.objectContaining({ uploadId, ready: true })]);
  });

  it('a drained worker gets no builds, at distribution or on its Hello, and catches up when undrained', async () => {
    const { f, a } = await fixture();
    await agent(f);
    const drained = await agent(f);
    f.t.cp.registry.drain(drained.agent.workerId);
    const uploadId = await upload(f, a, true);
    await expect.poll(() => build(f, uploadId).status, { timeout: 20_000 }).toBe('Approved');
    // It reconnects while drained: its Hello brings nothing.
    await drained.agent.close();
    const back = await agent(f, { dataDir: drained.dataDir });
    await expect.poll(() => f.t.cp.registry.get(back.agent.workerId).link).toBe('connected');
    expect(copies(f, uploadId).map((c) => c.workerId)).not.toContain(back.agent.workerId);
    expect(back.agent.builds.list()).toEqual([]);

    f.t.cp.registry.undrain(back.agent.workerId);
    await expect.poll(() => copies(f, uploadId).find((c) => c.workerId === back.agent.workerId)?.phase, { timeout: 20_000 }).toBe('ready');
  });

  it("a worker's claim to hold a build it was never sent is not believed: it is sent the build, and its copy stays 'sent' (not ready, so no session of it goes there) until it says otherwise", async () => {
    const { f, a } = await fixture();
    await agent(f);
    const uploadId = await upload(f, a, true);
    await expect.poll(() => build(f, uploadId).status, { timeout: 20_000 }).toBe('Approved');
    const never: CommandHandlers = {
      startSession: () => Promise.resolve(),
      stopSession: () => Promise.resolve(),
      prepareBuild: () => new Promise<void>(() => undefined),
      deleteBuild: () => Promise.resolve(),
    };
    const claimant = await startTestAgent({
      grpcAddress: f.t.started.grpcAddress,
      handlers: never,
      inventory: { runningSessions: () => [], cachedBuilds: () => [{ uploadId, sha256: '0'.repeat(64), ready: true }] },
    });
    cleanups.push(() => claimant.agent.close());
    await linkReaches(claimant.agent, 'connected');
    await expect.poll(() => copies(f, uploadId).find((c) => c.workerId === claimant.agent.workerId)?.phase).toBe('sent');
  });

  it('placement picks only a worker holding the live build', async () => {
    const { f, a } = await fixture();
    const holder = await agent(f);
    const uploadId = await upload(f, a, true);
    await expect.poll(() => build(f, uploadId).status, { timeout: 20_000 }).toBe('Approved');
    // A second worker joins with a PrepareBuild it never finishes: it must not get the session.
    const stuck: CommandHandlers = {
      startSession: () => Promise.resolve(),
      stopSession: () => Promise.resolve(),
      prepareBuild: () => new Promise<void>(() => undefined),
      deleteBuild: () => Promise.resolve(),
    };
    const late = await agent(f, { handlers: stuck, slots: 4 });
    await expect.poll(() => copies(f, uploadId).find((c) => c.workerId === late.agent.workerId)?.phase).toBe('sent');
    expect(f.t.cp.registry.placeable('europe').map((w) => w.workerId).sort()).toEqual([holder.agent.workerId, late.agent.workerId].sort());
    // A viewer joins through the share page's socket; the session goes to the worker holding the build,
    // though the other has more free slots (placement's first preference without the build check).
    const player = await FakePlayer.connect(`${f.t.started.publicUrls.share.replace(/^http/, 'ws')}/${a.projectId}/signalling`);
    cleanups.push(() => Promise.resolve(player.close()));
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => f.t.cp.sessions.get(sessionId).assignedWorker).toBe(holder.agent.workerId);
    // The holder has no launcher.command: it runs the cached build's own Linux binary (here a script
    // that prints its arguments and exits) with the Unreal command line. Its captured output is the
    // session's log once it exits: read back from what the control plane stored.
    const stored = () => logFilesOf(f.t.cp, sessionId).find((r) => r.fileName === 'app-output.log');
    await expect.poll(stored, { timeout: 20_000 }).toBeDefined();
    const gz: Buffer[] = [];
    for await (const chunk of await f.t.cp.blobs.read(stored()!.blobSha256)) gz.push(chunk as Buffer);
    expect(gunzipSync(Buffer.concat(gz)).toString()).toMatch(/^launched with: PixelDemo -PixelStreamingConnectionURL=(ws:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{43}) -PixelStreamingURL=\1 -PixelStreamingID=/m);
  });

  it('activating a local build (no archive: each agent\'s launcher.command) approves it at once', async () => {
    const { f, a } = await fixture();
    const uploadId = await f.t.cp.registerLocalBuild(a.projectId);
    const res = await f.post('/projects/distribute-file', { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, uploadId });
    expect(res.statusCode).toBe(200);
    expect(build(f, uploadId)).toEqual({ status: 'Approved', objection: null, live: true });
    expect(copies(f, uploadId)).toEqual([]);
  });

  it('the deadline settles a distribution with nothing ready: Reject, naming the worker', async () => {
    const clock = new ManualClock();
    const { f, a } = await fixture(clock);
    const stuck: CommandHandlers = {
      startSession: () => Promise.resolve(),
      stopSession: () => Promise.resolve(),
      prepareBuild: () => new Promise<void>(() => undefined),
      deleteBuild: () => Promise.resolve(),
    };
    const w = await agent(f, { handlers: stuck });
    const uploadId = await upload(f, a, true);
    await expect.poll(() => copies(f, uploadId).map((c) => c.phase), { timeout: 20_000 }).toEqual(['sent']);
    clock.advance(2 * 3600 * 1000);
    await expect.poll(() => build(f, uploadId).status).toBe('Reject');
    expect(build(f, uploadId).objection).toBe('no streaming server had the build ready within 120 minutes: test-worker (not ready in time)');
    expect(w.agent.workerId).toBeDefined();
  });
});
