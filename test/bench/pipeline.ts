// Build pipeline benchmark (`npm run bench:pipeline`): a packaged Unreal build of realistic size
// (default 2 GiB, `--gib N`), served by a local HTTP server in a child process, submitted through
// the public API of a real control plane (SQLite, blob store, the pipeline: download, extract &
// scan, save) in this process. Beside it, in the same run, the baselines: `curl -o` of the same URL,
// `unzip` of the same file (the issue's baseline: it extracts) and `unzip -t` (it inflates and
// checks every entry's CRC-32 without writing: what the control plane's scan does). Prints
// upload-file → Ready, each stage's throughput against its baselines, and this process's peak RSS
// (the control plane; the file server is the child's). Then distribution: 4 local agents
// (`pixelfleet-agent` processes, each its own build cache) take the build from the control plane's
// archive links and extract it, against 4 parallel `curl -o` of the same links (the issue's
// baseline) and 4 parallel `curl -o && unzip` (the same work), in the same run (`--agents N`:
// another count; 1 is one streaming server's own copy); an agent's peak RSS is its VmHWM. Not a test.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { ZipArchive } from 'archiver';
import { buildEntries, DEFAULT_PROJECT } from '../support/build-zips';
import { startTestControlPlane, TEST_JOIN_TOKEN } from '../support/control-plane';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const TARGET_RATIO = 0.9;
const TARGET_RSS_MIB = 256;
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Peak resident memory of a process (VmHWM), in bytes; 0 when it is gone. */
function peakRssOf(pid: number | undefined): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A `pixelfleet-agent run` process with its own data dir, as on a streaming server. */
function spawnAgent(grpcAddress: string, dataDir: string, name: string): ChildProcess {
  return spawn(process.execPath, [join(root, 'agent/bin/pixelfleet-agent.mjs'), 'run'], {
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      PIXELFLEET_AGENT_CONTROL_PLANE: grpcAddress,
      PIXELFLEET_AGENT_JOIN_TOKEN: TEST_JOIN_TOKEN,
      PIXELFLEET_AGENT_REGION: 'europe',
      PIXELFLEET_AGENT_HOSTNAME: name,
      PIXELFLEET_AGENT_DATA_DIR: dataDir,
      PIXELFLEET_AGENT_LOG_LEVEL: 'warn',
    },
  });
}

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};

// ---------------------------------------------------------------------------------------------
// The file server (child process): static files with Range, as a storage service answers.

function runServeChild(dir: string): void {
  const server = createServer((req, res) => {
    const file = join(dir, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1));
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      res.writeHead(404).end();
      return;
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = range ? Number(range[1]) : 0;
    res.writeHead(range ? 206 : 200, {
      'content-type': 'application/zip',
      'accept-ranges': 'bytes',
      'content-length': size - start,
      ...(range ? { 'content-range': `bytes ${start}-${size - 1}/${size}` } : {}),
    });
    createReadStream(file, { start, highWaterMark: MIB }).pipe(res);
  });
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
}

function startServeChild(dir: string): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--serve-child', dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve({ child, origin: `http://127.0.0.1:${m.port}` }));
    child.once('exit', (code) => reject(new Error(`file server exited with ${code}`)));
  });
}

// ---------------------------------------------------------------------------------------------
// The build: a Linux-packaged Unreal app whose .pak (the bulk of any real build) is `bytes` of
// incompressible data, deflated as a customer's zip tool would (deflate of compressed data costs
// the same to inflate as storing it); the small files as build-zips.ts writes them.

async function writeBigBuild(path: string, pakBytes: number): Promise<void> {
  const archive = new ZipArchive({ zlib: { level: 1 }, forceZip64: pakBytes >= 4 * GIB });
  const out = createWriteStream(path);
  const done = pipeline(archive, out);
  const chunk = randomFillSync(Buffer.alloc(MIB));
  let left = pakBytes;
  const pak = Readable.from(
    (function* () {
      while (left > 0) {
        const n = Math.min(left, MIB);
        left -= n;
        chunk.writeUInt32LE(left >>> 0, 0); // no two chunks alike
        yield Buffer.from(chunk.subarray(0, n));
      }
    })(),
  );
  for (const e of buildEntries('linux')) {
    if (e.name.endsWith('.pak')) continue;
    if (e.name.endsWith('/')) archive.append('', { name: e.name });
    else archive.append(typeof e.data === 'string' ? Buffer.from(e.data) : (e.data ?? Buffer.alloc(0)), { name: e.name, mode: e.mode ?? 0o644 });
  }
  archive.append(pak, { name: `${DEFAULT_PROJECT}/Content/Paks/${DEFAULT_PROJECT}-Linux.pak` });
  await archive.finalize();
  await done;
}

// ---------------------------------------------------------------------------------------------

