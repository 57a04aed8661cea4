// The agent's build cache on real zips served by a real local HTTP server: prepare (download,
// verify, extract, index), resume with Range after a killed download, a wrong hash retried once,
// backoff on the ManualClock, hostile archives leaving nothing, idempotence, eviction, leases,
// room made before a download, the restart sweep, and PrepareBuild/DeleteBuild through the real
// command executor and agent.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { BuildCache, buildAgent, CommandExecutor, CommandFailure, CommandJournal, loadAgentConfig, type BuildCacheOptions, type CachedBuildRecord } from '@pixelfleet/agent';
import { failureOf } from '../support/command-failure';
import type { AgentAck, DeliveredCommand, PrepareBuildCommand } from '@pixelfleet/proto';
import { DEFAULT_ARCHIVE_LIMITS } from '@pixelfleet/build-archive';
import { createLogger, ManualClock } from '@pixelfleet/common';
import { DEFAULT_PROJECT, hostileZips, writeBuildZip } from '../support/build-zips';

const P = DEFAULT_PROJECT;
const log = createLogger('silent');
const KIB = 1024;

/** What the server does with the next requests, in order; then 'serve'. `hangAfter`: send that many bytes, then nothing until cutHanging(). */
type Behaviour = 'serve' | 'fail-503' | { hangAfter: number } | { redirectTo: string };

interface Served {
  body: Buffer;
  sha256: string;
}

/** A local build server: files by path, Range support, scripted failures, every request's headers kept. */
class BuildServer {
  readonly requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  readonly files = new Map<string, Buffer>();
  readonly script: Behaviour[] = [];
  private readonly hanging: ServerResponse[] = [];
  private readonly server: Server;

