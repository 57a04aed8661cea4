// `npm start`: the local demo. Runs the control plane and one local agent as a real process,
// creates a demo account, project and API key, and the first time takes a customer's path: it
// writes a Linux-packaged build whose binary is the mock Unreal app (test/mock-unreal), serves it
// from a local HTTP server, submits it through the public API, prints each stage as its webhook
// arrives, and once the build is Approved (distributed to the agent, which runs it from its build
// cache) prints the share URL, and the dashboard's with a one-time link to choose the demo user's
// password. State lives in .data/demo and survives restarts; Ctrl-C stops
// everything (a second Ctrl-C forces).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative, resolve, sep } from 'node:path';
import { buildControlPlane, loadControlPlaneConfig, type ControlPlane } from '@pixelfleet/control-plane';
import { createLogger, logDestination } from '@pixelfleet/common';
import { writeBuildZip } from '../support/build-zips';
import { mailBody, mailHeader } from '../support/smtp-receiver';

const root = resolve(import.meta.dirname, '../..');
// PIXELFLEET_DEMO_DATA_DIR moves the demo's state elsewhere (the process test of `npm start` uses a temp folder).
const dataDir = process.env.PIXELFLEET_DEMO_DATA_DIR ?? join(root, '.data', 'demo');
/** The state folder as the banner names it: relative to the repository when inside it. */
const shownDataDir = shownOf(dataDir);
const secretsFile = join(dataDir, 'secrets.json');
/** The demo user's address: the dashboard's sign-in name. */
const DEMO_EMAIL = 'demo@pixelfleet.local';
const stateFile = join(dataDir, 'demo.json');

interface DemoSecrets {
  adminToken: string;
  joinToken: string;
}
interface DemoState {
  userId: string;
  projectId: string;
  apiKey: string;
  /** The demo build, once submitted (older demo folders made a local build instead). */
  uploadId?: string;
}

function loadOrCreate<T>(path: string, create: () => T): T {
  if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8')) as T;
  const value = create();
  writeFileSync(path, JSON.stringify(value, null, 2), { mode: 0o600 });
  return value;
}

let agent: ChildProcess | undefined;
let cp: ControlPlane | undefined;
const servers: Server[] = [];

/** Listens on 127.0.0.1 at a free port; closed with the demo. */
async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as AddressInfo).port;
}

/** Where a customer would host their zip: a plain HTTP file server for .data/demo/builds. */
async function serveBuilds(dir: string): Promise<string> {
  const port = await listen(
    createServer((req, res) => {
      const file = join(dir, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1));
      if (!existsSync(file) || !statSync(file).isFile()) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': statSync(file).size });
      createReadStream(file).pipe(res);
    }),
  );
  return `http://127.0.0.1:${port}`;
}

/** The customer's webhook receiver: prints each build stage as it arrives. */
async function receiveWebhooks(onEvent: (e: { event: string; status: string; objection: string | null }) => void): Promise<string> {
  const port = await listen(
    createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        res.writeHead(204).end();
        try {
          onEvent(JSON.parse(body) as { event: string; status: string; objection: string | null });
        } catch {
          // not ours
        }
      });
    }),
  );
  return `http://127.0.0.1:${port}/webhook`;
}

