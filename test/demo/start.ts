// `npm start`: the local demo. Starts the control plane and one local agent as real processes
// (the same commands an operator runs), creates a demo account and project, and prints how to
// use them. State lives in .data/demo and survives restarts; Ctrl-C stops everything.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runAdminCli } from '@pixelfleet/control-plane';

const root = resolve(import.meta.dirname, '../..');
const dataDir = join(root, '.data', 'demo');
const secretsFile = join(dataDir, 'secrets.json');
const stateFile = join(dataDir, 'demo.json');

interface DemoSecrets {
  adminToken: string;
  joinToken: string;
}
interface DemoState {
  userId: string;
  projectId: string;
  apiKey: string;
}

function loadOrCreate<T>(path: string, create: () => T): T {
  if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8')) as T;
  const value = create();
  writeFileSync(path, JSON.stringify(value, null, 2), { mode: 0o600 });
  return value;
}

const children: ChildProcess[] = [];

function startProcess(name: string, bin: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<string> {
  const child = spawn(process.execPath, [join(root, bin), ...args], { env: { ...process.env, ...env }, cwd: root });
  children.push(child);
  return new Promise((resolveReady, reject) => {
    let seen = '';
    const onData = (d: Buffer) => {
      const text = d.toString();
      seen += text;
      for (const line of text.split('\n').filter(Boolean)) process.stdout.write(`[${name}] ${line}\n`);
      const m = ready.exec(seen);
      if (m) resolveReady(m[1] ?? m[0]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${name} exited with code ${code}`)));
  });
}

async function admin(args: string[], env: Record<string, string>): Promise<Record<string, string>> {
  let out = '';
  let err = '';
  const code = await runAdminCli([...args, '--json'], { env, stdout: (s) => (out += s), stderr: (s) => (err += s) });
  if (code !== 0) throw new Error(`pixelfleet admin ${args.join(' ')} failed: ${err}`);
  return JSON.parse(out) as Record<string, string>;
}

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const secrets = loadOrCreate<DemoSecrets>(secretsFile, () => ({
    adminToken: `demo-admin-${randomBytes(16).toString('hex')}`,
    joinToken: `demo-join-${randomBytes(16).toString('hex')}`,
  }));
  const httpPort = process.env.PIXELFLEET_DEMO_HTTP_PORT ?? '8080';
  const grpcPort = process.env.PIXELFLEET_DEMO_GRPC_PORT ?? '50051';

  const grpcAddress = await startProcess(
    'control-plane',
    'control-plane/bin/pixelfleet.mjs',
    ['serve'],
    {
      PIXELFLEET_HTTP__PORT: httpPort,
      PIXELFLEET_GRPC__PORT: grpcPort,
      PIXELFLEET_DATA_DIR: join(dataDir, 'control-plane'),
      PIXELFLEET_ADMIN_TOKEN: secrets.adminToken,
      PIXELFLEET_AGENT_JOIN_TOKEN: secrets.joinToken,
      PIXELFLEET_NETWORK__ALLOW_PRIVATE_URLS: 'true',
    },
    /gRPC +(\S+)/,
  );
  await startProcess(
    'agent',
    'agent/bin/pixelfleet-agent.mjs',
    ['run'],
    {
      PIXELFLEET_AGENT_CONTROL_PLANE: grpcAddress,
      PIXELFLEET_AGENT_JOIN_TOKEN: secrets.joinToken,
      PIXELFLEET_AGENT_REGION: 'europe',
      PIXELFLEET_AGENT_DATA_DIR: join(dataDir, 'agent'),
    },
    /connected to the control plane/,
  );

  const env = { PIXELFLEET_ADMIN_SERVER: grpcAddress, PIXELFLEET_ADMIN_TOKEN: secrets.adminToken };
  const state = existsSync(stateFile)
    ? (JSON.parse(readFileSync(stateFile, 'utf8')) as DemoState)
    : await (async () => {
        const { userId } = await admin(['user', 'create', '--email', 'demo@pixelfleet.local'], env);
        const { projectId } = await admin(['project', 'create', '--owner', userId!, '--name', 'Demo', '--region', 'europe'], env);
        const { apiKey } = await admin(['key', 'issue', '--user', userId!], env);
        const created: DemoState = { userId: userId!, projectId: projectId!, apiKey: apiKey! };
        writeFileSync(stateFile, JSON.stringify(created, null, 2), { mode: 0o600 });
        return created;
      })();

  process.stdout.write(`
Pixelfleet demo is running (state in .data/demo; Ctrl-C stops it).

  Control plane  http://127.0.0.1:${httpPort}   (gRPC ${grpcAddress})
  Demo user      ${state.userId}
  Demo project   ${state.projectId} (europe)
  Demo API key   ${state.apiKey}
  Share URL      http://127.0.0.1:${httpPort}/share/${state.projectId}   (the viewer page arrives with streaming)

Try, in another terminal:
  export PIXELFLEET_ADMIN_SERVER=${grpcAddress} PIXELFLEET_ADMIN_TOKEN=${secrets.adminToken}
  npx pixelfleet admin workers
  npx pixelfleet admin events
`);
}

function stopAll(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
}

let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    signals += 1;
    if (signals > 1) {
      for (const c of children) c.kill('SIGKILL');
      process.exit(130);
    }
    stopAll();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error).message}\n`);
  stopAll();
  process.exitCode = 1;
});