  constructor() {
    this.server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      this.requests.push({ path, headers: req.headers });
      const body = this.files.get(path);
      const step = this.script.shift() ?? 'serve';
      if (step === 'fail-503') return void res.writeHead(503).end('busy');
      if (typeof step === 'object' && 'redirectTo' in step) return void res.writeHead(302, { location: step.redirectTo }).end();
      if (!body) return void res.writeHead(404).end('no such build');
      const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      const start = range ? Number(range[1]) : 0;
      if (start >= body.length && range) return void res.writeHead(416).end();
      const slice = body.subarray(start);
      const headers = { 'content-length': String(slice.length), 'content-type': 'application/zip' };
      if (range) res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` });
      else res.writeHead(200, headers);
      if (typeof step === 'object') {
        res.write(slice.subarray(0, step.hangAfter));
        return void this.hanging.push(res);
      }
      res.end(slice);
    });
  }

  /** Kills the connections of hanging responses, as a dying link would. */
  cutHanging(): void {
    for (const res of this.hanging.splice(0)) res.socket?.destroy();
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let root: string;
let zips: string;
let server: BuildServer;
let linux: Served;
let linuxB: Served;

async function serve(path: string, file: string): Promise<Served> {
  const body = await readFile(file);
  server.files.set(path, body);
  return { body, sha256: createHash('sha256').update(body).digest('hex') };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pf-build-cache-'));
  zips = join(root, 'zips');
  await mkdir(zips);
  server = new BuildServer();
  await server.listen();
  linux = await serve('/linux.zip', await writeBuildZip(zips, 'linux', { pakBytes: 512 * KIB }));
  linuxB = await serve('/linux-b.zip', await writeBuildZip(zips, 'linux', { pakBytes: 300 * KIB, projectName: 'Other', fileName: 'other.zip' }));
});

afterAll(async () => {
  await server.close();
  await rm(root, { recursive: true, force: true });
});

let dataDir: string;
let clock: ManualClock;
const caches: BuildCache[] = [];

beforeEach(async () => {
  dataDir = await mkdtemp(join(root, 'agent-'));
  clock = new ManualClock();
  server.requests.length = 0;
  server.script.length = 0;
  server.cutHanging();
});

afterEach(async () => {
  await Promise.all(caches.splice(0).map((c) => c.close()));
});

function openCache(options: Partial<BuildCacheOptions> = {}): BuildCache {
  const cache = new BuildCache({ dir: join(dataDir, 'builds'), maxBytes: 1024 ** 4, clock, log, random: () => 0.5, limits: LIMITS, ...options });
  caches.push(cache);
  return cache;
}

/** The archive guards' defaults, without the free-disk margin a test machine may not have. */
const LIMITS = { ...DEFAULT_ARCHIVE_LIMITS, freeSpaceMarginBytes: 0 };

function command(uploadId: string, served: Served, path = '/linux.zip', projectId = 'prj_a'): PrepareBuildCommand {
  return { kind: 'prepareBuild', uploadId, projectId, downloadUrl: server.url(`${path}?token=t0k`), sizeBytes: served.body.length, sha256: served.sha256 };
}

async function indexOf(): Promise<CachedBuildRecord[]> {
  return (JSON.parse(await readFile(join(dataDir, 'builds', 'index.json'), 'utf8')) as { builds: CachedBuildRecord[] }).builds;
}

/** Resolves with each backoff as the cache schedules it. */
function backoffs(): { options: Partial<BuildCacheOptions>; next: () => Promise<number> } {
  const waiting: ((delay: number) => void)[] = [];
  const early: number[] = [];
  return {
    options: {
      onBackoff: (_id, delayMs) => {
        const w = waiting.shift();
        if (w) w(delayMs);
        else early.push(delayMs);
      },
    },
    next: () => {
      const e = early.shift();
      return e !== undefined ? Promise.resolve(e) : new Promise((resolve) => waiting.push(resolve));
    },
  };
}

describe('BuildCache.prepare', () => {
  it('downloads, verifies and extracts a Linux build, records it in the index and removes the zip', async () => {
    const cache = openCache();
    const progress: number[] = [];
    const preparing = cache.prepare(command('upl_1', linux), (p) => progress.push(p));
    expect(cache.list()).toEqual([{ uploadId: 'upl_1', sha256: linux.sha256, ready: false }]);
    const record = await preparing;
    const dir = join(dataDir, 'builds', 'upl_1');
    expect(record.manifest).toMatchObject({ platform: 'linux', projectName: P, executable: `${P}/Binaries/Linux/${P}-Linux-Shipping` });
    expect(cache.pathOf('upl_1')).toBe(dir);
    expect((await stat(join(dir, record.manifest.executable))).mode & 0o111).not.toBe(0);
    expect((await stat(join(dir, `${P}/Content/Paks/${P}-Linux.pak`))).size).toBe(512 * KIB);
    expect(await readdir(join(dataDir, 'builds'))).toEqual(['index.json', 'upl_1']);
    expect(await indexOf()).toEqual([{ uploadId: 'upl_1', projectId: 'prj_a', sha256: linux.sha256, archiveBytes: linux.body.length, manifest: record.manifest, preparedAtMs: clock.now() }]);
    expect(cache.list()).toEqual([{ uploadId: 'upl_1', sha256: linux.sha256, ready: true }]);
    // Progress rises through download and extraction and ends at 100.
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.some((p) => p > 0 && p <= 70)).toBe(true);
    expect(progress.some((p) => p > 70 && p < 100)).toBe(true);
    expect(progress.at(-1)).toBe(100);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers.range).toBeUndefined();
  });

  it('is idempotent: a ready build succeeds at once without a request; concurrent prepares share one download', async () => {
    const cache = openCache();
    const [a, b] = await Promise.all([cache.prepare(command('upl_1', linux)), cache.prepare(command('upl_1', linux))]);
    expect(a).toEqual(b);
    expect(server.requests).toHaveLength(1);
    clock.advance(60_000);
    const progress: number[] = [];
    const again = await cache.prepare(command('upl_1', linux), (p) => progress.push(p));
    expect(server.requests).toHaveLength(1);
    expect(progress).toEqual([100]);
    // Asked again, it counts as the newest for eviction.
    expect(again.preparedAtMs).toBe(clock.now());
    expect((await indexOf())[0]!.preparedAtMs).toBe(clock.now());
  });

  /** A progress callback, and a promise of the first report past 0 (some bytes are on disk). */
  function firstBytes(): { onProgress: (p: number) => void; arrived: Promise<void> } {
    let arrivedNow: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => {
      arrivedNow = resolve;
    });
    return { onProgress: (p) => p > 0 && arrivedNow(), arrived };
  }

  it('resumes with Range after the agent was killed mid-download, and the result hashes right', async () => {
    server.script.push({ hangAfter: Math.floor(linux.body.length / 2) });
    const first = openCache();
    const bytes = firstBytes();
    const dying = first.prepare(command('upl_1', linux), bytes.onProgress);
    await bytes.arrived;
    let settled = false;
    void dying.finally(() => {
      settled = true;
    });
    // The agent stops mid-download; the .part stays.
    await first.close();
    const part = join(dataDir, 'builds', 'upl_1.zip.part');
    const kept = (await stat(part)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(linux.body.length);
    // Restart: a new cache on the same folder hashes the part and resumes after it.
    const second = openCache();
    const record = await second.prepare(command('upl_1', linux));
    expect(settled).toBe(false);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.headers.range).toBe(`bytes=${kept}-`);
    expect(record.sha256).toBe(linux.sha256);
    expect(existsSync(part)).toBe(false);
    expect((await stat(join(dataDir, 'builds', 'upl_1', `${P}/Content/Paks/${P}-Linux.pak`))).size).toBe(512 * KIB);
  });

  it('retries a broken connection and 5xx with full-jitter backoff on the clock, resuming where it stopped', async () => {
    server.script.push({ hangAfter: 200 * KIB }, 'fail-503');
    const b = backoffs();
    const cache = openCache(b.options);
    const bytes = firstBytes();
    const done = cache.prepare(command('upl_1', linux), bytes.onProgress);
    await bytes.arrived;
    server.cutHanging();
    // random 0.5: half of the 1 s, then of the 2 s ceiling.
    expect(await b.next()).toBe(500);
    const kept = (await stat(join(dataDir, 'builds', 'upl_1.zip.part'))).size;
    expect(kept).toBeGreaterThan(0);
    clock.runNext();
    expect(await b.next()).toBe(1_000);
    clock.runNext();
    const record = await done;
    expect(record.sha256).toBe(linux.sha256);
    expect(server.requests.map((r) => r.headers.range)).toEqual([undefined, `bytes=${kept}-`, `bytes=${kept}-`]);
  });

  it('counts a stalled response as a network error on the clock, and resumes', async () => {
    server.script.push({ hangAfter: 100 * KIB });
    const b = backoffs();
    const cache = openCache({ ...b.options, retry: { stallTimeoutMs: 30_000 } });
    const bytes = firstBytes();
    const done = cache.prepare(command('upl_1', linux), bytes.onProgress);
    await bytes.arrived;
    clock.advance(30_000);
    await b.next();
    clock.runNext();
    await done;
    expect(server.requests[1]!.headers.range).toMatch(/^bytes=[1-9]\d*-$/);
  });

  it('gives up DOWNLOAD_FAILED after maxAttempts failures in a row, and at once on a 4xx', async () => {
    server.script.push('fail-503', 'fail-503', 'fail-503');
    const b = backoffs();
    const cache = openCache({ ...b.options, retry: { maxAttempts: 3 } });
    const failing = failureOf(cache.prepare(command('upl_1', linux)));
    await b.next();
    clock.runNext();
    await b.next();
    clock.runNext();
    expect(await failing).toEqual(['DOWNLOAD_FAILED', 'the build download failed 3 times in a row; the last error: the control plane answered HTTP 503']);
    expect(await failureOf(cache.prepare({ ...command('upl_2', linux), downloadUrl: server.url('/expired.zip') }))).toEqual(['DOWNLOAD_FAILED', 'the control plane refused the build download with HTTP 404']);
  });

  it('follows a redirect on the same host with the worker token, and one to another host (an object store) without it', async () => {
    const bearer = 'Bearer pfw_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG';
    server.script.push({ redirectTo: '/linux.zip?token=moved' });
    const cache = openCache({ workerToken: () => bearer.slice('Bearer '.length) });
    await cache.prepare(command('upl_1', linux, '/old.zip'));
    expect(server.requests.map((r) => [r.path, r.headers.authorization])).toEqual([['/old.zip', bearer], ['/linux.zip', bearer]]);
    // localhost is another origin than 127.0.0.1 (the same server here): the presigned URL's host.
    server.requests.length = 0;
    const port = new URL(server.url('/')).port;
    server.script.push({ redirectTo: `http://localhost:${port}/linux.zip?X-Amz-Signature=0a1b` });
    await cache.prepare(command('upl_2', linux, '/old.zip'));
    expect(server.requests.map((r) => [r.path, r.headers.host, r.headers.authorization])).toEqual([
      ['/old.zip', `127.0.0.1:${port}`, bearer],
      ['/linux.zip', `localhost:${port}`, undefined],
    ]);
    // A refusal there is the store's, and says so (an expired presigned URL: the clocks, or the bucket's rights).
    server.script.push({ redirectTo: `http://localhost:${port}/expired.zip?X-Amz-Signature=0a1b` });
    expect(await failureOf(cache.prepare(command('upl_3', linux, '/old.zip')))).toEqual([
      'DOWNLOAD_FAILED',
      `the object store the control plane sent the download to (localhost:${port}) refused the build download with HTTP 404`,
    ]);
  });

  it('downloads once more on a wrong hash, then fails HASH_MISMATCH naming both hashes and keeps nothing', async () => {
    const cache = openCache();
    const wrong = 'ab'.repeat(32);
    expect(await failureOf(cache.prepare({ ...command('upl_1', linux), sha256: wrong }))).toEqual([
      'HASH_MISMATCH',
      `the downloaded build's SHA-256 is ${linux.sha256}, expected ${wrong} (downloaded twice)`,
    ]);
    expect(server.requests).toHaveLength(2);
    expect(server.requests.every((r) => r.headers.range === undefined)).toBe(true);
    expect(await readdir(join(dataDir, 'builds'))).toEqual([]);
    expect(cache.list()).toEqual([]);
  });

  it('hashes an existing part before resuming, and a whole part with the wrong bytes is downloaded again', async () => {
    await mkdir(join(dataDir, 'builds'), { recursive: true });
    const corrupt = Buffer.from(linux.body);
    corrupt[10] = corrupt[10]! ^ 0xff;
    await writeFile(join(dataDir, 'builds', 'upl_1.zip.part'), corrupt);
    const cache = openCache();
    await cache.prepare(command('upl_1', linux));
    // The whole part was hashed (no request), found wrong, deleted and downloaded in full.
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers.range).toBeUndefined();
  });

  it('fails SIZE_MISMATCH when the server serves another size than the command says', async () => {
    const cache = openCache();
    expect(await failureOf(cache.prepare({ ...command('upl_1', linux), sizeBytes: linux.body.length + 1 }))).toEqual(['SIZE_MISMATCH', `the control plane serves ${linux.body.length} bytes, the command says ${linux.body.length + 1}`]);
  });

  it('fails DISK_FULL before downloading when the archive cannot fit', async () => {
    const cache = openCache({ freeBytes: () => Promise.resolve(1000) });
    expect(await failureOf(cache.prepare(command('upl_1', linux)))).toEqual([
      'DISK_FULL',
      `the worker has too little free disk for the build: it needs ${linux.body.length} more bytes and 1000 are free`,
    ]);
    expect(server.requests).toHaveLength(0);
  });

  it('refuses an upload id that could leave the builds folder', async () => {
    const cache = openCache();
    expect(await failureOf(cache.prepare({ ...command('x', linux), uploadId: '../etc' }))).toEqual(['BAD_COMMAND', 'the upload id is not a valid build id']);
    expect(server.requests).toHaveLength(0);
  });

  const hostile = hostileZips().filter((h) => ['zip-slip', 'symlink', 'crc-mismatch', 'no-exe'].includes(h.name));
  it.each(hostile.map((h) => [h.name, h] as const))('fails a hostile archive (%s) with its objection and leaves nothing on disk', async (_name, h) => {
    const served = await serve(`/${h.name}.zip`, await h.write(zips));
    const cache = openCache();
    expect(await failureOf(cache.prepare(command('upl_h', served, `/${h.name}.zip`)))).toEqual([h.code, h.objection]);
    expect(await readdir(join(dataDir, 'builds'))).toEqual([]);
    expect(cache.list()).toEqual([]);
  });
});

