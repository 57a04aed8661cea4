// The commands a new operator runs, as real processes: `pixelfleet serve`, `pixelfleet-agent
// run`, `pixelfleet admin workers`. Config errors refuse to start and name the key; SIGTERM
// shuts down cleanly.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { connect } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_BIN, cleanEnv, PIXELFLEET_BIN, startCli } from '../support/cli-process';

const PIXELFLEET = PIXELFLEET_BIN;
const AGENT = AGENT_BIN;
const ADMIN_TOKEN = 'cli-admin-token-0123456789abcdefgh';
const JOIN_TOKEN = 'cli-join-token-0123456789abcdefgh';

const children: ChildProcessWithoutNullStreams[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-cli-'));
  dirs.push(d);
  return d;
}

function writeJson(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

function start(bin: string, args: string[], env: NodeJS.ProcessEnv = cleanEnv()) {
  const p = startCli(bin, args, env);
  children.push(p.child);
  return p;
}

async function run(bin: string, args: string[], env?: NodeJS.ProcessEnv) {
  const p = start(bin, args, env);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('configuration errors refuse to start and name the key', () => {
  it('control plane: unknown key, bad value, missing file, malformed JSON', async () => {
    const dir = tempDir();
    const base = { adminToken: ADMIN_TOKEN, agentJoinToken: JOIN_TOKEN, dataDir: join(dir, 'data') };
    const unknown = await run(PIXELFLEET, ['serve', '--config', writeJson(dir, 'a.json', { ...base, http: { prot: 1 } })]);
    expect(unknown.code).toBe(78);
    expect(unknown.stderr).toContain('pixelfleet: refusing to start: unknown config key "http.prot"');

    const badPort = await run(PIXELFLEET, ['serve', '--config', writeJson(dir, 'b.json', { ...base, grpc: { port: 'fifty' } })]);
    expect(badPort.code).toBe(78);
    expect(badPort.stderr).toContain('config key "grpc.port"');

    const missing = await run(PIXELFLEET, ['serve', '--config', join(dir, 'nope.json')]);
    expect(missing.code).toBe(78);
    expect(missing.stderr).toContain('cannot be read');

    writeFileSync(join(dir, 'c.json'), '{ "adminToken": ');
    const malformed = await run(PIXELFLEET, ['serve', '--config', join(dir, 'c.json')]);
    expect(malformed.code).toBe(78);
    expect(malformed.stderr).toContain('is not valid JSON');

    const noTokens = await run(PIXELFLEET, ['serve', '--config', writeJson(dir, 'd.json', { dataDir: join(dir, 'data') })]);
    expect(noTokens.code).toBe(78);
    expect(noTokens.stderr).toContain('config key "adminToken"');
  });

  it('agent: unknown key and missing region', async () => {
    const dir = tempDir();
    const unknown = await run(AGENT, ['run', '--config', writeJson(dir, 'a.json', { controlPlane: '127.0.0.1:1', region: 'europe', slot: 2 })]);
    expect(unknown.code).toBe(78);
    expect(unknown.stderr).toContain('unknown config key "slot"');
    const noRegion = await run(AGENT, ['run', '--config', writeJson(dir, 'b.json', { controlPlane: '127.0.0.1:1' })]);
    expect(noRegion.code).toBe(78);
    expect(noRegion.stderr).toContain('config key "region"');
  });
});

describe('serve, agent and admin as processes', () => {
  it('a worker started from the README commands shows up in `pixelfleet admin workers`; SIGTERM stops both cleanly', async () => {
    const dir = tempDir();
    const cpConfig = writeJson(dir, 'control-plane.json', {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: 0 },
      dataDir: join(dir, 'cp'),
      adminToken: ADMIN_TOKEN,
      agentJoinToken: JOIN_TOKEN,
    });
    const cp = start(PIXELFLEET, ['serve', '--config', cpConfig]);
    const [, grpcAddress] = (await cp.output(/gRPC +(127\.0\.0\.1:\d+)/)) as [string, string];

    const agentConfig = writeJson(dir, 'agent.json', { controlPlane: grpcAddress, joinToken: JOIN_TOKEN, region: 'europe', slots: 2, dataDir: join(dir, 'agent'), hostname: 'gpu-01' });
    const agent = start(AGENT, ['run', '--config', agentConfig]);
    await agent.output(/connected to the control plane/);

    const env = cleanEnv({ PIXELFLEET_ADMIN_SERVER: grpcAddress, PIXELFLEET_ADMIN_TOKEN: ADMIN_TOKEN });
    const listed = await run(PIXELFLEET, ['admin', 'workers', '--json'], env);
    expect(listed.code).toBe(0);
    const { workers } = JSON.parse(listed.stdout) as { workers: { hostname: string; status: string; slots: number; region: string }[] };
    expect(workers).toEqual([expect.objectContaining({ hostname: 'gpu-01', status: 'connected', slots: 2, region: 'europe' })]);
    const table = await run(PIXELFLEET, ['admin', 'workers'], env);
    expect(table.stdout).toMatch(/gpu-01 +europe +connected +connected +0\/2/);

    // `pixelfleet admin events | head`: the reader is gone before the first event is written.
    const follower = start(PIXELFLEET, ['admin', 'events', '--from-start'], env);
    follower.child.stdout.destroy();
    expect(await follower.exited).toBe(0);
    expect(follower.stderr()).toBe('');

    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    cp.child.kill('SIGTERM');
    expect(await cp.exited).toBe(0);
    expect(cp.stdout()).toContain('control plane stopped');
    // Neither process logged a secret.
    for (const text of [cp.stdout(), cp.stderr(), agent.stdout(), agent.stderr()]) {
      expect(text).not.toContain(ADMIN_TOKEN);
      expect(text).not.toContain(JOIN_TOKEN);
      expect(text).not.toMatch(/pfw_[A-Za-z0-9_-]{20}/);
    }
  });

  it('an idle agent outlives a control plane crash and reconnects when it is back', async () => {
    const dir = tempDir();
    const cpConfig = (grpcPort: number) =>
      writeJson(dir, 'control-plane.json', {
        http: { host: '127.0.0.1', port: 0 },
        grpc: { host: '127.0.0.1', port: grpcPort },
        dataDir: join(dir, 'cp'),
        adminToken: ADMIN_TOKEN,
        agentJoinToken: JOIN_TOKEN,
      });
    const first = start(PIXELFLEET, ['serve', '--config', cpConfig(0)]);
    const [, grpcAddress] = (await first.output(/gRPC +(127\.0\.0\.1:\d+)/)) as [string, string];
    const agentConfig = writeJson(dir, 'agent.json', { controlPlane: grpcAddress, joinToken: JOIN_TOKEN, region: 'europe', slots: 1, dataDir: join(dir, 'agent'), hostname: 'gpu-02' });
    const agent = start(AGENT, ['run', '--config', agentConfig]);
    await agent.output(/connected to the control plane/);

    first.child.kill('SIGKILL');
    await first.exited;
    // The agent notices and waits to redial, with no stream and no app to keep it alive.
    await agent.output(/redial/);
    const second = start(PIXELFLEET, ['serve', '--config', cpConfig(Number(grpcAddress.split(':')[1]))]);
    await second.output(/gRPC +127\.0\.0\.1:\d+/);
    await agent.output(/connected to the control plane[\s\S]*connected to the control plane/, 30_000);
    expect(agent.child.exitCode).toBeNull();

    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('an agent with a wrong join token stops with a clear error', async () => {
    const dir = tempDir();
    const cp = start(PIXELFLEET, ['serve'], cleanEnv({
      PIXELFLEET_HTTP__PORT: '0', PIXELFLEET_GRPC__PORT: '0', PIXELFLEET_DATA_DIR: join(dir, 'cp'),
      PIXELFLEET_ADMIN_TOKEN: ADMIN_TOKEN, PIXELFLEET_AGENT_JOIN_TOKEN: JOIN_TOKEN,
    }));
    const [, grpcAddress] = (await cp.output(/gRPC +(127\.0\.0\.1:\d+)/)) as [string, string];
    const agent = await run(AGENT, ['run'], cleanEnv({
      PIXELFLEET_AGENT_CONTROL_PLANE: grpcAddress, PIXELFLEET_AGENT_JOIN_TOKEN: 'not-the-join-token-0123456789abcdef', PIXELFLEET_AGENT_REGION: 'europe', PIXELFLEET_AGENT_DATA_DIR: join(dir, 'agent'),
    }));
    expect(agent.code).toBe(77);
    expect(agent.stdout).toContain('the control plane refused enrollment: invalid join token');
    expect(agent.stdout + agent.stderr).not.toContain('not-the-join-token-0123456789abcdef');
    cp.child.kill('SIGTERM');
    expect(await cp.exited).toBe(0);
  });

  it('a second signal forces the exit while a graceful shutdown is still waiting', async () => {
    const dir = tempDir();
    const cp = start(PIXELFLEET, ['serve'], cleanEnv({
      PIXELFLEET_HTTP__PORT: '0', PIXELFLEET_GRPC__PORT: '0', PIXELFLEET_DATA_DIR: join(dir, 'cp'),
      PIXELFLEET_ADMIN_TOKEN: ADMIN_TOKEN, PIXELFLEET_AGENT_JOIN_TOKEN: JOIN_TOKEN,
    }));
    const [, port] = (await cp.output(/HTTP +http:\/\/127\.0\.0\.1:(\d+)/)) as [string, string];
    // A request whose body never finishes keeps the HTTP server from closing gracefully.
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('POST /api/v1/telemetry HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"sess');
    // Only once the server has the request in flight does it hold the graceful close.
    await cp.output(/"msg":"incoming request"/);
    cp.child.kill('SIGTERM');
    await cp.output(/"msg":"shutting down"/);
    cp.child.kill('SIGTERM');
    expect(await cp.exited).toBe(130);
    expect(cp.stdout()).toContain('second signal: exiting now');
    expect(cp.stdout()).not.toContain('control plane stopped');
    socket.destroy();
  });
});
