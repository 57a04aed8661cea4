// API benchmark (`npm run bench:api`): GET /projects/userStats/{projectId} with a valid key on
// the real control plane (SQLite, auth, access check, live counts, fair-use hook, info-level
// logging to /dev/null) against a bare fastify route returning the same JSON, in the same run.
// Throughput comes from autocannon in a child process; the fixed-rate latency from an open-loop
// paced generator in another child (this file with --paced-child). Prints figures. Not a test.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const AUTOCANNON = require.resolve('autocannon/autocannon.js');
const DURATION_S = Number(process.argv.find((a) => a.startsWith('--seconds='))?.slice('--seconds='.length) ?? 10);
/** Connections of the throughput runs (as fast as it goes). */
const CONNECTIONS = 50;
const FIXED_RATE = 1000;
/**
 * Connections of the paced generator: at 1,000 req/s and sub-millisecond answers one or two are
 * busy at a time; ten leave room for a stall without the generator itself queueing requests.
 */
const PACED_CONNECTIONS = 10;
/** Paced requests scheduled in this first stretch are sent but not counted (JIT, connections). */
const PACED_WARMUP_S = 1;
const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 10;

interface Result {
  reqPerSec: number;
  requests: number;
  p99: number;
  p50: number;
  non2xx: number;
  errors: number;
  /** CPU time of this (server) process per answered request, in µs (user + system). */
  cpuUsPerReq: number;
}

