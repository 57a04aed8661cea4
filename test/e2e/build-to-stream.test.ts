// From a customer's zip to frames in a browser, with nothing stood in: a Linux-packaged build
// (whose binary runs the mock Unreal app) is submitted by URL through the public API, goes through
// the pipeline, is distributed to a real agent that has no launcher.command, and the share page in
// Debian chromium decodes the stream of the app that agent launched from its build cache.
import { createReadStream, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { printAgentOutputOnFailure, startBundledAgent, type BundledAgent } from '../support/bundled-agent';
import { launchChromium } from '../support/chromium';
import { writeBuildZip } from '../support/build-zips';
import { buildCopies, buildRecord, liveUploadOf, setProjectSettings } from '../support/seed';

const root = resolve(import.meta.dirname, '../..');
let t: TestControlPlane;
let agent: BundledAgent;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let files: string;
let fileServer: Server;

printAgentOutputOnFailure();

beforeAll(async () => {
  browser = await launchChromium();
  t = await startTestControlPlane();
  // No launcher.command: the agent runs what the build holds.
  agent = await startBundledAgent(t);
  files = mkdtempSync(join(tmpdir(), 'pf-build-to-stream-'));
  // The packaged Linux binary of this build starts the mock Unreal app with the arguments it is given.
  const binary = `#!/bin/sh\nexec '${process.execPath}' '${join(root, 'test/mock-unreal/bin/mock-unreal.mjs')}' "$@"\n`;
  await writeBuildZip(files, 'linux', { fileName: 'customer-build.zip', linuxBinary: binary });
  fileServer = createServer((_req, res) => {
    const file = join(files, 'customer-build.zip');
    res.writeHead(200, { 'content-type': 'application/zip', 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((done) => fileServer.listen(0, '127.0.0.1', done));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((done) => (fileServer ? fileServer.close(() => done()) : done()));
  await agent?.stop();
  await t?.destroy();
  if (files) rmSync(files, { recursive: true, force: true });
});

describe('a customer build, end to end', () => {
  it('upload a Linux zip by URL → Approved → open the share page → frames decoded', async () => {
    const owner = await t.cp.accounts.createUser('customer@example.com');
    const projectId = (await t.cp.accounts.createProject(owner.userId, 'Customer', 'europe')).projectId;
    const apiKey = await t.cp.accounts.issueKey(owner.userId);
    setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000 });
    const fileUrl = `http://127.0.0.1:${(fileServer.address() as AddressInfo).port}/customer-build.zip`;
    const res = await t.cp.http.inject({
      method: 'POST',
      url: '/api/projects/upload-file',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ apiKey, userId: owner.userId, projectId, fileUrl, autoRelease: true }),
    });
    expect(res.statusCode).toBe(201);
    const { uploadId } = res.json<{ uploadId: string }>();
    const status = () => {
      const build = buildRecord(t.cp, uploadId);
      return { status: build.status, objection: build.objection ?? null };
    };
    await expect.poll(status, { timeout: 30_000 }).toEqual({ status: 'Approved', objection: null });
    // The agent reported its copy ready (its PrepareBuild ack), and the build sits in its cache.
    expect(buildCopies(t.cp, uploadId).map((c) => ({ workerId: c.workerId, phase: c.phase }))).toEqual([{ workerId: agent.workerId, phase: 'ready' }]);
    expect(readdirSync(join(agent.dataDir, 'builds', uploadId)).length).toBeGreaterThan(0);

    const page = await browser.context.newPage();
    await page.goto(`${t.started.publicUrls.share}/${projectId}`);
    await expect
      .poll(() => page.evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0), { timeout: 30_000 })
      .toBeGreaterThan(10);
    // The session ran the build from the agent's cache: it was placed on this worker, and the project's live build is this upload.
    expect(liveUploadOf(t.cp, projectId)).toBe(uploadId);
    const running = t.cp.sessions.list({ limit: 10 }).filter((s) => s.status === 'Running');
    expect(running.map((s) => s.assignedWorker)).toEqual([agent.workerId]);
    await page.close();
  });
});
