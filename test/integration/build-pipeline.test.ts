// The build pipeline on a real control plane: upload-file with a real key → download from a real
// local HTTP server → extract & scan (real zips, hostile ones too) → the blob store → Ready or
// Distributing to Servers, with every stage seen by a real local webhook receiver in stage order.
// Restarts: a build caught mid-pipeline resumes, or ends with an objection saying why.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostileZips, writeBuildZip } from '../support/build-zips';
import { sendZip } from '../support/local-server';
import { startApiFixture, type Account, type ApiFixture } from '../api/api-fixture';
import { runAdminCli } from '@pixelfleet/control-plane';
import type { BuildStatus } from '@pixelfleet/control-plane/test-support';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane, TEST_ADMIN_TOKEN } from '../support/control-plane';
import { buildRecord, recordBuildArchive, seedBuild, setProjectWebhook } from '../support/seed';

interface Delivery {
  event: string;
  uploadId: string | null;
  status: string;
  objection: string | null;
}

const SLOW_TOTAL = 64 * 1024 * 1024;
const slowResponses: ServerResponse[] = [];
/** The Range header of every static file request, in order ('' for none). */
const rangeRequests: string[] = [];
const moreSlowBytes = () => {
  for (const res of slowResponses) res.write(Buffer.alloc(1024 * 1024));
};
let files: string;
let fileServer: Server;
let fileOrigin: string;
let receiver: Server;
let receiverUrl: string;
const deliveries: Delivery[] = [];
const waiters: (() => void)[] = [];

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'pf-pipeline-files-'));
  // Serves the files folder; `/status/<code>` answers that status; `/page.html` is an HTML page.
  fileServer = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const status = /^\/status\/(\d{3})$/.exec(path);
    if (status) {
      res.writeHead(Number(status[1])).end();
      return;
    }
    if (path === '/slow.zip') {
      // A zip header and 1 MiB, then a further MiB each time a test calls moreSlowBytes(); never ends.
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': String(SLOW_TOTAL) });
      res.write(Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(1024 * 1024 - 4)]));
      slowResponses.push(res);
      return;
    }
    if (path === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body>Sign in to download</body></html>');
      return;
    }
    const held = /^\/held\/(.+)$/.exec(path);
    const file = join(files, held ? held[1]! : path.slice(1));
    if (!existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    rangeRequests.push(req.headers.range ?? '');
    // `/held/<file>`: the first MiB, then nothing until the test lets go (it drops the connection).
    sendZip(req, res, file, held ? 1024 * 1024 : undefined);
    if (held && req.headers.range === undefined) slowResponses.push(res);
  });
  await new Promise<void>((resolve) => fileServer.listen(0, '127.0.0.1', resolve));
  fileOrigin = `http://127.0.0.1:${(fileServer.address() as AddressInfo).port}`;
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const e = JSON.parse(body) as Delivery;
      deliveries.push({ event: e.event, uploadId: e.uploadId, status: e.status, objection: e.objection });
      res.writeHead(204).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  for (const res of slowResponses) res.destroy();
  await new Promise<void>((resolve) => fileServer.close(() => resolve()));
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  rmSync(files, { recursive: true, force: true });
});

const fixtures: ApiFixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.close();
});

async function fixture(): Promise<{ f: ApiFixture; a: Account }> {
  const f = await startApiFixture();
  fixtures.push(f);
  const a = await f.account();
  const res = await f.patch(`/projects/${a.projectId}/settings`, { apiKey: a.apiKey, userId: a.userId, webhookUrl: receiverUrl });
  expect(res.statusCode).toBe(200);
  return { f, a };
}

async function upload(f: ApiFixture, a: Account, fileUrl: string, autoRelease: boolean): Promise<string> {
  const res = await f.post('/projects/upload-file', { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, fileUrl, autoRelease });
  expect(res.statusCode).toBe(201);
  return res.json<{ uploadId: string }>().uploadId;
}

const TERMINAL_EVENTS = new Set(['build.ready', 'build.distributing', 'build.rejected', 'build.approved']);

