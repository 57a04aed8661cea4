// The agent as the end-to-end tests run it: the one-file bundle `npm run build` writes
// (dist/agent.cjs, the file the Windows zip carries) as a child process, `node --enable-source-maps
// dist/agent.cjs run --config <file>`, against a test control plane. What the tests know of it comes from the control
// plane (its worker, its events) and from the process's own output.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach } from 'vitest';
import { nextEvent, TEST_JOIN_TOKEN, type TestControlPlane } from './control-plane';
import { startBundle, type FleetProcess } from './fleet-processes';

export interface BundledAgentOptions {
  hostname?: string;
  region?: 'us-east-1' | 'europe' | 'asia-pacific';
  slots?: number;
  /** launcher.command: the argv run instead of an Unreal exe (e.g. the mock app); unset: the build's own binary. */
  launcherCommand?: string[];
  /** Merged over the agent's config file. */
  config?: Record<string, unknown>;
  /** How long to wait for the control plane's worker.connected (default 30 s). */
  connectTimeoutMs?: number;
}

export interface BundledAgent {
  process: FleetProcess;
  /** The worker id the control plane gave it (its worker.connected event). */
  workerId: string;
  hostname: string;
  dataDir: string;
  configFile: string;
  /** SIGTERM (the agent stops its apps), SIGKILL after 10 s; its exit code or signal; removes its folder. */
  stop(): Promise<number | string>;
}

const started: BundledAgent[] = [];

/**
 * Writes the agent's config file (plaintext to the loopback test control plane, ICE on 127.0.0.1,
 * debug logs), starts the bundle and resolves once the control plane records the worker's
 * worker.connected. Rejects with the agent's output when it exits or does not connect first.
 */
export async function startBundledAgent(t: TestControlPlane, o: BundledAgentOptions = {}): Promise<BundledAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-bundled-agent-'));
  const hostname = o.hostname ?? 'bundled-worker';
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'agent.json');
  const config = {
    controlPlane: t.started.grpcAddress,
    joinToken: TEST_JOIN_TOKEN,
    region: o.region ?? 'europe',
    slots: o.slots ?? 1,
    dataDir,
    hostname,
    logLevel: 'debug',
    ice: { hostAddresses: ['127.0.0.1'] },
    ...(o.launcherCommand ? { launcher: { command: o.launcherCommand } } : {}),
    ...o.config,
  };
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const timeoutMs = o.connectTimeoutMs ?? 30_000;
  const connected = nextEvent(t.cp, (e) => e.type === 'worker.connected' && e.workerId !== undefined && t.cp.registry.get(e.workerId).hostname === hostname, timeoutMs);
  const p = startBundle(['run', '--config', configFile]);
  let workerId: string;
  try {
    workerId = await Promise.race([
      connected.then((e) => e.workerId!),
      p.exited.then((code) => {
        throw new Error(`the bundled agent exited (${code}) before it connected`);
      }),
    ]);
  } catch (err) {
    await p.kill();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}; its output:\n${p.text()}`);
  }
  const agent: BundledAgent = {
    process: p,
    workerId,
    hostname,
    dataDir,
    configFile,
    async stop() {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
        await p.exited;
        clearTimeout(timer);
      }
      started.splice(started.indexOf(agent) >>> 0, 1);
      rmSync(dir, { recursive: true, force: true });
      return p.exited;
    },
  };
  started.push(agent);
  return agent;
}

/** The last lines of what a bundled agent wrote to stdout and stderr. */
export function outputTail(agent: BundledAgent, lines = 80): string {
  return agent.process.text().trimEnd().split('\n').slice(-lines).join('\n');
}

/**
 * Registers (call it at a test file's top level) a hook that prints the last lines of each bundled
 * agent's output when a test fails, so the failure shows what the agent said meanwhile.
 */
export function printAgentOutputOnFailure(): void {
  beforeEach(({ onTestFailed }) => {
    onTestFailed(() => {
      for (const a of started) console.error(`--- bundled agent ${a.hostname} (${a.workerId}), last lines of its output:\n${outputTail(a)}`);
    });
  });
}
