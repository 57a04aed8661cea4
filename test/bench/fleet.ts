// Fleet benchmark (`npm run bench:fleet`): one control plane in a child process, N simulated agents
// here (Enroll, Connect, Hello, heartbeats); prints connect time, Welcome latency and the child's
// steady CPU and RSS next to the targets. `--serve` is the child's own mode. Not a test: it never fails on slowness.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { credentials, Metadata, type ChannelOptions, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { adminV1, agentV1 } from '@pixelfleet/proto';
import { buildControlPlane, createLogger, loadControlPlaneConfig, type ControlPlane } from '@pixelfleet/control-plane';

const JOIN_TOKEN = 'bench-join-token-0123456789abcdef';
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const TARGET_AGENTS = 1000;
const TARGET_CONNECT_MS = 10_000;
const TARGET_CPU_PERCENT = 10;
const TARGET_RSS_MB = 300;
/** Linux USER_HZ: the unit of utime/stime in /proc/<pid>/stat. */
const CLK_TCK = 100;
const ENROLL_CONCURRENCY = 50;
const ENROLL_TIMEOUT_MS = 15_000;
/** Quiet time between the last Welcome and the steady window (the connect burst's tail). */
const SETTLE_MS = 2_000;
const CHILD_START_TIMEOUT_MS = 30_000;
const CHILD_STOP_TIMEOUT_MS = 10_000;
const LOOP_DELAY_RESOLUTION_MS = 10;
const STATS_TIMEOUT_MS = 15_000;

// ---------------------------------------------------------------------------------------------
// Messages between the bench (parent) and the control plane (child), over the IPC channel.

interface ServeOptions {
  dataDir: string;
  heartbeatSeconds: number;
}

type ToChild = { type: 'stats' } | { type: 'stop' };

interface ChildStats {
  liveStreams: number;
  byStatus: Record<string, number>;
  heapUsedMb: number;
  /** Event-loop delay since the last stats request, in ms. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

type FromChild = { type: 'ready'; grpcPort: number } | { type: 'stats'; stats: ChildStats } | { type: 'error'; message: string };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

// ---------------------------------------------------------------------------------------------
// Child mode: the control plane under test.

async function serve(options: ServeOptions): Promise<void> {
  const send = (m: FromChild) => process.send?.(m);
  const config = loadControlPlaneConfig({
    overrides: {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: 0 },
      dataDir: options.dataDir,
      adminToken: ADMIN_TOKEN,
      agentJoinToken: JOIN_TOKEN,
      logLevel: 'warn',
      workers: { heartbeatIntervalSeconds: options.heartbeatSeconds, leaseSeconds: 3 * options.heartbeatSeconds },
    },
  });
  // Logs go to stderr so nothing mixes with the parent's figures on stdout.
  const cp: ControlPlane = buildControlPlane(config, { logger: createLogger(config.logLevel, process.stderr) });
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  loopDelay.enable();

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    try {
      await cp.close();
    } finally {
      // The parent removes the dir too; this covers a parent that was killed outright.
      rmSync(options.dataDir, { recursive: true, force: true });
      process.exit(code);
    }
  };
  // The parent drives shutdown; losing it (crash, SIGKILL) must not leave us running.
  process.on('disconnect', () => void stop(0));
  process.on('SIGINT', () => void stop(130));
  process.on('SIGTERM', () => void stop(143));
  process.on('message', (m: unknown) => {
    if (!isRecord(m)) return;
    if (m.type === 'stop') void stop(0);
    if (m.type === 'stats') {
      const byStatus: Record<string, number> = {};
      for (const w of cp.registry.list()) byStatus[w.status] = (byStatus[w.status] ?? 0) + 1;
      const stats: ChildStats = {
        liveStreams: cp.registry.liveStreamCount(),
        byStatus,
        heapUsedMb: process.memoryUsage().heapUsed / 2 ** 20,
        // The histogram records whole sampling intervals; report only the lateness.
        loopDelayP99Ms: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_DELAY_RESOLUTION_MS),
        loopDelayMaxMs: Math.max(0, loopDelay.max / 1e6 - LOOP_DELAY_RESOLUTION_MS),
      };
      loopDelay.reset();
      send({ type: 'stats', stats });
    }
  });

  const started = await cp.start();
  send({ type: 'ready', grpcPort: started.grpcPort });
}

// ---------------------------------------------------------------------------------------------
// Parent mode: arguments.

interface BenchOptions {
  agents: number;
  steadySeconds: number;
  heartbeatSeconds: number;
  /** 0: one gRPC client (own TCP connection) per agent, like real agents; otherwise shared. */
  channels: number;
  cpuProf: boolean;
}