/** The webhook deliveries of a build, once its last one (a stopping stage) has arrived. */
async function deliveriesOf(uploadId: string): Promise<Delivery[]> {
  for (;;) {
    const mine = deliveries.filter((d) => d.uploadId === uploadId);
    if (mine.some((d) => TERMINAL_EVENTS.has(d.event))) return mine;
    await new Promise<void>((resolve) => waiters.push(resolve));
  }
}

const stages = (ds: Delivery[]) => ds.map((d) => `${d.event} ${d.status}`);
const blobPathOf = (dataDir: string, sha256: string) => join(dataDir, 'blobs', 'sha256', sha256.slice(0, 2), sha256);

describe('a valid build', () => {
  it('autoRelease false: pending → Downloading → Extracting & Scanning → Saving → Ready, every stage a webhook in order; the archive is in the blob store with its manifest', async () => {
    const { f, a } = await fixture();
    await writeBuildZip(files, 'linux', { fileName: 'linux-ready.zip' });
    const uploadId = await upload(f, a, `${fileOrigin}/linux-ready.zip`, false);
    expect(stages(await deliveriesOf(uploadId))).toEqual([
      'build.uploaded pending',
      'build.downloading Downloading Files',
      'build.extracting Extracting & Scanning',
      'build.saving Saving to Repository',
      'build.ready Ready',
    ]);
    const build = buildRecord(f.t.cp, uploadId);
    expect(build.status).toBe('Ready');
    expect(build.manifest).toMatchObject({ platform: 'linux', projectName: 'PixelDemo', executable: 'PixelDemo/Binaries/Linux/PixelDemo-Linux-Shipping' });
    expect(build.archive?.bytes).toBe(statSync(join(files, 'linux-ready.zip')).size);
    expect(existsSync(blobPathOf(f.t.dataDir, build.archive!.sha256))).toBe(true);
    // Nothing is left in the work folder.
    await f.t.cp.builds.pipeline?.idle();
    expect(readdirSync(join(f.t.dataDir, 'pipeline'))).toEqual([]);
  });

  it('autoRelease true goes on to Distributing to Servers; the same archive submitted twice is stored once', async () => {
    const { f, a } = await fixture();
    await writeBuildZip(files, 'windows-shipping', { fileName: 'win-auto.zip' });
    const first = await upload(f, a, `${fileOrigin}/win-auto.zip`, true);
    expect(stages(await deliveriesOf(first)).at(-1)).toBe('build.distributing Distributing to Servers');
    await f.t.cp.builds.pipeline?.idle();
    const b = await f.account();
    await f.patch(`/projects/${b.projectId}/settings`, { apiKey: b.apiKey, userId: b.userId, webhookUrl: receiverUrl });
    const second = await upload(f, b, `${fileOrigin}/win-auto.zip`, false);
    expect(stages(await deliveriesOf(second)).at(-1)).toBe('build.ready Ready');
    const shas = [first, second].map((uploadId) => buildRecord(f.t.cp, uploadId).archive?.sha256);
    expect(new Set(shas).size).toBe(1);
    expect(shas[0]).toEqual(expect.any(String));
    const blobDir = join(f.t.dataDir, 'blobs', 'sha256', shas[0]!.slice(0, 2));
    expect(readdirSync(blobDir).filter((n) => n === shas[0])).toHaveLength(1);
  });
});