describe('BuildCache eviction, deletion and leases', () => {
  async function prepareAt(cache: BuildCache, uploadId: string, projectId: string, served = linux, path = '/linux.zip'): Promise<CachedBuildRecord> {
    clock.advance(1_000);
    const r = await cache.prepare(command(uploadId, served, path, projectId));
    await cache.whenIdle();
    return r;
  }
  const ids = (cache: BuildCache) => cache.list().map((b) => b.uploadId).sort();

  it('keeps every build while under maxBytes, then evicts the oldest beyond each project’s two newest', async () => {
    const probe = openCache({ dir: join(dataDir, 'probe') });
    const size = (await probe.prepare(command('upl_p', linux))).manifest.totalBytes;
    const sizeB = (await probe.prepare(command('upl_q', linuxB, '/linux-b.zip'))).manifest.totalBytes;
    // Room for three builds of project A and the one of B, not a fourth of A.
    const cache = openCache({ maxBytes: 3 * size + sizeB });
    await prepareAt(cache, 'a1', 'prj_a');
    await prepareAt(cache, 'a2', 'prj_a');
    await prepareAt(cache, 'b1', 'prj_b', linuxB, '/linux-b.zip');
    await prepareAt(cache, 'a3', 'prj_a');
    expect(ids(cache)).toEqual(['a1', 'a2', 'a3', 'b1']);
    await prepareAt(cache, 'a4', 'prj_a');
    expect(ids(cache)).toEqual(['a2', 'a3', 'a4', 'b1']);
    expect(existsSync(join(dataDir, 'builds', 'a1'))).toBe(false);
    expect((await indexOf()).map((r) => r.uploadId).sort()).toEqual(['a2', 'a3', 'a4', 'b1']);
    // A rollback to a2 makes it newest: a3 is now the one beyond the two.
    await prepareAt(cache, 'a2', 'prj_a');
    await prepareAt(cache, 'a5', 'prj_a');
    expect(ids(cache)).toEqual(['a2', 'a4', 'a5', 'b1']);
  });

  it('never evicts past the two newest of a project, even far over maxBytes', async () => {
    const cache = openCache({ maxBytes: 1 });
    await prepareAt(cache, 'a1', 'prj_a');
    await prepareAt(cache, 'b1', 'prj_b', linuxB, '/linux-b.zip');
    await prepareAt(cache, 'a2', 'prj_a');
    await prepareAt(cache, 'a3', 'prj_a');
    expect(ids(cache)).toEqual(['a2', 'a3', 'b1']);
  });

  it('evicts a build a session holds only once it is released', async () => {
    const cache = openCache({ maxBytes: 1 });
    await prepareAt(cache, 'a1', 'prj_a');
    const lease = cache.acquire('a1');
    expect(lease.manifest.executable).toBe(`${P}/Binaries/Linux/${P}-Linux-Shipping`);
    expect(lease.path).toBe(join(dataDir, 'builds', 'a1'));
    await prepareAt(cache, 'a2', 'prj_a');
    await prepareAt(cache, 'a3', 'prj_a');
    expect(ids(cache)).toEqual(['a1', 'a2', 'a3']);
    expect(existsSync(join(lease.path, lease.manifest.executable))).toBe(true);
    lease.release();
    lease.release();
    await cache.whenIdle();
    expect(ids(cache)).toEqual(['a2', 'a3']);
    expect(existsSync(lease.path)).toBe(false);
  });

  it('deletes a build (and its partial download) on DeleteBuild, deferring while a session holds it', async () => {
    const cache = openCache();
    await prepareAt(cache, 'a1', 'prj_a');
    await prepareAt(cache, 'a2', 'prj_a');
    await cache.delete('a2');
    expect(ids(cache)).toEqual(['a1']);
    expect(existsSync(join(dataDir, 'builds', 'a2'))).toBe(false);
    const first = cache.acquire('a1');
    const second = cache.acquire('a1');
    await cache.delete('a1');
    // No longer offered, still on disk for the sessions that run it.
    expect(cache.list()).toEqual([]);
    expect(() => cache.acquire('a1')).toThrow(CommandFailure);
    expect(existsSync(join(dataDir, 'builds', 'a1', first.manifest.executable))).toBe(true);
    first.release();
    await cache.whenIdle();
    expect(existsSync(join(dataDir, 'builds', 'a1'))).toBe(true);
    second.release();
    await cache.whenIdle();
    expect(existsSync(join(dataDir, 'builds', 'a1'))).toBe(false);
    expect(await indexOf()).toEqual([]);
    // Deleting what is not there succeeds; a partial download goes too.
    await writeFile(join(dataDir, 'builds', 'a9.zip.part'), 'PK');
    await cache.delete('a9');
    expect(await readdir(join(dataDir, 'builds'))).toEqual(['index.json']);
  });

  it('calls off a deferred deletion when the build is prepared again', async () => {
    const cache = openCache();
    await prepareAt(cache, 'a1', 'prj_a');
    const lease = cache.acquire('a1');
    await cache.delete('a1');
    await prepareAt(cache, 'a1', 'prj_a');
    lease.release();
    await cache.whenIdle();
    expect(ids(cache)).toEqual(['a1']);
    expect(server.requests).toHaveLength(1);
  });
});

