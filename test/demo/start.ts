// `npm start`: the local demo. Runs the control plane, starts one local agent as a real process
// whose "Unreal app" is the mock app (test/mock-unreal), creates a demo account, project, API key
// and live build, and prints the share URL. State lives in .data/demo and survives restarts;
// Ctrl-C stops everything (a second Ctrl-C forces).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildControlPlane, loadControlPlaneConfig, type ControlPlane } from '@pixelfleet/control-plane';

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

let agent: ChildProcess | undefined;
let cp: ControlPlane | undefined;

function startAgent(grpcAddress: string, joinToken: string): Promise<void> {
  const child = spawn(process.execPath, [join(root, 'agent/bin/pixelfleet-agent.mjs'), 'run'], {
    cwd: root,
    env: {
      ...process.env,
      PIXELFLEET_AGENT_CONTROL_PLANE: grpcAddress,
      PIXELFLEET_AGENT_JOIN_TOKEN: joinToken,
      PIXELFLEET_AGENT_REGION: 'europe',
      PIXELFLEET_AGENT_HOSTNAME: 'demo-worker',
      PIXELFLEET_AGENT_DATA_DIR: join(dataDir, 'agent'),
      PIXELFLEET_AGENT_LAUNCHER__COMMAND: JSON.stringify([process.execPath, join(root, 'test/mock-unreal/bin/mock-unreal.mjs')]),
      PIXELFLEET_AGENT_ICE__HOST_ADDRESSES: JSON.stringify(['127.0.0.1']),
      PIXELFLEET_AGENT_LOG_LEVEL: 'warn',
    },
  });
  agent = child;
  return new Promise((resolveReady, reject) => {
    let seen = '';
    const onData = (d: Buffer) => {
      seen += d.toString();
      if (seen.includes('"level":50') || seen.includes('"level":60')) process.stderr.write(`[agent] ${d.toString()}`);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`the agent exited with code ${code}:\n${seen}`)));
    cp?.registry.on('linkChanged', (workerId, link) => {
      if (link === 'connected' && cp?.registry.get(workerId).hostname === 'demo-worker') resolveReady();
    });
  });
}

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const secrets = loadOrCreate<DemoSecrets>(secretsFile, () => ({
    adminToken: `demo-admin-${randomBytes(16).toString('hex')}`,
    joinToken: `demo-join-${randomBytes(16).toString('hex')}`,
  }));
  const config = loadControlPlaneConfig({
    env: process.env,
    overrides: {
      dataDir: join(dataDir, 'control-plane'),
      adminToken: secrets.adminToken,
      agentJoinToken: secrets.joinToken,
      // The demo's "build" is a local stand-in and everything runs on this machine.
      network: { allowPrivateUrls: true },
      logLevel: process.env.PIXELFLEET_LOG_LEVEL ?? 'warn',
    },
  });
  cp = buildControlPlane(config);
  const started = await cp.start();
  const control = cp;

  const state = existsSync(stateFile)
    ? (JSON.parse(readFileSync(stateFile, 'utf8')) as DemoState)
    : (() => {
        const user = control.accounts.createUser('demo@pixelfleet.local');
        const project = control.accounts.createProject(user.userId, 'Demo', 'europe');
        const apiKey = control.accounts.issueKey(user.userId);
        control.registerLocalBuild(project.projectId);
        const created: DemoState = { userId: user.userId, projectId: project.projectId, apiKey };
        writeFileSync(stateFile, JSON.stringify(created, null, 2), { mode: 0o600 });
        return created;
      })();

  await startAgent(started.grpcAddress, secrets.joinToken);

  process.stdout.write(`
Pixelfleet demo is running (state in .data/demo; Ctrl-C stops it).

  Open this in a browser:  ${started.publicUrls.share}/${state.projectId}

  Control plane  ${started.httpOrigin}   (gRPC ${started.grpcAddress})
  Demo user      ${state.userId}
  Demo project   ${state.projectId} (europe)
  Demo API key   ${state.apiKey}

The "Unreal app" is the mock app (test/mock-unreal): a moving test pattern; clicks, keys and
UIInteraction messages you send are written to its log under .data/demo/agent/sessions/.

Operators, in another terminal:
  export PIXELFLEET_ADMIN_SERVER=${started.grpcAddress} PIXELFLEET_ADMIN_TOKEN=${secrets.adminToken}
  npx pixelfleet admin workers
  npx pixelfleet admin sessions
  npx pixelfleet admin events
`);
}

let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    signals += 1;
    if (signals > 1) {
      agent?.kill('SIGKILL');
      process.exit(130);
    }
    agent?.kill('SIGTERM');
    const done = agent && agent.exitCode === null ? new Promise((r) => agent!.once('exit', r)) : Promise.resolve();
    void done.then(() => cp?.close()).then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error).message}\n`);
  agent?.kill('SIGTERM');
  void cp?.close();
  process.exitCode = 1;
});