describe('progress', () => {
  it('a build being downloaded shows bytes, size, rate and time left in `pixelfleet admin builds`', async () => {
    const clock = new ManualClock();
    const f = await startApiFixture({ clock });
    fixtures.push(f);
    const a = await f.account();
    const uploadId = await upload(f, a, `${fileOrigin}/slow.zip`, false);
    await expect.poll(() => f.t.cp.builds.pipeline?.progressOf(uploadId)).toMatchObject({ status: 'Downloading Files', bytes: 0 });
    // Five seconds on the clock, then the next bytes arrive: the download reports them.
    clock.advance(5_000);
    moreSlowBytes();
    await expect.poll(() => f.t.cp.builds.pipeline?.progressOf(uploadId)?.bytes ?? 0).toBeGreaterThan(1024 * 1024);
    const p = f.t.cp.builds.pipeline!.progressOf(uploadId)!;
    const rate = Math.round(p.bytes / 5);
    expect(p).toMatchObject({ totalBytes: SLOW_TOTAL, bytesPerSecond: rate, etaSeconds: Math.ceil((SLOW_TOTAL - p.bytes) / rate) });
    const env = { PIXELFLEET_ADMIN_SERVER: f.t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN };
    let out = '';
    const io = { env, stdout: (t: string) => (out += t), stderr: (t: string) => (out += t) };
    expect(await runAdminCli(['builds', '--project', a.projectId, '--json'], io)).toBe(0);
    const [listed] = (JSON.parse(out) as { builds: { uploadId: string; status: string; progress: unknown }[] }).builds;
    expect(listed).toMatchObject({ uploadId, status: 'Downloading Files', progress: { bytes: p.bytes, totalBytes: SLOW_TOTAL, bytesPerSecond: rate, etaSeconds: p.etaSeconds } });
    out = '';
    expect(await runAdminCli(['builds', '--project', a.projectId], io)).toBe(0);
    expect(out).toContain(`${uploadId}  Downloading Files  1 / 64 MiB, ${(rate / (1024 * 1024)).toFixed(1)} MiB/s, ${p.etaSeconds} s left`);
  });
});

describe('bad input ends the build with a clear objection and leaves nothing behind', () => {
  const archiveCases = hostileZips().filter((h) => h.name === 'zip-slip' || h.name === 'no-exe' || h.name === 'symlink' || h.name === 'crc-mismatch' || h.name === 'zip-bomb');

  it.each(archiveCases.map((h) => [h.name, h] as const))('%s → Reject with its objection', async (_name, h) => {
    const { f, a } = await fixture();
    const path = await h.write(files);
    const uploadId = await upload(f, a, `${fileOrigin}/${path.slice(files.length + 1)}`, true);
    const ds = await deliveriesOf(uploadId);
    expect(stages(ds)).toEqual([
      'build.uploaded pending',
      'build.downloading Downloading Files',
      'build.extracting Extracting & Scanning',
      'build.rejected Reject',
    ]);
    expect(ds.at(-1)?.objection).toBe(h.objection);
    await f.t.cp.builds.pipeline?.idle();
    expect(readdirSync(join(f.t.dataDir, 'pipeline'))).toEqual([]);
  });

  it('a URL that serves an HTML page → Reject as it downloads, naming it', async () => {
    const { f, a } = await fixture();
    const uploadId = await upload(f, a, `${fileOrigin}/page.html`, true);
    const ds = await deliveriesOf(uploadId);
    expect(stages(ds)).toEqual(['build.uploaded pending', 'build.downloading Downloading Files', 'build.rejected Reject']);
    expect(ds.at(-1)?.objection).toMatch(/HTML page/);
  });

  it('an expired link (403) → Download Failed without retries', async () => {
    const { f, a } = await fixture();
    const uploadId = await upload(f, a, `${fileOrigin}/status/403`, true);
    const ds = await deliveriesOf(uploadId);
    expect(stages(ds)).toEqual(['build.uploaded pending', 'build.downloading Downloading Files', 'build.rejected Download Failed']);
    expect(ds.at(-1)?.objection).toMatch(/403/);
  });
});