describe('BuildCache makes room before a download', () => {
  /** Prepares the Linux build under each id of project A, a second apart, letting evictions run. */
  async function prepareInTurn(cache: BuildCache, ids: string[]): Promise<void> {
    for (const id of ids) {
      clock.advance(1_000);
      await cache.prepare(command(id, linux));
      await cache.whenIdle();
    }
  }

  /** A logger whose warn lines are kept. */
  function warnings(): { log: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
    const lines: Record<string, unknown>[] = [];
    return { log: createLogger('warn', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }), lines };
  }

  it('evicts beyond each project’s two newest before downloading, so the builds, the archive and its extraction (2× the archive) fit', async () => {
    const probe = openCache({ dir: join(dataDir, 'probe') });
    const size = (await probe.prepare(command('upl_p', linux))).manifest.totalBytes;
    const archive = linux.body.length;
    // Three builds fit, and so do two builds with a download of 3× the archive; three with it do not, by one byte.
    const w = warnings();
    const cache = openCache({ maxBytes: 3 * size + 3 * archive - 1, log: w.log });
    await prepareInTurn(cache, ['a1', 'a2', 'a3']);
    expect(cache.list().map((b) => b.uploadId).sort()).toEqual(['a1', 'a2', 'a3']);
    clock.advance(1_000);
    let duringDownload: string[] | undefined;
    await cache.prepare(command('a4', linux), (percent) => {
      if (percent > 0 && percent < 70) duringDownload ??= cache.list().map((b) => `${b.uploadId}${b.ready ? '' : ' (preparing)'}`).sort();
    });
    // a1 was gone before a4's bytes arrived: the one build beyond project A's two newest (a3, a2).
    expect(duringDownload).toEqual(['a2', 'a3', 'a4 (preparing)']);
    expect((await indexOf()).map((r) => r.uploadId).sort()).toEqual(['a2', 'a3', 'a4']);
    expect(existsSync(join(dataDir, 'builds', 'a1'))).toBe(false);
    expect(w.lines).toEqual([]);
  });

  it('counts what the builds being prepared at the same time will take', async () => {
    const probe = openCache({ dir: join(dataDir, 'probe') });
    const size = (await probe.prepare(command('upl_p', linux))).manifest.totalBytes;
    const archiveB = linuxB.body.length;
    // Three builds of A and one download of B fit; three of A and two downloads of B at once do not, by one byte.
    const b = backoffs();
    const cache = openCache({ ...b.options, maxBytes: 3 * size + 6 * archiveB - 1 });
    await prepareInTurn(cache, ['a1', 'a2', 'a3']);
    server.script.push({ hangAfter: 64 * KIB });
    let arrived: () => void = () => undefined;
    const firstBytes = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const b1 = cache.prepare(command('b1', linuxB, '/linux-b.zip', 'prj_b'), (p) => p > 0 && arrived());
    await firstBytes;
    expect(cache.list().map((x) => x.uploadId).sort()).toEqual(['a1', 'a2', 'a3', 'b1']);
    // b2 comes while b1 is still downloading: room for both, so a1 (past A's two newest) goes first.
    await cache.prepare(command('b2', linuxB, '/linux-b.zip', 'prj_b'));
    expect(existsSync(join(dataDir, 'builds', 'a1'))).toBe(false);
    server.cutHanging();
    await b.next();
    clock.runNext();
    await b1;
    await cache.whenIdle();
    expect(cache.list().map((x) => x.uploadId).sort()).toEqual(['a2', 'a3', 'b1', 'b2']);
  });

  it('goes on with the download, warning, when nothing may be evicted (each project’s two newest, a build a session holds)', async () => {
    const w = warnings();
    const cache = openCache({ maxBytes: 1, log: w.log });
    await cache.prepare(command('a1', linux));
    clock.advance(1_000);
    await cache.prepare(command('b1', linuxB, '/linux-b.zip', 'prj_b'));
    clock.advance(1_000);
    await cache.prepare(command('b2', linuxB, '/linux-b.zip', 'prj_b'));
    const lease = cache.acquire('a1');
    clock.advance(1_000);
    await cache.prepare(command('a2', linux));
    clock.advance(1_000);
    await cache.prepare(command('a3', linux));
    await cache.whenIdle();
    expect(cache.list().map((b) => b.uploadId).sort()).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    const refusals = w.lines.filter((l) => l.msg === 'the build cache cannot make room for this build (each project keeps its two newest, sessions hold others); preparing it anyway');
    // Each download is over maxBytes alone; for a3, a1 is past the project's two newest but held.
    expect(refusals.map((l) => [l.uploadId, l.reserveBytes, l.maxBytes])).toEqual([
      ['a1', 3 * linux.body.length, 1],
      ['b1', 3 * linuxB.body.length, 1],
      ['b2', 3 * linuxB.body.length, 1],
      ['a2', 3 * linux.body.length, 1],
      ['a3', 3 * linux.body.length, 1],
    ]);
    lease.release();
    await cache.whenIdle();
    expect(cache.list().map((b) => b.uploadId).sort()).toEqual(['a2', 'a3', 'b1', 'b2']);
  });
});

