// Start-up benchmark of the production binaries (`npm run bench:startup`): `pixelfleet serve` and
// `pixelfleet-agent run` as real processes, compiled (bin/*.mjs → dist/, what operators run) against
// the TypeScript sources through tsx's loader (the launchers before the release build: tsx's
// register(), then src/main.ts). For each, --runs times (default 5), alternating the two ways so that
// load on the machine hits both alike: time from spawn to ready (serve: its "HTTP <origin>" line,
// printed once both listeners are up; agent: "connected to the control plane", against one compiled
// control plane), and the process's resident memory at that moment (VmRSS) and its peak (VmHWM),
// from /proc. Prints median, min and max. Linux only. Not a test.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AGENT_BIN, cleanEnv, PIXELFLEET_BIN, REPO_ROOT } from '../support/cli-process';
import { memoryMb } from './bench-support';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
const RUNS = Number(arg('--runs', '5'));
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const JOIN_TOKEN = 'bench-join-token-0123456789abcdef';

type Way = 'tsx' | 'compiled';
type Binary = 'pixelfleet serve' | 'pixelfleet-agent run';

interface Sample {
  readyMs: number;
  rssMb: number;
  peakMb: number;
}

/** node arguments that run a binary one way, before its own arguments. */
function nodeArgs(binary: Binary, way: Way): string[] {
  if (way === 'compiled') return [binary === 'pixelfleet serve' ? PIXELFLEET_BIN : AGENT_BIN];
  const [pkg, fn] = binary === 'pixelfleet serve' ? ['control-plane', 'runControlPlaneCli'] : ['agent', 'runAgentCli'];
  const main = pathToFileURL(join(REPO_ROOT, pkg, 'src/main.ts')).href;
  // The launchers as they were: tsx's ESM loader registered, then the TypeScript entry point.
  const launcher = `import { register } from 'tsx/esm/api'; register(); const m = await import(${JSON.stringify(main)}); process.exitCode = await m.${fn}(process.argv.slice(1));`;
  return ['--conditions=source', '--input-type=module', '-e', launcher];
}

/** Starts the binary, waits for its ready line, samples it, stops it (SIGTERM) and waits for its exit. */
async function sample(binary: Binary, way: Way, args: string[], ready: RegExp, onReady?: (m: RegExpMatchArray) => void): Promise<{ sample: Sample; stop: () => Promise<void> }> {
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs(binary, way), ...args], { env: cleanEnv(), cwd: REPO_ROOT });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let text = '';
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${binary} (${way}): not ready within 30 s:\n${text}`)), 30_000);
    const check = (d: Buffer) => {
      text += d.toString();
      const m = ready.exec(text);
      if (m === null) return;
      clearTimeout(timer);
      resolve(m);
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.once('exit', (code) => reject(new Error(`${binary} (${way}) exited ${code}:\n${text}`)));
  });
  const readyMs = performance.now() - started;
  const memory = memoryMb(child.pid!);
  onReady?.(match);
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  return { sample: { readyMs, ...memory }, stop };
}

function serveConfig(dir: string): string {
  const dataDir = join(dir, `cp-${Math.random().toString(36).slice(2)}`);
  const file = join(dir, `${dataDir.split('/').pop()}.json`);
  writeFileSync(file, JSON.stringify({ http: { host: '127.0.0.1', port: 0 }, grpc: { host: '127.0.0.1', port: 0 }, dataDir, adminToken: ADMIN_TOKEN, agentJoinToken: JOIN_TOKEN, network: { allowPrivateUrls: true }, logLevel: 'info' }));
  return file;
}

function agentConfig(dir: string, grpcAddress: string, n: number): string {
  const dataDir = join(dir, `agent-${n}`);
  mkdirSync(dataDir);
  const file = join(dir, `agent-${n}.json`);
  writeFileSync(file, JSON.stringify({ controlPlane: grpcAddress, joinToken: JOIN_TOKEN, region: 'europe', slots: 1, dataDir, hostname: `bench-${n}`, logLevel: 'info' }));
  return file;
}

function summary(samples: Sample[]): string {
  const stat = (values: number[], digits: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    return `${median.toFixed(digits)} (${sorted[0]!.toFixed(digits)}–${sorted.at(-1)!.toFixed(digits)})`;
  };
  return `${stat(samples.map((s) => s.readyMs), 0).padEnd(18)} ${stat(samples.map((s) => s.rssMb), 0).padEnd(16)} ${stat(samples.map((s) => s.peakMb), 0)}`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-bench-startup-'));
  const results = new Map<string, Sample[]>();
  const add = (key: string, s: Sample) => results.set(key, [...(results.get(key) ?? []), s]);
  try {
    // One compiled control plane for the agents to connect to.
    let grpcAddress = '';
    const cp = await sample('pixelfleet serve', 'compiled', ['serve', '--config', serveConfig(dir)], /gRPC +(127\.0\.0\.1:\d+)/, (m) => (grpcAddress = m[1]!));
    let n = 0;
    for (let run = 0; run < RUNS; run++) {
      for (const way of (run % 2 === 0 ? ['tsx', 'compiled'] : ['compiled', 'tsx']) as Way[]) {
        const serve = await sample('pixelfleet serve', way, ['serve', '--config', serveConfig(dir)], /HTTP +http:\/\/127\.0\.0\.1:\d+/);
        await serve.stop();
        add(`pixelfleet serve|${way}`, serve.sample);
        const agent = await sample('pixelfleet-agent run', way, ['run', '--config', agentConfig(dir, grpcAddress, n++)], /connected to the control plane/);
        await agent.stop();
        add(`pixelfleet-agent run|${way}`, agent.sample);
      }
    }
    await cp.stop();
    console.log(`start-up of the production binaries, ${RUNS} runs each, Node ${process.version}: median (min–max)`);
    console.log(`${'binary'.padEnd(22)}${'way'.padEnd(10)}${'ready ms'.padEnd(19)}${'RSS MB'.padEnd(17)}peak RSS MB`);
    for (const [key, samples] of results) {
      const [binary, way] = key.split('|') as [string, string];
      console.log(`${binary.padEnd(22)}${way.padEnd(10)}${summary(samples)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
