// Real `pixelfleet serve` and agent processes for tests about a process dying: each runs from its
// JSON config file with a clean environment, its output is kept and matched, and it can be killed
// (SIGKILL: no graceful stop) and started again on the same data dir. The agent runs as it ships,
// `node dist/agent.cjs run` (the bundle); only tests of the `pixelfleet-agent` bin itself ask for
// `agent/bin/pixelfleet-agent.mjs` (per-file compiled dist).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAdminCli } from '@pixelfleet/control-plane';
import { AGENT_BIN, AGENT_BUNDLE, cleanEnv, PIXELFLEET_BIN as PIXELFLEET, REPO_ROOT as root } from './cli-process';

export const PROCESS_ADMIN_TOKEN = 'process-admin-token-0123456789abcdef';
export const PROCESS_JOIN_TOKEN = 'process-join-token-0123456789abcdef';

export interface FleetProcess {
  child: ChildProcessWithoutNullStreams;
  /** The exit code, or the signal's name when a signal ended it. */
  exited: Promise<number | string>;
  /** Resolves with the first match in stdout or stderr (from the start); rejects after timeoutMs. */
  output(match: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  text(): string;
  /** SIGKILL, then waits for the exit (a crash: nothing is flushed or closed). */
  kill(): Promise<void>;
}

const running: FleetProcess[] = [];

/** Kills every process still running (afterEach). */
export async function killAll(): Promise<void> {
  await Promise.all(running.splice(0).map((p) => p.kill()));
}

/**
 * Spawns `node [nodeArgs…] <bin> <args>`, or `<wrapper…> node …` (e.g. unshare to run it in its
 * own mount namespace).
 */
export function startProcess(bin: string, args: string[], options: { env?: Record<string, string>; wrapper?: string[]; nodeArgs?: string[] } = {}): FleetProcess {
  const argv = [...(options.wrapper ?? []), process.execPath, ...(options.nodeArgs ?? []), bin, ...args];
  const child = spawn(argv[0]!, argv.slice(1), { env: cleanEnv(options.env ?? {}), cwd: root });
  let text = '';
  child.stdout.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | string>((r) => child.on('exit', (code, signal) => r(code ?? signal ?? -1)));
  const p: FleetProcess = {
    child,
    exited,
    text: () => text,
    output: (match, timeoutMs = 20_000) =>
      new Promise<RegExpMatchArray>((resolveMatch, reject) => {
        const timer = setTimeout(() => {
          stop();
          reject(new Error(`no ${match} in the output within ${timeoutMs} ms:\n${text}`));
        }, timeoutMs);
        const check = () => {
          const m = text.match(match);
          if (m === null) return;
          stop();
          resolveMatch(m);
        };
        const stop = () => {
          clearTimeout(timer);
          child.stdout.off('data', check);
          child.stderr.off('data', check);
        };
        child.stdout.on('data', check);
        child.stderr.on('data', check);
        check();
      }),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  running.push(p);
  return p;
}

/** `node --enable-source-maps dist/agent.cjs <args>`: the agent bundle, its stacks naming agent/src lines (its linked source map). */
export function startBundle(args: string[], env?: Record<string, string>): FleetProcess {
  return startProcess(AGENT_BUNDLE, args, { nodeArgs: ['--enable-source-maps'], ...(env ? { env } : {}) });
}

export interface ServeProcess extends FleetProcess {
  /** `http://127.0.0.1:<port>` (`https://` with http.tls) */
  httpOrigin: string;
  /** `127.0.0.1:<port>` */
  grpcAddress: string;
}

export interface ServeOptions {
  dataDir: string;
  /** Folder the config file is written to. */
  configDir: string;
  /** 0 (default) for any free port; a restart passes the first run's so agents redial the same address. */
  grpcPort?: number;
  /** Merged over the test config (127.0.0.1, port 0 HTTP, the tokens, allowPrivateUrls, debug logs). */
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  wrapper?: string[];
}

/** `pixelfleet serve --config <file>`; resolves once it printed its addresses. */
export async function startServe(o: ServeOptions): Promise<ServeProcess> {
  const p = spawnServe(o);
  const [, httpOrigin] = (await p.output(/HTTP +(https?:\/\/127\.0\.0\.1:\d+)/)) as [string, string];
  const [, grpcAddress] = (await p.output(/gRPC +(127\.0\.0\.1:\d+)/)) as [string, string];
  return { ...p, httpOrigin, grpcAddress };
}

/** `pixelfleet serve --config <file>`, returned at once (a test that acts during start-up). */
export function spawnServe(o: ServeOptions): FleetProcess {
  const config = {
    http: { host: '127.0.0.1', port: 0 },
    grpc: { host: '127.0.0.1', port: o.grpcPort ?? 0 },
    dataDir: o.dataDir,
    adminToken: PROCESS_ADMIN_TOKEN,
    agentJoinToken: PROCESS_JOIN_TOKEN,
    network: { allowPrivateUrls: true, allowPrivateViewerCandidates: true },
    logLevel: 'debug',
    ...o.config,
  };
  const file = join(o.configDir, 'control-plane.json');
  writeFileSync(file, JSON.stringify(config));
  return startProcess(PIXELFLEET, ['serve', '--config', file], { ...(o.env ? { env: o.env } : {}), ...(o.wrapper ? { wrapper: o.wrapper } : {}) });
}

/**
 * The agent's `run --config <file>` in region europe, from the bundle (`node dist/agent.cjs`) or,
 * with `bin: 'pixelfleet-agent'`, from agent/bin/pixelfleet-agent.mjs; resolves once it is connected.
 */
export async function startAgentProcess(o: { grpcAddress: string; dataDir: string; configDir: string; hostname: string; slots?: number; logLevel?: string; env?: Record<string, string>; tls?: Record<string, unknown>; bin?: 'bundle' | 'pixelfleet-agent' }): Promise<FleetProcess> {
  const file = join(o.configDir, `agent-${o.hostname}.json`);
  writeFileSync(file, JSON.stringify({ controlPlane: o.grpcAddress, joinToken: PROCESS_JOIN_TOKEN, region: 'europe', slots: o.slots ?? 1, dataDir: o.dataDir, hostname: o.hostname, logLevel: o.logLevel ?? 'debug', ...(o.tls ? { tls: o.tls } : {}) }));
  const p = o.bin === 'pixelfleet-agent' ? startProcess(AGENT_BIN, ['run', '--config', file], o.env ? { env: o.env } : {}) : startBundle(['run', '--config', file], o.env);
  await p.output(/connected to the control plane/);
  return p;
}

export interface ProcessAccount {
  userId: string;
  apiKey: string;
  projectId: string;
}

/** `pixelfleet admin <args> --json` against a serve process; its parsed output. */
export async function adminJson(grpcAddress: string, args: string[]): Promise<unknown> {
  let out = '';
  const io = { env: { PIXELFLEET_ADMIN_SERVER: grpcAddress, PIXELFLEET_ADMIN_TOKEN: PROCESS_ADMIN_TOKEN }, stdout: (t: string) => (out += t), stderr: (t: string) => (out += t) };
  const code = await runAdminCli([...args, '--json'], io);
  if (code !== 0) throw new Error(`pixelfleet admin ${args.join(' ')} exited ${code}: ${out}`);
  return JSON.parse(out) as unknown;
}

/** Every session's status, by session id, as `pixelfleet admin sessions` lists them. */
export async function sessionStatuses(grpcAddress: string): Promise<Map<string, string>> {
  const { sessions } = (await adminJson(grpcAddress, ['sessions'])) as { sessions: { sessionId: string; status: string }[] };
  return new Map(sessions.map((x) => [x.sessionId, x.status]));
}

/** One session's status and end reason (null while it has not ended), as `pixelfleet admin sessions` lists it. */
export async function sessionRecord(grpcAddress: string, sessionId: string): Promise<{ status: string; endReason: string | null } | undefined> {
  const { sessions } = (await adminJson(grpcAddress, ['sessions'])) as { sessions: { sessionId: string; status: string; endReason: string | null }[] };
  const s = sessions.find((x) => x.sessionId === sessionId);
  return s && { status: s.status, endReason: s.endReason };
}

/** A user, its API key and a project in europe, made with `pixelfleet admin` over the process's gRPC. */
export async function createAccount(grpcAddress: string, email: string): Promise<ProcessAccount> {
  const admin = async (args: string[]) => (await adminJson(grpcAddress, args)) as Record<string, string>;
  const { userId } = await admin(['user', 'create', '--email', email]);
  const { apiKey } = await admin(['key', 'issue', '--user', userId!]);
  const { projectId } = await admin(['project', 'create', '--owner', userId!, '--name', 'Restarts', '--region', 'europe']);
  return { userId: userId!, apiKey: apiKey!, projectId: projectId! };
}

/** A JSON call to the public API of a serve process; answers status and parsed body. */
export async function callApi(httpOrigin: string, method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${httpOrigin}/api${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}