/** autocannon in a child process; the server's CPU is measured around it. */
function autocannon(url: string, args: string[], seconds = DURATION_S): Promise<Result> {
  return new Promise((resolve, reject) => {
    const cpuBefore = process.cpuUsage();
    const child = spawn(process.execPath, [AUTOCANNON, '-j', '-c', String(CONNECTIONS), '-d', String(seconds), ...args, url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      const cpu = process.cpuUsage(cpuBefore);
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`));
      const r = JSON.parse(out) as { requests: { average: number; total: number }; latency: { p99: number; p50: number }; non2xx: number; errors: number };
      resolve({
        reqPerSec: r.requests.average,
        requests: r.requests.total,
        p99: r.latency.p99,
        p50: r.latency.p50,
        non2xx: r.non2xx,
        errors: r.errors,
        cpuUsPerReq: (cpu.user + cpu.system) / Math.max(1, r.requests.total),
      });
    });
  });
}

interface PacedResult {
  /** Requests counted (scheduled after the warm-up). */
  counted: number;
  reqPerSec: number;
  /** Latency from each request's scheduled send time to its complete answer, in ms. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** How late requests left the generator (timer slack, waiting for a free connection), p99 in ms. */
  sendLagP99: number;
  maxInFlight: number;
  non2xx: number;
  errors: number;
  /** Server CPU during the counted stretch, in % of one core. */
  serverCpuPercent?: number;
}

/** The paced generator in a child process (this file, run with the same tsx loader). */
function paced(url: string, rate = FIXED_RATE, seconds = DURATION_S): Promise<PacedResult> {
  return new Promise((resolve, reject) => {
    const args = [...process.execArgv, fileURLToPath(import.meta.url), '--paced-child', url, String(rate), String(seconds), String(PACED_CONNECTIONS)];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    let out = '';
    let cpuBefore: NodeJS.CpuUsage | undefined;
    let cpuPercent: number | undefined;
    child.on('message', (m: { phase: string }) => {
      if (m.phase === 'counting') cpuBefore = process.cpuUsage();
      if (m.phase === 'done' && cpuBefore) {
        const cpu = process.cpuUsage(cpuBefore);
        cpuPercent = ((cpu.user + cpu.system) / 1000 / (seconds * 1000)) * 100;
      }
    });
    child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`paced generator exited with ${code}`));
      const r = JSON.parse(out) as PacedResult;
      resolve(cpuPercent === undefined ? r : { ...r, serverCpuPercent: cpuPercent });
    });
  });
}

/**
 * Open-loop load: request n is due at start + n / rate whatever happened to earlier ones, and its
 * latency runs from that due time (a stalled server or a late timer counts; no coordinated
 * omission). Keep-alive connections, one request in flight on each; a due request waits for a
 * free connection. Prints one JSON line.
 */
async function pacedChild(url: string, rate: number, seconds: number, connections: number): Promise<void> {
  const target = new URL(url);
  const request = Buffer.from(`GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: keep-alive\r\n\r\n`);
  const intervalMs = 1000 / rate;
  const warmupCount = Math.round(PACED_WARMUP_S * rate);
  const total = warmupCount + Math.round(seconds * rate);
  const latencies: number[] = [];
  const sendLags: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let completed = 0;
  const due: { n: number; at: number }[] = [];

  interface Conn {
    socket: Socket;
    busy: { n: number; at: number } | undefined;
    buf: Buffer;
  }
  const conns: Conn[] = await Promise.all(
    Array.from({ length: connections }, () => new Promise<Conn>((resolve, reject) => {
      const socket = connect(Number(target.port), target.hostname, () => resolve(conn));
      const conn: Conn = { socket, busy: undefined, buf: Buffer.alloc(0) };
      socket.setNoDelay(true);
      socket.once('error', reject);
      socket.on('data', (chunk: Buffer) => onData(conn, chunk));
    })),
  );

  let start = 0;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));

  function onData(conn: Conn, chunk: Buffer): void {
    conn.buf = conn.buf.length === 0 ? chunk : Buffer.concat([conn.buf, chunk]);
    const headerEnd = conn.buf.indexOf('\r\n\r\n');
    if (headerEnd < 0 || !conn.busy) return;
    const head = conn.buf.subarray(0, headerEnd).toString('latin1');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (conn.buf.length < headerEnd + 4 + length) return;
    const now = performance.now();
    const status = Number(head.slice(9, 12));
    const { n, at } = conn.busy;
    if (n >= warmupCount) {
      latencies.push(now - at);
      if (status < 200 || status > 299) non2xx += 1;
    }
    conn.buf = conn.buf.subarray(headerEnd + 4 + length);
    conn.busy = undefined;
    inFlight -= 1;
    completed += 1;
    dispatch();
    if (completed === total) finish();
  }

  function dispatch(): void {
    for (const conn of conns) {
      if (due.length === 0) return;
      if (conn.busy) continue;
      const next = due.shift()!;
      conn.busy = next;
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (next.n >= warmupCount) sendLags.push(performance.now() - next.at);
      conn.socket.write(request);
    }
  }

  let scheduled = 0;
  start = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    while (scheduled < total && start + scheduled * intervalMs <= now) {
      if (scheduled === warmupCount) process.send?.({ phase: 'counting' });
      due.push({ n: scheduled, at: start + scheduled * intervalMs });
      scheduled += 1;
    }
    if (scheduled >= total) clearInterval(timer);
    dispatch();
  }, 1);
  for (const c of conns) c.socket.on('error', () => (errors += 1));
  const countedStart = start + warmupCount * intervalMs;
  // Answers still missing 10 s after the last due time count as errors.
  await Promise.race([finished, new Promise((r) => setTimeout(r, (PACED_WARMUP_S + seconds + 10) * 1000).unref())]);
  process.send?.({ phase: 'done' });
  const elapsedS = (performance.now() - countedStart) / 1000;
  for (const c of conns) c.socket.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  const pct = (xs: number[], q: number) => (xs.length === 0 ? NaN : xs[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!);
  const lags = sendLags.sort((a, b) => a - b);
  const result: PacedResult = {
    counted: sorted.length,
    reqPerSec: sorted.length / elapsedS,
    p50: pct(sorted, 0.5),
    p99: pct(sorted, 0.99),
    p999: pct(sorted, 0.999),
    max: sorted[sorted.length - 1] ?? NaN,
    sendLagP99: pct(lags, 0.99),
    maxInFlight,
    non2xx,
    errors: errors + (total - completed),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.disconnect?.();
}

async function main(): Promise<void> {
  const { default: Fastify } = await import('fastify');
  const { default: pino } = await import('pino');
  const { buildControlPlane, createLogger, loadControlPlaneConfig } = await import('@pixelfleet/control-plane');
  const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-api-'));
  const config = loadControlPlaneConfig({
    overrides: {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: 0 },
      dataDir,
      adminToken: 'bench-admin-token-0123456789abcdef',
      agentJoinToken: 'bench-join-token-0123456789abcdef',
      // The fair-use hook still runs on every request; its bucket is big enough for the load.
      limits: { fairUseBurst: 10_000_000, fairUsePerSecond: 10_000_000, fairUseAddressBurst: 10_000_000, fairUseAddressPerSecond: 10_000_000 },
      logLevel: 'info',
    },
  });
  const cp = buildControlPlane(config, { logger: createLogger('info', pino.destination('/dev/null')) });
  const started = await cp.start();
  const user = await cp.accounts.createUser('bench@example.com');
  const apiKey = await cp.accounts.issueKey(user.userId);
  const project = await cp.accounts.createProject(user.userId, 'Bench', 'europe');
  const body = cp.sessions.counts(project.projectId);

  const bare = Fastify();
  bare.get('/api/projects/userStats/:projectId', () => body);
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const bareAddress = bare.server.address();
  const barePort = typeof bareAddress === 'object' && bareAddress !== null ? bareAddress.port : 0;

  const path = `/api/projects/userStats/${project.projectId}?userId=${user.userId}&apikey=${encodeURIComponent(apiKey)}`;
  const apiUrl = `${started.httpOrigin}${path}`;
  const bareUrl = `http://127.0.0.1:${barePort}${path}`;
  const healthUrl = `${started.httpOrigin}/healthz`;
  const check = await fetch(apiUrl);
  if (check.status !== 200) throw new Error(`userStats answered ${check.status}: ${await check.text()}`);

  console.log(`bench:api — ${os.cpus().length} cores, Node ${process.version}, ${DURATION_S} s per run; throughput: autocannon, ${CONNECTIONS} connections; fixed rate: paced open-loop generator, ${PACED_CONNECTIONS} connections, ${PACED_WARMUP_S} s warm-up (both in child processes)`);
  for (const url of [bareUrl, apiUrl, healthUrl]) await autocannon(url, [], 2); // warm-up (JIT, SQLite cache)
  const bareMax = await autocannon(bareUrl, []);
  const apiMax = await autocannon(apiUrl, []);
  // The same app's /healthz: the control plane's per-request cost (logger, metrics) without the API.
  const healthMax = await autocannon(healthUrl, []);
  const barePaced = await paced(bareUrl);
  const apiPaced = await paced(apiUrl);
  // autocannon -R for comparison with earlier figures: each connection fires its share of the
  // second back to back at the start of every second, so this measures bursts of 50, not a rate.
  const bareBurst = await autocannon(bareUrl, ['-R', String(FIXED_RATE)]);
  const apiBurst = await autocannon(apiUrl, ['-R', String(FIXED_RATE)]);

  const row = (name: string, r: Result) =>
    `${name.padEnd(34)} ${r.reqPerSec.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(3)} ms   p99 ${String(r.p99).padStart(3)} ms   server CPU ${r.cpuUsPerReq.toFixed(0).padStart(4)} µs/req   non-2xx ${r.non2xx}, errors ${r.errors}`;
  const ms = (x: number) => x.toFixed(2).padStart(6);
  const pacedRow = (name: string, r: PacedResult) =>
    `${name.padEnd(34)} ${r.reqPerSec.toFixed(0).padStart(6)} req/s   p50 ${ms(r.p50)}   p99 ${ms(r.p99)}   p99.9 ${ms(r.p999)}   max ${ms(r.max)} ms   send lag p99 ${ms(r.sendLagP99)} ms   in flight ≤ ${r.maxInFlight}   server CPU ${(r.serverCpuPercent ?? NaN).toFixed(1)} %   non-2xx ${r.non2xx}, errors ${r.errors}`;
  console.log('\nThroughput (as fast as it goes)');
  console.log(row('bare fastify route', bareMax));
  console.log(row('userStats (auth + SQLite + counts)', apiMax));
  console.log(row('control plane /healthz (same app)', healthMax));
  const ratio = apiMax.reqPerSec / bareMax.reqPerSec;
  console.log(`ratio userStats / bare: ${(ratio * 100).toFixed(1)} %   (target ≥ ${TARGET_RATIO * 100} %: ${ratio >= TARGET_RATIO ? 'met' : 'MISSED'})`);
  console.log(`ratio userStats / control plane /healthz: ${((apiMax.reqPerSec / healthMax.reqPerSec) * 100).toFixed(1)} %`);
  console.log(`server CPU per request, bare / userStats: ${((bareMax.cpuUsPerReq / apiMax.cpuUsPerReq) * 100).toFixed(1)} %`);
  console.log(`\nFixed rate ${FIXED_RATE} req/s, paced (latency from each request's due time)`);
  console.log(pacedRow('bare fastify route', barePaced));
  console.log(pacedRow('userStats (auth + SQLite + counts)', apiPaced));
  console.log(`userStats p99 at ${FIXED_RATE} req/s: ${apiPaced.p99.toFixed(2)} ms   (target ≤ ${TARGET_P99_MS} ms: ${apiPaced.p99 <= TARGET_P99_MS ? 'met' : 'MISSED'})`);
  console.log(`\nautocannon -R ${FIXED_RATE}, ${CONNECTIONS} connections (bursts at each second's start; earlier figures)`);
  console.log(row('bare fastify route', bareBurst));
  console.log(row('userStats (auth + SQLite + counts)', apiBurst));

  await bare.close();
  await cp.close();
  rmSync(dataDir, { recursive: true, force: true });
}

const childAt = process.argv.indexOf('--paced-child');
const run =
  childAt >= 0
    ? pacedChild(process.argv[childAt + 1] ?? '', Number(process.argv[childAt + 2]), Number(process.argv[childAt + 3]), Number(process.argv[childAt + 4]))
    : main();
run.catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