/** The customer's side of the API: a JSON POST or PATCH with the demo key, through the real routes. */
async function api(control: ControlPlane, method: 'POST' | 'PATCH', path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await control.http.inject({ method, url: `/api${path}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  if (res.statusCode >= 300) throw new Error(`${method} ${path} answered ${res.statusCode}: ${res.body}`);
  return res.json<Record<string, unknown>>();
}

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
      // No launcher.command: the agent runs the build's own binary from its cache.
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
      // The build and the webhook receiver are served from this machine.
      network: { allowPrivateUrls: true, allowPrivateViewerCandidates: true },
      // Trying a few builds in a row should not cost two minutes each (production keeps the spec's 120 s).
      limits: { buildCallWindowSeconds: 5 },
      logLevel: process.env.PIXELFLEET_LOG_LEVEL ?? 'warn',
    },
  });
  // The demo's console is for a person, whatever stdout is: readable log lines among its own.
  cp = buildControlPlane(config, { logger: createLogger(config.logLevel, logDestination('pretty')) });
  const started = await cp.start();
  const control = cp;

  const state = existsSync(stateFile)
    ? (JSON.parse(readFileSync(stateFile, 'utf8')) as DemoState)
    : await (async () => {
        const user = await control.accounts.createUser(DEMO_EMAIL);
        const project = await control.accounts.createProject(user.userId, 'Demo', 'europe');
        const apiKey = await control.accounts.issueKey(user.userId);
        const created: DemoState = { userId: user.userId, projectId: project.projectId, apiKey };
        writeFileSync(stateFile, JSON.stringify(created, null, 2), { mode: 0o600 });
        return created;
      })();

  // The build's host and the webhook receiver run for as long as the demo (a restart mid-pipeline resumes its download).
  const buildsDir = join(dataDir, 'builds');
  mkdirSync(buildsDir, { recursive: true });
  const buildsOrigin = await serveBuilds(buildsDir);
  let settled: ((e: { event: string; objection: string | null }) => void) | undefined;
  const webhookUrl = await receiveWebhooks((e) => {
    process.stdout.write(`  webhook  ${e.event.padEnd(19)} ${e.status}${e.objection ? `: ${e.objection}` : ''}\n`);
    if (e.event === 'build.approved' || e.event === 'build.rejected') settled?.(e);
  });
  await api(control, 'PATCH', `/projects/${state.projectId}/settings`, { apiKey: state.apiKey, userId: state.userId, webhookUrl });

  await startAgent(started.grpcAddress, secrets.joinToken);

  // The dashboard: until the demo user has a password, a fresh invitation (mailed to the outbox
  // folder, as every mail is without SMTP) whose one-time link the banner prints.
  const dashboardLine = await dashboardWelcome(control, config.mail.outboxDir ?? join(config.dataDir, 'outbox'));

  if (state.uploadId === undefined) {
    // The packaged Linux binary of the demo build starts the mock Unreal app with the arguments it gets.
    const binary = `#!/bin/sh\nexec '${process.execPath}' '${join(root, 'test/mock-unreal/bin/mock-unreal.mjs')}' "$@"\n`;
    await writeBuildZip(buildsDir, 'linux', { fileName: 'demo-build.zip', projectName: 'PixelDemo', linuxBinary: binary });
    const fileUrl = `${buildsOrigin}/demo-build.zip`;
    process.stdout.write(`Submitting the demo build (${fileUrl}) through POST /projects/upload-file…\n`);
    const outcome = new Promise<{ event: string; objection: string | null }>((done) => (settled = done));
    const { uploadId } = (await api(control, 'POST', '/projects/upload-file', { apiKey: state.apiKey, userId: state.userId, projectId: state.projectId, fileUrl, autoRelease: true })) as { uploadId: string };
    const result = await outcome;
    if (result.event !== 'build.approved') throw new Error(`the demo build was rejected: ${result.objection ?? ''}`);
    state.uploadId = uploadId;
    writeFileSync(stateFile, JSON.stringify(state, null, 2), { mode: 0o600 });
  }

  process.stdout.write(`
Pixelfleet demo is running (state in ${shownDataDir}; Ctrl-C stops it).

  Open this in a browser:  ${started.publicUrls.share}/${state.projectId}
  The dashboard:           ${started.publicUrls.dashboard}
  ${dashboardLine}

  Control plane  ${started.httpOrigin}   (gRPC ${started.grpcAddress})
  Demo user      ${state.userId}
  Demo project   ${state.projectId} (europe)
  Demo API key   ${state.apiKey}

The demo build (${state.uploadId}) is a Linux-packaged build whose binary is the mock Unreal app
(test/mock-unreal): a moving test pattern; clicks, keys and UIInteraction messages you send are
written to its log under ${join(shownDataDir, 'agent', 'sessions')}/<sessionId>/ while it runs (then uploaded to the
control plane: its log_files rows, the gzip under ${join(shownDataDir, 'control-plane', 'blobs')}). Submit your own zip the same way:
  curl -X POST ${started.publicUrls.api}/projects/upload-file -H 'content-type: application/json' \\
    -d '{"apiKey":"${state.apiKey}","userId":"${state.userId}","projectId":"${state.projectId}","fileUrl":"<your zip URL>","autoRelease":true}'

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
    for (const server of servers) server.close();
    void done.then(() => cp?.close()).then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error).message}\n`);
  agent?.kill('SIGTERM');
  void cp?.close();
  process.exitCode = 1;
});

/**
 * What the banner says of signing in to the dashboard: the one-time link of a fresh invitation
 * while the demo user has no password (read from the mail in the outbox folder), else who to sign
 * in as.
 */
async function dashboardWelcome(control: ControlPlane, outboxDir: string): Promise<string> {
  const { invited } = await control.people.invite(DEMO_EMAIL);
  if (!invited) return `Sign in as ${DEMO_EMAIL} with the password you chose (forgot it? "Forgot your password?" mails a link to ${join(shownOf(outboxDir), '*.eml')}).`;
  await control.mail.idle();
  const newest = readdirSync(outboxDir)
    .filter((name) => name.endsWith('.eml'))
    .sort()
    .map((name) => readFileSync(join(outboxDir, name), 'utf8'))
    .findLast((raw) => mailHeader(raw, 'To') === DEMO_EMAIL);
  const link = newest === undefined ? undefined : /(\S+\/set-password#token=\S+)/.exec(mailBody(newest))?.[1];
  if (link === undefined) return `Sign in as ${DEMO_EMAIL}: its invitation is in ${shownOf(outboxDir)}.`;
  return `First visit (a one-time link: choose the password of ${DEMO_EMAIL}, then sign in):\n    ${link}`;
}

/** A path as the banner names it: relative to the repository when inside it. */
function shownOf(path: string): string {
  return path.startsWith(root + sep) ? relative(root, path) : path;
}
