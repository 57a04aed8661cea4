// A streaming fleet of real processes for chaos tests and bench:restart: `pixelfleet serve`, one
// `pixelfleet-agent run`, and a customer's Linux build (its binary is the mock Unreal app: real
// H.264) submitted through upload-file and live on the agent, ready for viewers on the share page.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBuildZip } from './build-zips';
import { REPO_ROOT } from './cli-process';
import { callApi, createAccount, startAgentProcess, startServe, type FleetProcess, type ProcessAccount, type ServeProcess } from './fleet-processes';
import { listen, sendZip } from './local-server';

/**
 * Writes `<dir>/build.zip`: a Linux-packaged build whose binary runs the mock Unreal app with its
 * arguments, then `appArgs` (mock flags such as `-MockSignallingGate=<file>`; no quotes in them).
 */
export async function writeMockAppBuild(dir: string, appArgs: readonly string[] = []): Promise<string> {
  const extra = appArgs.map((a) => ` '${a}'`).join('');
  const binary = `#!/bin/sh\nexec '${process.execPath}' '${join(REPO_ROOT, 'test/mock-unreal/bin/mock-unreal.mjs')}' "$@"${extra}\n`;
  return writeBuildZip(dir, 'linux', { fileName: 'build.zip', linuxBinary: binary });
}

/** The mock-app build served over HTTP (Range answered) from a temp folder; close() stops the server and removes the folder. */
export async function serveMockAppBuild(options: { appArgs?: readonly string[] } = {}): Promise<{ buildUrl: string; close(): Promise<void> }> {
  const files = mkdtempSync(join(tmpdir(), 'pf-mock-build-'));
  const zip = await writeMockAppBuild(files, options.appArgs);
  const server = await listen((req, res) => sendZip(req, res, zip));
  return {
    buildUrl: `${server.origin}/build.zip`,
    close: async () => {
      await server.close();
      rmSync(files, { recursive: true, force: true });
    },
  };
}

/**
 * The mock-app build whose app dials its signalling only once `gate` exists (-MockSignallingGate):
 * a session stays Starting, its app launched and not identified, until the test writes the file.
 */
export async function serveGatedMockAppBuild(): Promise<{ buildUrl: string; gate: string; close(): Promise<void> }> {
  const gateDir = mkdtempSync(join(tmpdir(), 'pf-gate-'));
  const gate = join(gateDir, 'open');
  const served = await serveMockAppBuild({ appArgs: [`-MockSignallingGate=${gate}`] });
  return {
    buildUrl: served.buildUrl,
    gate,
    close: async () => {
      await served.close();
      rmSync(gateDir, { recursive: true, force: true });
    },
  };
}

/** What the app of a session on the fleet's agent has logged so far (its -ABSLOG, `<Project>.log` in the session's folder); '' before it exists. */
export function appLogOf(fleetDir: string, sessionId: string): string {
  const sessionDir = join(fleetDir, 'agent', 'sessions', sessionId);
  try {
    return readdirSync(sessionDir).filter((n) => n.endsWith('.log')).map((n) => readFileSync(join(sessionDir, n), 'utf8')).join('');
  } catch {
    return '';
  }
}

export interface StreamingFleet {
  cp: ServeProcess;
  agent: FleetProcess;
  account: ProcessAccount;
  /** The share page's signalling socket URL of the project. */
  wsUrl: string;
}

export interface StreamingFleetOptions {
  /** Folder for the data dirs and config files. */
  dir: string;
  /** Where `build.zip` (writeMockAppBuild) is served. */
  buildUrl: string;
  /** Merged over the serve process's test config. */
  config?: Record<string, unknown>;
  slots?: number;
  agentLogLevel?: string;
}

/** The agent's `run` of a fleet in `dir`: its data dir, hostname and config file, the same for a restart. */
function fleetAgent(dir: string, grpcAddress: string, slots: number, logLevel: string): Parameters<typeof startAgentProcess>[0] {
  return { grpcAddress, dataDir: join(dir, 'agent'), configDir: dir, hostname: 'gpu-fleet', slots, logLevel };
}

/** Starts the fleet and waits until the build is the project's live build on the agent. */
export async function startStreamingFleet(o: StreamingFleetOptions): Promise<StreamingFleet> {
  const cp = await startServe({ dataDir: join(o.dir, 'cp'), configDir: o.dir, ...(o.config ? { config: o.config } : {}) });
  const account = await createAccount(cp.grpcAddress, `fleet-${Date.now()}@example.com`);
  const agent = await startAgentProcess(fleetAgent(o.dir, cp.grpcAddress, o.slots ?? 1, o.agentLogLevel ?? 'info'));
  const up = await callApi(cp.httpOrigin, 'POST', '/projects/upload-file', { apiKey: account.apiKey, userId: account.userId, projectId: account.projectId, fileUrl: o.buildUrl, autoRelease: true });
  if (up.status !== 201) throw new Error(`upload-file answered ${up.status}`);
  const deadline = performance.now() + 60_000;
  for (;;) {
    const res = await callApi(cp.httpOrigin, 'GET', `/projects/${account.projectId}/builds?userId=${account.userId}&apikey=${account.apiKey}`);
    if ((res.body as { builds: { live: boolean }[] }).builds.some((b) => b.live)) break;
    if (performance.now() > deadline) throw new Error('the build did not become live within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { cp, agent, account, wsUrl: `${cp.httpOrigin.replace(/^http/, 'ws')}/share/${account.projectId}/signalling` };
}

/** Starts serve again on the first run's data dir, HTTP port and gRPC port (agents and pages find it where it was). */
export function restartServe(dir: string, cp: ServeProcess, config: Record<string, unknown> = {}): Promise<ServeProcess> {
  return startServe({
    dataDir: join(dir, 'cp'),
    configDir: dir,
    grpcPort: Number(cp.grpcAddress.split(':')[1]),
    config: { ...config, http: { host: '127.0.0.1', port: Number(new URL(cp.httpOrigin).port) } },
  });
}

/** Starts the fleet's agent again on the first run's data dir (its worker identity, app records and journal), once it is connected. */
export function restartAgent(dir: string, cp: ServeProcess, options: { slots?: number; logLevel?: string } = {}): Promise<FleetProcess> {
  return startAgentProcess(fleetAgent(dir, cp.grpcAddress, options.slots ?? 1, options.logLevel ?? 'info'));
}