function timed(command: string, args: string[]): number {
  const started = performance.now();
  const r = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${r.status ?? r.signal}`);
  return performance.now() - started;
}

async function main(): Promise<void> {
  for (const tool of ['curl', 'unzip']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`the baseline needs ${tool}: apt-get install ${tool}`);
  }
  const gib = Number(arg('--gib', '2'));
  // `--agents 1`: one streaming server's own copy (each is its own machine in production; four on
  // this machine share its two cores and its disk).
  const AGENTS = Number(arg('--agents', '4'));
  const dir = mkdtempSync(join(tmpdir(), 'pf-bench-pipeline-'));
  const serverDir = join(dir, 'served');
  const zip = join(serverDir, 'build.zip');
  spawnSync('mkdir', ['-p', serverDir]);
  console.log(`bench:pipeline — ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} CPUs; a ${gib} GiB Linux-packaged build`);
  let t = performance.now();
  await writeBigBuild(zip, gib * GIB);
  const size = statSync(zip).size;
  console.log(`  build written: ${(size / MIB).toFixed(0)} MiB in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const { child, origin } = await startServeChild(serverDir);
  const url = `${origin}/build.zip`;
  try {
    // Baseline: curl -o, then unzip, of the same file from the same server.
    const baseDir = join(dir, 'baseline');
    spawnSync('mkdir', ['-p', baseDir]);
    const curlMs = timed('curl', ['-sS', '-o', join(baseDir, 'build.zip'), url]);
    const unzipMs = timed('unzip', ['-q', '-o', join(baseDir, 'build.zip'), '-d', join(baseDir, 'x')]);
    const unzipTestMs = timed('unzip', ['-tq', join(baseDir, 'build.zip')]);
    rmSync(baseDir, { recursive: true, force: true });

    // The pipeline: upload-file → Ready on a real control plane.
    const cp = await startTestControlPlane({ dataDir: join(dir, 'cp') });
    const user = await cp.cp.accounts.createUser('bench@example.com');
    const project = await cp.cp.accounts.createProject(user.userId, 'Bench', 'europe');
    const apiKey = await cp.cp.accounts.issueKey(user.userId);
    const stageAt = new Map<string, number>();
    const stop = cp.cp.events.follow(0, (e) => {
      if (e.type.startsWith('build.')) stageAt.set(e.type, performance.now());
    });
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
    t = performance.now();
    const res = await cp.cp.http.inject({
      method: 'POST',
      url: '/api/projects/upload-file',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ apiKey, userId: user.userId, projectId: project.projectId, fileUrl: url, autoRelease: false }),
    });
    if (res.statusCode !== 201) throw new Error(`upload-file answered ${res.statusCode}: ${res.body}`);
    const { uploadId } = res.json<{ uploadId: string }>();
    await cp.cp.builds.pipeline?.idle();
    const totalMs = performance.now() - t;
    clearInterval(sampler);
    stop();
    const build = cp.cp.db.prepare('SELECT status, objection, archive_sha256 AS sha FROM builds WHERE upload_id = ?').get(uploadId) as { status: string; objection: string | null; sha: string };
    if (build.status !== 'Ready') throw new Error(`the build ended ${build.status}: ${build.objection ?? ''}`);

    // Distribution: 4 agents connect, the build is activated, each downloads and extracts it.
    const agents = Array.from({ length: AGENTS }, (_, i) => spawnAgent(cp.started.grpcAddress, join(dir, `agent-${i}`), `bench-${i}`));
    await new Promise<void>((resolve) => {
      const check = () => (cp.cp.registry.placeable('europe').length >= AGENTS ? resolve() : setTimeout(check, 100));
      check();
    });
    const approved = new Promise<void>((resolve) => {
      const stopApproved = cp.cp.events.follow(0, (e) => {
        if (e.type === 'build.approved' || e.type === 'build.rejected') {
          stopApproved();
          resolve();
        }
      });
    });
    t = performance.now();
    // As distribute-file would (without spending the user's build-call window on the bench): Ready → Distributing.
    await cp.cp.builds.advance(uploadId, 'Distributing to Servers');
    await approved;
    const distributeMs = performance.now() - t;
    const final = cp.cp.db.prepare('SELECT status, objection FROM builds WHERE upload_id = ?').get(uploadId) as { status: string; objection: string | null };
    const agentPeakRss = Math.max(...agents.map((a) => peakRssOf(a.pid)));
    for (const a of agents) a.kill('SIGTERM');
    // Baseline: 4 parallel curl -o of the same archive links (to disk, as the agents write).
    const curlDir = join(dir, 'curls');
    spawnSync('mkdir', ['-p', curlDir]);
    const workers = cp.cp.registry.placeable('europe');
    const links = workers.map((w) => cp.cp.archiveLinks.issueArchiveLink({ workerId: w.workerId, uploadId, sha256: build.sha }).url);
    t = performance.now();
    await Promise.all(
      links.map(
        (link, i) =>
          new Promise<void>((resolve, reject) =>
            spawn('curl', ['-sS', '-o', join(curlDir, `${i}.zip`), link], { stdio: 'ignore' }).on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`curl exited ${code}`)))),
          ),
      ),
    );
    const curlsMs = performance.now() - t;
    rmSync(curlDir, { recursive: true, force: true });
    spawnSync('mkdir', ['-p', curlDir]);
    t = performance.now();
    await Promise.all(
      links.map(
        (link, i) =>
          new Promise<void>((resolve, reject) =>
            spawn('sh', ['-c', 'curl -sS -o "$1/$2.zip" "$3" && unzip -q "$1/$2.zip" -d "$1/$2"', 'sh', curlDir, String(i), link], { stdio: 'ignore' }).on('exit', (code) =>
              code === 0 ? resolve() : reject(new Error(`curl && unzip exited ${code}`)),
            ),
          ),
      ),
    );
    const curlsUnzipMs = performance.now() - t;
    await cp.destroy();
    if (final.status !== 'Approved') throw new Error(`the distribution ended ${final.status}: ${final.objection ?? ''}`);

    const at = (e: string) => stageAt.get(e) ?? NaN;
    const downloadMs = at('build.extracting') - at('build.downloading');
    const extractMs = at('build.saving') - at('build.extracting');
    const saveMs = at('build.ready') - at('build.saving');
    const mbps = (ms: number) => (size / MIB / (ms / 1000)).toFixed(0);
    const ratio = (curlMs + unzipMs) / (downloadMs + extractMs);
    const testRatio = (curlMs + unzipTestMs) / (downloadMs + extractMs);
    console.log('');
    console.log('| Measure | Pipeline | Baseline (same run) | Ratio | Target |');
    console.log('|---|---|---|---|---|');
    console.log(`| download (${(size / MIB).toFixed(0)} MiB, SHA-256 on the way) | ${(downloadMs / 1000).toFixed(1)} s = ${mbps(downloadMs)} MiB/s | curl -o: ${(curlMs / 1000).toFixed(1)} s = ${mbps(curlMs)} MiB/s | ${(curlMs / downloadMs).toFixed(2)}× | — |`);
    console.log(`| extract & scan (inflate + CRC-32 of every entry, nothing written) | ${(extractMs / 1000).toFixed(1)} s = ${mbps(extractMs)} MiB/s | unzip: ${(unzipMs / 1000).toFixed(1)} s = ${mbps(unzipMs)} MiB/s | ${(unzipMs / extractMs).toFixed(2)}× | — |`);
    console.log(`| | | unzip -t (same work): ${(unzipTestMs / 1000).toFixed(1)} s = ${mbps(unzipTestMs)} MiB/s | ${(unzipTestMs / extractMs).toFixed(2)}× | — |`);
    console.log(`| download + extract & scan | ${((downloadMs + extractMs) / 1000).toFixed(1)} s | curl + unzip: ${((curlMs + unzipMs) / 1000).toFixed(1)} s | ${ratio.toFixed(2)}× | ≥ ${TARGET_RATIO}× ${ratio >= TARGET_RATIO ? 'met' : 'MISSED'} |`);
    console.log(`| | | curl + unzip -t: ${((curlMs + unzipTestMs) / 1000).toFixed(1)} s | ${testRatio.toFixed(2)}× | — |`);
    console.log(`| save to the blob store (fsync + rename) | ${(saveMs / 1000).toFixed(2)} s | — | — | — |`);
    console.log(`| upload-file → Ready | ${(totalMs / 1000).toFixed(1)} s | — | — | — |`);
    console.log(`| control plane peak RSS (this process) | ${(peakRss / MIB).toFixed(0)} MiB | — | — | ≤ ${TARGET_RSS_MIB} MiB ${peakRss / MIB <= TARGET_RSS_MIB ? 'met' : 'MISSED'} |`);
    const distRatio = curlsMs / distributeMs;
    console.log(`| distribution to ${AGENTS} agents (download, SHA-256, extract each) → Approved | ${(distributeMs / 1000).toFixed(1)} s | ${AGENTS} parallel curl -o: ${(curlsMs / 1000).toFixed(1)} s | ${distRatio.toFixed(2)}× | ≥ ${TARGET_RATIO}× ${distRatio >= TARGET_RATIO ? 'met' : 'MISSED'} |`);
    console.log(`| | | ${AGENTS} parallel curl -o && unzip (same work): ${(curlsUnzipMs / 1000).toFixed(1)} s | ${(curlsUnzipMs / distributeMs).toFixed(2)}× | — |`);
    console.log(`| an agent's peak RSS (VmHWM) | ${(agentPeakRss / MIB).toFixed(0)} MiB | — | — | ≤ ${TARGET_RSS_MIB} MiB ${agentPeakRss / MIB <= TARGET_RSS_MIB ? 'met' : 'MISSED'} |`);
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--serve-child')) runServeChild(arg('--serve-child', ''));
else
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