describe('BuildCache restart sweep', () => {
  it('removes half-extracted, half-deleted and unknown folders and stale index records; keeps parts', async () => {
    const first = openCache();
    await first.prepare(command('upl_1', linux));
    await first.prepare(command('upl_2', linux));
    await first.close();
    const builds = join(dataDir, 'builds');
    await rm(join(builds, 'upl_2'), { recursive: true });
    await mkdir(join(builds, '.upl_3.extracting-abc123', P), { recursive: true });
    await writeFile(join(builds, '.upl_3.extracting-abc123', P, 'half.pak'), 'x');
    await mkdir(join(builds, '.deleting-upl_0-00ff'));
    await mkdir(join(builds, 'upl_4'));
    await writeFile(join(builds, 'upl_5.zip.part'), linux.body.subarray(0, 1000));
    const second = openCache();
    expect(second.list()).toEqual([{ uploadId: 'upl_1', sha256: linux.sha256, ready: true }]);
    expect((await readdir(builds)).sort()).toEqual(['index.json', 'upl_1', 'upl_5.zip.part']);
    expect((await indexOf()).map((r) => r.uploadId)).toEqual(['upl_1']);
    expect(second.get('upl_1')?.manifest.projectName).toBe(P);
    // The kept part is resumed.
    await second.prepare(command('upl_5', linux));
    expect(server.requests.at(-1)!.headers.range).toBe('bytes=1000-');
  });

  it('redoes the extraction from a verified zip left by a kill during extraction, without downloading', async () => {
    const builds = join(dataDir, 'builds');
    await mkdir(builds, { recursive: true });
    await writeFile(join(builds, 'upl_1.zip'), linux.body);
    const cache = openCache();
    await cache.prepare(command('upl_1', linux));
    expect(server.requests).toHaveLength(0);
    expect((await readdir(builds)).sort()).toEqual(['index.json', 'upl_1']);
  });
});

