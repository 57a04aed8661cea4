// Restarts of the build pipeline with real processes: `pixelfleet serve` killed with SIGKILL (no
// graceful stop) mid-download, mid-extract and mid-distribution, then started again on the same
// data dir; and a `pixelfleet-agent run` killed mid-download. Each build ends where the pipeline
// promises (README: Build pipeline, Restarts), seen by a real local webhook receiver.
//
// What a restart re-sends: nothing. A stage's webhook fires once, when the build enters it; a build
// caught mid-stage resumes inside that stage (its status is already committed), so after the
// restart the receiver sees only the stages that follow, and the whole sequence has every stage
// exactly once, in order. Webhooks are never retried, so none is delivered twice.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildEntries, writeBuildZip } from '../support/build-zips';
import { writeZip } from '../support/zip-writer';
import { callApi, createAccount, killAll, startAgentProcess, startServe, type FleetProcess, type ProcessAccount, type ServeProcess } from '../support/fleet-processes';
import { listen, sendZip, type TestServer } from '../support/local-server';
import { WebhookReceiver } from '../support/webhook-receiver';

const MIB = 1024 * 1024;
/** What the held file server and the held archive proxy send before they stop sending. */
const HELD_BYTES = MIB;
const ALL_STAGES = ['build.uploaded pending', 'build.downloading Downloading Files', 'build.extracting Extracting & Scanning', 'build.saving Saving to Repository'];

let files: string;
let server: TestServer;
const receiver = new WebhookReceiver();
/** The Range header of every file request by path ('' for none), in order. */
const ranges = new Map<string, string[]>();
const held: ServerResponse[] = [];

/** Serves the files folder with Range; `/held/<file>` sends its first MiB and holds unless it is a Range request. */
function serveFiles(req: IncomingMessage, res: ServerResponse): void {
  if (receiver.handle(req, res)) return;
  const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  const hold = path.startsWith('/held/');
  const file = join(files, hold ? path.slice('/held/'.length) : path.slice(1));
  if (!existsSync(file)) return void res.writeHead(404).end();
  ranges.set(path, [...(ranges.get(path) ?? []), req.headers.range ?? '']);
  sendZip(req, res, file, hold ? HELD_BYTES : undefined);
  if (hold && req.headers.range === undefined) held.push(res);
}

/**
 * Agents reach the control plane's archive route through this proxy (`publicUrls.agents`): it
 * records each request's Range header, holds the next whole-archive download after its first MiB
 * when `holdNext` is set (cut when the control plane dies), and keeps requests waiting while no
 * control plane is up (cpOrigin undefined) instead of refusing them.
 */
let proxy: TestServer;
let cpOrigin: string | undefined;
let holdNext = false;
const archiveRanges: string[] = [];
const waitingForCp: (() => void)[] = [];
const heldByProxy: ServerResponse[] = [];

function proxyArchive(req: IncomingMessage, res: ServerResponse): void {
  archiveRanges.push(req.headers.range ?? '');
  if (cpOrigin === undefined) waitingForCp.push(() => forward(req, res, cpOrigin!));
  else forward(req, res, cpOrigin);
}

function forward(req: IncomingMessage, res: ServerResponse, origin: string): void {
  const hold = holdNext && req.headers.range === undefined;
  if (hold) holdNext = false;
  const up = httpRequest(`${origin}${req.url ?? '/'}`, { method: req.method, headers: req.headers, agent: false }, (upRes) => {
    res.writeHead(upRes.statusCode ?? 502, upRes.headers);
    if (!hold) {
      pipeline(upRes, res).catch(() => res.destroy());
      return;
    }
    let sent = 0;
    upRes.on('data', (c: Buffer) => {
      if (sent >= HELD_BYTES) return;
      const take = c.subarray(0, HELD_BYTES - sent);
      sent += take.length;
      res.write(take);
      if (sent >= HELD_BYTES) upRes.pause();
    });
    heldByProxy.push(res);
  });
  up.on('error', () => res.destroy());
  res.on('close', () => up.destroy());
  up.end();
}

/**
 * The proxy forwards to a (re)started control plane; requests that waited for it go now. Undefined:
 * the control plane is going down, and the held download is cut as its death would cut it.
 */
function proxyTo(origin: string | undefined): void {
  cpOrigin = origin;
  if (origin === undefined) for (const res of heldByProxy.splice(0)) res.destroy();
  if (origin !== undefined) for (const go of waitingForCp.splice(0)) go();
}