describe('restarts', () => {
  it('a control plane stopped mid-download resumes the download with Range at its next start', async () => {
    const first = await startTestControlPlane();
    const u = await first.cp.accounts.createUser(`held-${process.pid}@example.com`);
    const p = await first.cp.accounts.createProject(u.userId, 'Held', 'europe');
    setProjectWebhook(first.cp, p.projectId, receiverUrl);
    const zip = await writeBuildZip(files, 'linux', { fileName: 'held.zip', pakBytes: 3 * 1024 * 1024 });
    const apiKey = await first.cp.accounts.issueKey(u.userId);
    const res = await first.cp.http.inject({
      method: 'POST',
      url: '/api/projects/upload-file',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ apiKey, userId: u.userId, projectId: p.projectId, fileUrl: `${fileOrigin}/held/held.zip`, autoRelease: false }),
    });
    const { uploadId } = res.json<{ uploadId: string }>();
    const part = join(first.dataDir, 'pipeline', `${uploadId}.zip.part`);
    await expect.poll(() => (existsSync(part) ? statSync(part).size : 0)).toBe(1024 * 1024);
    await first.stop();
    for (const r of slowResponses.splice(0)) r.destroy();
    expect(statSync(part).size).toBe(1024 * 1024);

    rangeRequests.length = 0;
    const again = await startTestControlPlane({ dataDir: first.dataDir, logs: first.logs });
    try {
      expect(stages(await deliveriesOf(uploadId)).slice(-3)).toEqual(['build.extracting Extracting & Scanning', 'build.saving Saving to Repository', 'build.ready Ready']);
      expect(rangeRequests).toEqual([`bytes=${1024 * 1024}-`]);
      expect(buildRecord(again.cp, uploadId).archive?.sha256).toBe(createHash('sha256').update(readFileSync(zip)).digest('hex'));
    } finally {
      await again.destroy();
    }
  });

  it('builds a restart caught mid-pipeline resume: Downloading from the start, Extracting rescans and saves the downloaded file itself, Saving without a digest hashes it; Extracting without its archive ends Reject, saying it was interrupted', async () => {
    const first = await startTestControlPlane();
    const u = await first.cp.accounts.createUser(`restart-${process.pid}@example.com`);
    const p = await first.cp.accounts.createProject(u.userId, 'Restart', 'europe');
    setProjectWebhook(first.cp, p.projectId, receiverUrl);
    await writeBuildZip(files, 'linux', { fileName: 'resume.zip' });
    const insert = (uploadId: string, status: BuildStatus) => seedBuild(first.cp, { uploadId, projectId: p.projectId, fileUrl: `${fileOrigin}/resume.zip`, status });
    insert('upl_resume', 'Downloading Files');
    insert('upl_lost', 'Extracting & Scanning');
    // Killed mid-scan: the downloaded archive and its digest are there; the scan runs again and the
    // save moves that very file into the blob store (a rename: same inode, no copy).
    const work = join(first.dataDir, 'pipeline');
    mkdirSync(work, { recursive: true });
    const rescan = await writeBuildZip(work, 'linux', { fileName: 'upl_rescan.zip' });
    const rescanned = { sha256: createHash('sha256').update(readFileSync(rescan)).digest('hex'), bytes: statSync(rescan).size, ino: statSync(rescan).ino };
    insert('upl_rescan', 'Extracting & Scanning');
    recordBuildArchive(first.cp, 'upl_rescan', { sha256: rescanned.sha256, bytes: rescanned.bytes });
    // Killed between the download's rename and its record: the archive is hashed as it is saved.
    const unhashed = await writeBuildZip(work, 'windows-shipping', { fileName: 'upl_unhashed.zip' });
    const unhashedSha = createHash('sha256').update(readFileSync(unhashed)).digest('hex');
    insert('upl_unhashed', 'Saving to Repository');
    await first.stop();

    const again = await startTestControlPlane({ dataDir: first.dataDir, logs: first.logs });
    try {
      expect(stages(await deliveriesOf('upl_resume'))).toEqual([
        'build.extracting Extracting & Scanning',
        'build.saving Saving to Repository',
        'build.ready Ready',
      ]);
      const lost = await deliveriesOf('upl_lost');
      expect(stages(lost)).toEqual(['build.rejected Reject']);
      expect(lost[0]?.objection).toBe('processing was interrupted by a restart of the service and the downloaded archive is gone; please submit the build again');
      expect(stages(await deliveriesOf('upl_rescan'))).toEqual(['build.saving Saving to Repository', 'build.ready Ready']);
      const blob = blobPathOf(first.dataDir, rescanned.sha256);
      expect(statSync(blob).ino).toBe(rescanned.ino);
      expect(stages(await deliveriesOf('upl_unhashed'))).toEqual(['build.ready Ready']);
      expect(buildRecord(again.cp, 'upl_unhashed').archive).toEqual({ sha256: unhashedSha, bytes: statSync(blobPathOf(first.dataDir, unhashedSha)).size });
      expect(readdirSync(work)).toEqual([]);
    } finally {
      await again.destroy();
    }
  });
});