describe('PrepareBuild and DeleteBuild commands', () => {
  function delivered(seq: number, c: DeliveredCommand['command']): DeliveredCommand {
    return { seq, commandId: `cmd_${seq}`, connectionEpoch: 1, notAfterMs: undefined, command: c };
  }

  it('a PrepareBuild through the command executor acks ACCEPTED, IN_PROGRESS with rising percents, then SUCCEEDED', async () => {
    const cache = openCache();
    const acks: AgentAck[] = [];
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const executor = new CommandExecutor(
      new CommandJournal(dataDir),
      {
        startSession: () => Promise.resolve(),
        stopSession: () => Promise.resolve(),
        prepareBuild: async (c, progress) => {
          await cache.prepare(c, progress);
        },
        deleteBuild: (c) => cache.delete(c.uploadId),
      },
      (ack) => {
        acks.push(ack);
        if (ack.phase === 'SUCCEEDED' || ack.phase === 'FAILED') finished();
      },
      () => clock.now(),
      log,
    );
    executor.handle(delivered(1, command('upl_1', linux)));
    await done;
    expect(acks[0]).toMatchObject({ phase: 'ACCEPTED', progressPercent: 0 });
    expect(acks.at(-1)).toEqual({ seq: 1, commandId: 'cmd_1', phase: 'SUCCEEDED', errorCode: '', errorMessage: '', progressPercent: 100 });
    const middle = acks.slice(1, -1);
    expect(middle.length).toBeGreaterThan(2);
    expect(middle.every((a) => a.phase === 'IN_PROGRESS')).toBe(true);
    expect(middle.map((a) => a.progressPercent)).toEqual([...middle.map((a) => a.progressPercent)].sort((a, b) => a - b));
  });

  it('the agent hands PrepareBuild and DeleteBuild to its cache and lists cached builds for Hello', async () => {
    const config = loadAgentConfig({ env: { PIXELFLEET_AGENT_CONTROL_PLANE: '127.0.0.1:9', PIXELFLEET_AGENT_REGION: 'europe', PIXELFLEET_AGENT_DATA_DIR: dataDir } });
    const agent = buildAgent(config, { logger: log, clock });
    try {
      agent.executor.handle(delivered(1, command('upl_1', linux)));
      // The command's run and this call share one download.
      await agent.builds.prepare(command('upl_1', linux));
      await vi.waitFor(() => expect(agent.executor.lastAckedSeq).toBe(1));
      expect(agent.builds.list()).toEqual([{ uploadId: 'upl_1', sha256: linux.sha256, ready: true }]);
      expect(server.requests).toHaveLength(1);
      agent.executor.handle(delivered(2, { kind: 'deleteBuild', uploadId: 'upl_1' }));
      await vi.waitFor(() => expect(agent.executor.lastAckedSeq).toBe(2));
      expect(agent.builds.list()).toEqual([]);
      expect(existsSync(join(dataDir, 'builds', 'upl_1'))).toBe(false);
    } finally {
      await agent.close();
    }
  });
});