beforeAll(async () => {
  proxy = await listen(proxyArchive);
  files = mkdtempSync(join(tmpdir(), 'pf-restart-files-'));
  await writeBuildZip(files, 'linux', { fileName: 'linux.zip' });
  // A build whose scan takes long enough to be caught (seconds, not milliseconds): 30,000 small
  // files beside the app, each read and checked on its own, as a build's loose content is.
  const loose = Array.from({ length: 30_000 }, (_, i) => ({ name: `PixelDemo/Content/Movies/clip-${i}.bin`, data: `clip ${i}`, method: 'store' as const }));
  await writeZip(join(files, 'big.zip'), [...buildEntries('linux', { pakBytes: 1024 }), ...loose]);
  server = await listen(serveFiles);
});

afterAll(async () => {
  for (const r of held) r.destroy();
  await server.close();
  await proxy.close();
  rmSync(files, { recursive: true, force: true });
});

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  proxyTo(undefined);
  holdNext = false;
  archiveRanges.length = 0;
  for (const r of held.splice(0)) r.destroy();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-restart-'));
  dirs.push(d);
  return d;
}

/** A serve process with an account whose project sends its webhooks to the receiver. */
async function serveWithAccount(dir: string, email: string): Promise<{ cp: ServeProcess; a: ProcessAccount }> {
  const cp = await startServe({ dataDir: join(dir, 'cp'), configDir: dir, config: { publicUrls: { agents: proxy.origin } } });
  proxyTo(cp.httpOrigin);
  const a = await createAccount(cp.grpcAddress, email);
  const res = await callApi(cp.httpOrigin, 'PATCH', `/projects/${a.projectId}/settings`, { apiKey: a.apiKey, userId: a.userId, webhookUrl: `${server.origin}/hook` });
  expect(res.status).toBe(200);
  return { cp, a };
}

async function upload(cp: ServeProcess, a: ProcessAccount, fileUrl: string, autoRelease: boolean): Promise<string> {
  const res = await callApi(cp.httpOrigin, 'POST', '/projects/upload-file', { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, fileUrl, autoRelease });
  expect(res.status).toBe(201);
  return (res.body as { uploadId: string }).uploadId;
}

/** The build as the public API lists it. */
async function buildOf(cp: ServeProcess, a: ProcessAccount, uploadId: string): Promise<{ status: string; objection: string | null; live: boolean } | undefined> {
  const res = await callApi(cp.httpOrigin, 'GET', `/projects/${a.projectId}/builds?userId=${a.userId}&apikey=${a.apiKey}`);
  expect(res.status).toBe(200);
  return (res.body as { builds: { uploadId: string; status: string; objection: string | null; live: boolean }[] }).builds.find((b) => b.uploadId === uploadId);
}

const sizeOf = (path: string) => (existsSync(path) ? statSync(path).size : 0);

describe('pixelfleet serve killed (SIGKILL) and started again on the same data dir', () => {
  it('mid-download: the download resumes with Range and the build reaches Ready; no stage is sent twice', async () => {
    const dir = tempDir();
    const { cp, a } = await serveWithAccount(dir, 'mid-download@example.com');
    const uploadId = await upload(cp, a, `${server.origin}/held/linux.zip`, false);
    const part = join(dir, 'cp', 'pipeline', `${uploadId}.zip.part`);
    await receiver.until(uploadId, 'build.downloading');
    await expect.poll(() => sizeOf(part), { timeout: 20_000 }).toBe(HELD_BYTES);
    await cp.kill();
    expect(sizeOf(part)).toBe(HELD_BYTES);
    expect(receiver.stages(uploadId)).toEqual(ALL_STAGES.slice(0, 2));

    const again = await startServe({ dataDir: join(dir, 'cp'), configDir: dir });
    await receiver.until(uploadId, 'build.ready');
    // The resumed download asked for the rest only.
    expect(ranges.get('/held/linux.zip')).toEqual(['', `bytes=${HELD_BYTES}-`]);
    expect(receiver.stages(uploadId)).toEqual([...ALL_STAGES, 'build.ready Ready']);
    expect(await buildOf(again, a, uploadId)).toMatchObject({ status: 'Ready', objection: null });
    expect(readdirSync(join(dir, 'cp', 'pipeline'))).toEqual([]);
  });

  it('mid-scan: the build is scanned again from its downloaded archive and reaches Ready; the work dir ends empty', async () => {
    const dir = tempDir();
    const { cp, a } = await serveWithAccount(dir, 'mid-extract@example.com');
    const uploadId = await upload(cp, a, `${server.origin}/big.zip`, false);
    const work = join(dir, 'cp', 'pipeline');
    // Killed as soon as the scan has begun: it reads and checks 30,000 entries, seconds of work.
    await receiver.until(uploadId, 'build.extracting');
    await cp.kill();
    // Caught mid-scan: the archive is there, nothing was saved (a Saving webhook would have
    // been committed and sent before the save).
    expect(readdirSync(work)).toEqual([`${uploadId}.zip`]);
    expect(receiver.stages(uploadId)).toEqual(ALL_STAGES.slice(0, 3));

    const again = await startServe({ dataDir: join(dir, 'cp'), configDir: dir });
    await receiver.until(uploadId, 'build.ready');
    expect(receiver.stages(uploadId)).toEqual([...ALL_STAGES, 'build.ready Ready']);
    expect(await buildOf(again, a, uploadId)).toMatchObject({ status: 'Ready', objection: null });
    // Downloaded once: the rescan used the archive already on disk.
    expect(ranges.get('/big.zip')).toEqual(['']);
    expect(readdirSync(work)).toEqual([]);
  });
});