function parseArgs(argv: readonly string[]): BenchOptions {
  const options: BenchOptions = { agents: TARGET_AGENTS, steadySeconds: 30, heartbeatSeconds: 10, channels: 0, cpuProf: false };
  const intFlag = (name: string, value: string | undefined, min: number): number => {
    const n = Number(value);
    if (value === undefined || !Number.isInteger(n) || n < min) throw new Error(`${name} needs an integer >= ${min}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    switch (flag) {
      case '--agents':
        options.agents = intFlag(flag, argv[++i], 1);
        break;
      case '--steady-seconds':
        options.steadySeconds = intFlag(flag, argv[++i], 1);
        break;
      case '--heartbeat-seconds':
        options.heartbeatSeconds = intFlag(flag, argv[++i], 1);
        break;
      case '--channels':
        options.channels = intFlag(flag, argv[++i], 0);
        break;
      case '--cpu-prof':
        options.cpuProf = true;
        break;
      default:
        throw new Error(
          `unknown argument ${flag ?? ''}; usage: fleet.ts [--agents N] [--steady-seconds S] [--heartbeat-seconds H] [--channels K] [--cpu-prof]`,
        );
    }
  }
  return options;
}

// ---------------------------------------------------------------------------------------------
// Parent mode: the control plane child.

interface ChildHandle {
  proc: ChildProcess;
  pid: number;
  grpcPort: number;
  stats(): Promise<ChildStats>;
  /** Asks the child to close cleanly; SIGKILL after a deadline. Resolves when it has exited. */
  stop(): Promise<void>;
}

function startChild(dataDir: string, heartbeatSeconds: number, cpuProfDir: string | undefined): Promise<ChildHandle> {
  const self = fileURLToPath(import.meta.url);
  const repoRoot = resolve(dirname(self), '..', '..');
  const serveOptions: ServeOptions = { dataDir, heartbeatSeconds };
  // No `source` condition: the child's control plane is the compiled build (dist), as production
  // runs it; tsx only loads this file.
  const nodeArgs = ['--import', 'tsx', ...(cpuProfDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', cpuProfDir])];
  const proc = spawn(process.execPath, [...nodeArgs, self, '--serve', JSON.stringify(serveOptions)], {
    cwd: repoRoot,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  const statsWaiters: { res: (s: ChildStats) => void; rej: (e: Error) => void }[] = [];
  proc.once('exit', () => {
    for (const w of statsWaiters.splice(0)) w.rej(new Error('the control plane child exited'));
  });

  return new Promise((resolveStart, rejectStart) => {
    const timer = setTimeout(() => rejectStart(new Error('the control plane child did not start in time')), CHILD_START_TIMEOUT_MS);
    proc.once('error', (err) => {
      clearTimeout(timer);
      rejectStart(err);
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      rejectStart(new Error(`the control plane child exited early (code ${String(code)}, signal ${String(signal)})`));
    });
    proc.on('message', (raw: unknown) => {
      if (!isRecord(raw)) return;
      const m = raw as FromChild;
      if (m.type === 'ready') {
        clearTimeout(timer);
        if (proc.pid === undefined) {
          rejectStart(new Error('the control plane child has no pid'));
          return;
        }
        resolveStart({
          proc,
          pid: proc.pid,
          grpcPort: m.grpcPort,
          stats: () =>
            new Promise<ChildStats>((res, rej) => {
              if (!proc.connected) {
                rej(new Error('the control plane child is gone'));
                return;
              }
              const timer = setTimeout(() => rej(new Error('the control plane child did not answer a stats request')), STATS_TIMEOUT_MS);
              statsWaiters.push({
                res: (s) => {
                  clearTimeout(timer);
                  res(s);
                },
                rej: (e) => {
                  clearTimeout(timer);
                  rej(e);
                },
              });
              proc.send({ type: 'stats' } satisfies ToChild);
            }),
          async stop() {
            if (proc.exitCode !== null || proc.signalCode !== null) return;
            if (proc.connected) proc.send({ type: 'stop' } satisfies ToChild);
            const kill = setTimeout(() => proc.kill('SIGKILL'), CHILD_STOP_TIMEOUT_MS);
            await exited;
            clearTimeout(kill);
          },
        });
      } else if (m.type === 'stats') {
        statsWaiters.shift()?.res(m.stats);
      } else {
        clearTimeout(timer);
        rejectStart(new Error(`control plane child: ${m.message}`));
      }
    });
  });
}

/** utime + stime of a process, in seconds of CPU. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start at field 3 (state).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / CLK_TCK;
}

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] === undefined ? NaN : Number(m[1]) / 1024;
}

function openFilesLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return m?.[1] === undefined || m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

// ---------------------------------------------------------------------------------------------
// Parent mode: simulated agents.

const CLIENT_OPTIONS: ChannelOptions = {
  'grpc.keepalive_time_ms': 20_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
};

interface SimAgent {
  index: number;
  client: agentV1.AgentServiceClient;
  workerId: string;
  workerToken: string;
  call?: ClientDuplexStream<agentV1.ConnectRequest, agentV1.ConnectResponse>;
  heartbeat?: NodeJS.Timeout;
  welcomeLatencyMs?: number;
}

function bearer(token: string): Metadata {
  const md = new Metadata({ waitForReady: true });
  md.set('authorization', `Bearer ${token}`);
  return md;
}

function enrollOne(client: agentV1.AgentServiceClient, index: number): Promise<agentV1.EnrollResponse> {
  return new Promise((res, rej) => {
    client.enroll(
      { hostname: `bench-${index}`, region: 'europe', slots: 1, agentVersion: 'bench' },
      bearer(JOIN_TOKEN),
      { deadline: new Date(Date.now() + ENROLL_TIMEOUT_MS) },
      (err, r) => (err ? rej(err) : res(r)),
    );
  });
}

/** Runs fn over 0..count-1 with at most `limit` in flight. */
async function pool(count: number, limit: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

interface Counters {
  heartbeatsSent: number;
  streamErrors: number;
  lastStreamError?: string;
  closing: boolean;
}

/**
 * Opens every agent's Connect stream at once; resolves with the ms until the last Welcome and
 * the ms this process spent opening the streams, or rejects on timeout.
 */
function connectAll(agents: readonly SimAgent[], counters: Counters, timeoutMs: number): Promise<{ connectMs: number; openMs: number }> {
  return new Promise((res, rej) => {
    let welcomed = 0;
    let openMs = 0;
    const t0 = performance.now();
    const timer = setTimeout(() => rej(new Error(`only ${welcomed}/${agents.length} Welcomes within ${timeoutMs} ms`)), timeoutMs);
    for (const a of agents) {
      const sentAt = performance.now();
      const call = a.client.connect(bearer(a.workerToken));
      a.call = call;
      call.on('data', (m: agentV1.ConnectResponse) => {
        if (m.msg?.$case !== 'welcome' || a.welcomeLatencyMs !== undefined) return;
        a.welcomeLatencyMs = performance.now() - sentAt;
        const intervalMs = Math.max(100, m.msg.value.heartbeatIntervalMs);
        a.heartbeat = setInterval(() => {
          call.write({ msg: { $case: 'heartbeat', value: { sentAt: new Date(), runningSessions: 0, sessionActivity: [] } } } satisfies agentV1.ConnectRequest);
          counters.heartbeatsSent += 1;
        }, intervalMs);
        welcomed += 1;
        if (welcomed === agents.length) {
          clearTimeout(timer);
          res({ connectMs: performance.now() - t0, openMs });
        }
      });
      call.on('error', (err: ServiceError) => {
        clearInterval(a.heartbeat);
        if (counters.closing) return;
        counters.streamErrors += 1;
        counters.lastStreamError = `${a.workerId}: ${err.code} ${err.details}`;
      });
      call.on('end', () => clearInterval(a.heartbeat));
      call.write({
        msg: {
          $case: 'hello',
          value: { workerId: a.workerId, agentVersion: 'bench', region: 'europe', slots: 1, lastAckedSeq: 0, runningSessions: [], cachedBuilds: [], hostname: '', instanceId: '' },
        },
      } satisfies agentV1.ConnectRequest);
    }
    openMs = performance.now() - t0;
  });
}

function listWorkers(grpcAddress: string): Promise<adminV1.Worker[]> {
  const admin = new adminV1.AdminServiceClient(grpcAddress, credentials.createInsecure());
  return new Promise<adminV1.Worker[]>((res, rej) => {
    admin.listWorkers({}, bearer(ADMIN_TOKEN), { deadline: new Date(Date.now() + 15_000) }, (err, r) => (err ? rej(err) : res(r.workers)));
  }).finally(() => admin.close());
}

const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const verdict = (ok: boolean) => (ok ? 'MET' : 'MISSED');

async function bench(options: BenchOptions): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-fleet-'));
  const cpuProfDir = options.cpuProf ? mkdtempSync(join(tmpdir(), 'pf-bench-prof-')) : undefined;
  let child: ChildHandle | undefined;
  const agents: SimAgent[] = [];
  const clients = new Set<agentV1.AgentServiceClient>();
  const counters: Counters = { heartbeatsSent: 0, streamErrors: 0, closing: false };

  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      counters.closing = true;
      for (const a of agents) {
        clearInterval(a.heartbeat);
        a.call?.cancel();
      }
      for (const c of clients) c.close();
      try {
        await child?.stop();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    })());
  const onSignal = (signal: NodeJS.Signals) => {
    if (cleaning === undefined) process.stderr.write(`\n${signal}: stopping the control plane and removing ${dataDir}\n`);
    void cleanup().finally(() => process.exit(130));
  };
  // `on`, not `once`: the tsx CLI may relay a second SIGINT, and with no listener left the
  // process would exit before the cleanup finished.
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    // Each agent's own client is one TCP connection here and one on the control plane's side.
    const fdLimit = openFilesLimit();
    let channels = options.channels;
    if (channels === 0 && fdLimit < options.agents + 256) {
      channels = Math.max(1, Math.floor((fdLimit - 256) / 2));
      process.stderr.write(`open-files limit ${fdLimit} is too low for ${options.agents} connections; sharing ${channels} channels (raise with ulimit -n)\n`);
    }
    const perAgent = channels === 0 || channels >= options.agents;

    child = await startChild(dataDir, options.heartbeatSeconds, cpuProfDir);
    const grpcAddress = `127.0.0.1:${child.grpcPort}`;
    const idleRss = rssMb(child.pid);
    console.log(
      `control plane pid ${child.pid} on ${grpcAddress}; ${fmt(options.agents)} agents, ` +
        `${perAgent ? 'one connection per agent' : `${channels} shared connections`}, heartbeat ${options.heartbeatSeconds} s, lease ${3 * options.heartbeatSeconds} s`,
    );

    // 1. Enroll (not timed against the target).
    const shared = perAgent ? [] : Array.from({ length: channels }, () => new agentV1.AgentServiceClient(grpcAddress, credentials.createInsecure(), CLIENT_OPTIONS));
    for (const c of shared) clients.add(c);
    const enrollStart = performance.now();
    await pool(options.agents, ENROLL_CONCURRENCY, async (i) => {
      // A local subchannel pool gives every agent its own TCP connection, as on real workers.
      const client =
        shared[i % Math.max(1, shared.length)] ??
        new agentV1.AgentServiceClient(grpcAddress, credentials.createInsecure(), { ...CLIENT_OPTIONS, 'grpc.use_local_subchannel_pool': 1 });
      clients.add(client);
      const r = await enrollOne(client, i);
      agents.push({ index: i, client, workerId: r.workerId, workerToken: r.workerToken });
    });
    const enrollMs = performance.now() - enrollStart;
    console.log(`enrolled ${fmt(agents.length)} agents in ${fmt(enrollMs)} ms; connecting...`);

    // 2. Connect all at once: Hello → Welcome.
    const cpuBeforeConnect = cpuSeconds(child.pid);
    const ownCpuBeforeConnect = process.cpuUsage();
    const { connectMs, openMs } = await connectAll(agents, counters, Math.max(60_000, options.agents * 30));
    const cpuConnect = cpuSeconds(child.pid) - cpuBeforeConnect;
    const ownCpu = process.cpuUsage(ownCpuBeforeConnect);
    const ownCpuConnect = (ownCpu.user + ownCpu.system) / 1e6;
    const latencies = agents.map((a) => a.welcomeLatencyMs ?? NaN).sort((x, y) => x - y);
    const afterConnect = await child.stats();
    console.log(`all ${fmt(agents.length)} welcomed in ${fmt(connectMs)} ms; steady window ${options.steadySeconds} s...`);

    // 3. Steady state: heartbeats only.
    await sleep(SETTLE_MS);
    await child.stats(); // resets the child's event-loop delay histogram
    const hbBefore = counters.heartbeatsSent;
    const cpu0 = cpuSeconds(child.pid);
    const t0 = performance.now();
    const rssSamples: number[] = [];
    const steadyEnd = t0 + options.steadySeconds * 1000;
    while (performance.now() < steadyEnd) {
      rssSamples.push(rssMb(child.pid));
      await sleep(Math.min(1_000, Math.max(0, steadyEnd - performance.now())));
    }
    const steadySeconds = (performance.now() - t0) / 1000;
    const cpuPercent = ((cpuSeconds(child.pid) - cpu0) / steadySeconds) * 100;
    const steadyStats = await child.stats();
    const rssEnd = rssMb(child.pid);
    rssSamples.push(rssEnd);
    const rssPeak = Math.max(...rssSamples);
    const heartbeats = counters.heartbeatsSent - hbBefore;

    // 4. Verify through the admin API that every worker is connected.
    const workers = await listWorkers(grpcAddress);
    const connected = workers.filter((w) => w.status === 'connected').length;

    const connectOk = connectMs <= TARGET_CONNECT_MS;
    const lines = [
      '',
      '=== Pixelfleet fleet benchmark ===',
      `agents                      ${fmt(options.agents)} (${perAgent ? 'one connection each' : `${channels} shared connections`})`,
      `enroll all (not timed)      ${fmt(enrollMs)} ms`,
      `connect time for all        ${fmt(connectMs)} ms          target: ${fmt(TARGET_AGENTS)} agents within ${fmt(TARGET_CONNECT_MS / 1000)} s -> ${verdict(connectOk)}${options.agents < TARGET_AGENTS ? ` (only ${fmt(options.agents)} agents run)` : ''}`,
      `  of which opening streams  ${fmt(openMs)} ms in the agents' process (counts in Welcome latency too)`,
      `Welcome latency             p50 ${fmt(percentile(latencies, 50), 1)} ms, p99 ${fmt(percentile(latencies, 99), 1)} ms, max ${fmt(percentile(latencies, 100), 1)} ms`,
      `CPU for the connect burst   control plane ${fmt(cpuConnect, 2)} s, simulated agents ${fmt(ownCpuConnect, 2)} s (${os.availableParallelism()} cores shared)`,
      `steady CPU                  ${fmt(cpuPercent, 2)} % of one core over ${fmt(steadySeconds, 1)} s   target: under ${TARGET_CPU_PERCENT} % -> ${verdict(cpuPercent < TARGET_CPU_PERCENT)}`,
      `RSS                         ${fmt(rssEnd, 1)} MB at end, ${fmt(rssPeak, 1)} MB peak (idle before agents ${fmt(idleRss, 1)} MB)   target: under ${TARGET_RSS_MB} MB -> ${verdict(rssPeak < TARGET_RSS_MB)}`,
      `heap used                   ${fmt(afterConnect.heapUsedMb, 1)} MB after connect, ${fmt(steadyStats.heapUsedMb, 1)} MB after steady`,
      `event-loop lag, steady      p99 ${fmt(steadyStats.loopDelayP99Ms, 1)} ms, max ${fmt(steadyStats.loopDelayMaxMs, 1)} ms`,
      `heartbeats in steady window ${fmt(heartbeats)} (${fmt(heartbeats / steadySeconds, 1)}/s)`,
      `workers connected           ${fmt(connected)}/${fmt(options.agents)} (admin ListWorkers; live streams ${fmt(steadyStats.liveStreams)}; statuses ${JSON.stringify(steadyStats.byStatus)})`,
      `stream errors               ${fmt(counters.streamErrors)}${counters.lastStreamError === undefined ? '' : ` (last: ${counters.lastStreamError})`}`,
    ];
    console.log(lines.join('\n'));
    await cleanup();
    if (cpuProfDir !== undefined) console.log(`CPU profile of the control plane: ${cpuProfDir}`);
  } catch (err) {
    await cleanup();
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

// ---------------------------------------------------------------------------------------------

const args = process.argv.slice(2);
if (args[0] === '--serve') {
  const parsed: unknown = JSON.parse(args[1] ?? '{}');
  if (!isRecord(parsed) || typeof parsed.dataDir !== 'string' || typeof parsed.heartbeatSeconds !== 'number') {
    throw new Error('--serve needs {"dataDir": string, "heartbeatSeconds": number}');
  }
  serve({ dataDir: parsed.dataDir, heartbeatSeconds: parsed.heartbeatSeconds }).catch((err: unknown) => {
    process.send?.({ type: 'error', message: err instanceof Error ? err.message : String(err) } satisfies FromChild);
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
} else {
  const started = Date.now();
  Promise.resolve()
    .then(() => bench(parseArgs(args)))
    .then(
      () => {
        console.log(`done in ${fmt((Date.now() - started) / 1000, 1)} s`);
        process.exit(0);
      },
      (err: unknown) => {
        process.stderr.write(`fleet benchmark failed: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
}