describe('distribution: processes killed mid-download of the archive', () => {
  const DISTRIBUTED = [...ALL_STAGES, 'build.distributing Distributing to Servers', 'build.approved Approved'];
  const agentOf = (dir: string, grpcAddress: string): Promise<FleetProcess> => startAgentProcess({ grpcAddress, dataDir: join(dir, 'agent'), configDir: dir, hostname: 'gpu-a' });

  it('pixelfleet serve killed while an agent copies the build: after the restart the agent resumes with Range and the build is Approved and live', async () => {
    const dir = tempDir();
    const { cp, a } = await serveWithAccount(dir, 'mid-distribution@example.com');
    await agentOf(dir, cp.grpcAddress);
    holdNext = true;
    const uploadId = await upload(cp, a, `${server.origin}/linux.zip`, true);
    const part = join(dir, 'agent', 'builds', `${uploadId}.zip.part`);
    await receiver.until(uploadId, 'build.distributing');
    await expect.poll(() => sizeOf(part), { timeout: 20_000 }).toBe(HELD_BYTES);
    await cp.kill();
    proxyTo(undefined);

    const again = await startServe({ dataDir: join(dir, 'cp'), configDir: dir, grpcPort: Number(cp.grpcAddress.split(':')[1]), config: { publicUrls: { agents: proxy.origin } } });
    proxyTo(again.httpOrigin);
    await receiver.until(uploadId, 'build.approved');
    expect(receiver.stages(uploadId)).toEqual(DISTRIBUTED);
    // The cut download, then its resume (the retry waited for the control plane to be back).
    expect(archiveRanges).toEqual(['', `bytes=${HELD_BYTES}-`]);
    expect(await buildOf(again, a, uploadId)).toMatchObject({ status: 'Approved', objection: null, live: true });
    expect(existsSync(join(dir, 'agent', 'builds', uploadId, 'PixelDemo/Binaries/Linux/PixelDemo-Linux-Shipping'))).toBe(true);
  });

  it('pixelfleet-agent killed mid-download: started again on its data dir, it resumes with Range and the build is Approved', async () => {
    const dir = tempDir();
    const { cp, a } = await serveWithAccount(dir, 'agent-killed@example.com');
    const first = await agentOf(dir, cp.grpcAddress);
    holdNext = true;
    const uploadId = await upload(cp, a, `${server.origin}/linux.zip`, true);
    const part = join(dir, 'agent', 'builds', `${uploadId}.zip.part`);
    await expect.poll(() => sizeOf(part), { timeout: 20_000 }).toBe(HELD_BYTES);
    await first.kill();
    expect(sizeOf(part)).toBe(HELD_BYTES);

    await agentOf(dir, cp.grpcAddress);
    await receiver.until(uploadId, 'build.approved');
    expect(receiver.stages(uploadId)).toEqual(DISTRIBUTED);
    expect(archiveRanges).toEqual(['', `bytes=${HELD_BYTES}-`]);
    expect(await buildOf(cp, a, uploadId)).toMatchObject({ status: 'Approved', objection: null, live: true });
  });
});
