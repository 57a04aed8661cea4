// `pixelfleet-agent doctor` against a real control plane on loopback: an enrolled worker's token
// and a join token proven by real calls (nothing enrolled, the running agent's stream untouched),
// bad tokens, an unresolvable host reported as such, nothing listening; and as a real process.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runDoctor, type DoctorLine } from '@pixelfleet/agent';
import { startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { AGENT_BIN, cleanEnv, startCli } from '../support/cli-process';

const cleanups: (() => Promise<void> | void)[] = [];
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function controlPlane(): Promise<TestControlPlane> {
  const t = await startTestControlPlane();
  cleanups.push(() => t.destroy());
  return t;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-doctor-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A config file for the doctor; the build cache small enough that its line is ok on any CI disk. */
function configFile(dir: string, values: Record<string, unknown>): string {
  const path = join(dir, 'agent.json');
  writeFileSync(path, JSON.stringify({ region: 'europe', dataDir: join(dir, 'data'), buildCache: { maxBytes: 1024 ** 2 }, ...values }));
  return path;
}

const line = (lines: DoctorLine[], check: string) => lines.find((l) => l.check === check);

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('doctor against a real control plane', () => {
  it('proves an enrolled worker token with a real call, leaving the running agent connected', async () => {
    const t = await controlPlane();
    const { agent, dataDir } = await startTestAgent({ grpcAddress: t.started.grpcAddress });
    cleanups.push(() => agent.close());
    await linkReaches(agent, 'connected');
    const epoch = agent.link.connectionEpoch;
    const dir = tempDir();
    const lines = await runDoctor({ file: configFile(dir, { controlPlane: t.started.grpcAddress, dataDir }), env: {} });
    expect(line(lines, 'config')?.verdict).toBe('ok');
    expect(line(lines, 'control plane')).toMatchObject({ verdict: 'ok', detail: expect.stringMatching(new RegExp(`^${t.started.grpcAddress}, TCP connect in \\d+ ms$`)) as string });
    expect(line(lines, 'token')).toEqual({ check: 'token', verdict: 'ok', detail: `worker token of ${agent.workerId} accepted` });
    expect(agent.link.linkState).toBe('connected');
    expect(agent.link.connectionEpoch).toBe(epoch);
    expect(t.cp.registry.list()).toHaveLength(1);
  });

  it('fails a worker token the control plane does not know', async () => {
    const t = await controlPlane();
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const path = configFile(dir, { controlPlane: t.started.grpcAddress });
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'worker.json'), JSON.stringify({ workerId: 'wrk_gone', workerToken: 'pfw_not-a-real-token', controlPlane: t.started.grpcAddress }));
    const lines = await runDoctor({ file: path, env: {} });
    expect(line(lines, 'token')).toEqual({
      check: 'token',
      verdict: 'fail',
      detail: 'the control plane rejected the worker token of wrk_gone; remove worker.json from the data dir to enroll again with joinToken',
    });
  });

  it('proves a join token without enrolling, and fails a wrong one', async () => {
    const t = await controlPlane();
    const good = await runDoctor({ file: configFile(tempDir(), { controlPlane: t.started.grpcAddress, joinToken: TEST_JOIN_TOKEN }), env: {} });
    expect(line(good, 'token')).toEqual({ check: 'token', verdict: 'ok', detail: 'not enrolled yet; joinToken accepted (the agent enrolls at its first start)' });
    const bad = await runDoctor({ file: configFile(tempDir(), { controlPlane: t.started.grpcAddress, joinToken: 'wrong-join-token-0123456789' }), env: {} });
    expect(line(bad, 'token')).toEqual({ check: 'token', verdict: 'fail', detail: 'the control plane rejected joinToken; copy agentJoinToken from its config' });
    expect(t.cp.registry.list()).toEqual([]);
  });

  it('names an unresolvable host as such, without trying gRPC', async () => {
    const lines = await runDoctor({ file: configFile(tempDir(), { controlPlane: 'nonexistent.invalid:7443', joinToken: TEST_JOIN_TOKEN }), env: {} });
    // ENOTFOUND with a DNS server; EAI_AGAIN where none answers (as in the isolated test network).
    expect(line(lines, 'control plane')).toEqual({
      check: 'control plane',
      verdict: 'fail',
      detail: expect.stringMatching(/^cannot resolve host "nonexistent\.invalid" \((ENOTFOUND: no such host|EAI_AGAIN: the DNS server did not answer)\); check controlPlane and DNS$/) as string,
    });
    expect(line(lines, 'token')).toEqual({ check: 'token', verdict: 'warn', detail: 'not checked: the control plane was not reached' });
  });

  it('says nothing listens on a port with no control plane', async () => {
    const port = await closedPort();
    const lines = await runDoctor({ file: configFile(tempDir(), { controlPlane: `127.0.0.1:${port}`, joinToken: TEST_JOIN_TOKEN }), env: {} });
    expect(line(lines, 'control plane')).toMatchObject({ verdict: 'fail', detail: `127.0.0.1:${port}: nothing listening at 127.0.0.1:${port} (connection refused); is the control plane running, is the port right?` });
  });

  it('resolves a host name before connecting', async () => {
    const t = await controlPlane();
    const address = `localhost:${t.started.grpcPort}`;
    const lines = await runDoctor({ file: configFile(tempDir(), { controlPlane: address, joinToken: TEST_JOIN_TOKEN }), env: {} });
    // localhost may resolve to ::1 first, where the test control plane (127.0.0.1) is not listening.
    const cp = line(lines, 'control plane')!;
    if (cp.verdict === 'ok') expect(cp.detail).toMatch(new RegExp(`^${address} → 127\\.0\\.0\\.1, TCP connect in \\d+ ms$`));
    else expect(cp.detail).toMatch(new RegExp(`^${address} → ::1: nothing listening`));
  });

  it('fails a config it cannot load, naming the key, and checks nothing else', async () => {
    const lines = await runDoctor({ file: configFile(tempDir(), { controlPlane: 'cp:1', region: 'mars' }), env: {} });
    expect(lines).toEqual([{ check: 'config', verdict: 'fail', detail: expect.stringMatching(/^config key "region": /) as string }]);
  });

  it('runs as a process: one line per check, exit 0 without a failure and 1 with one', async () => {
    const t = await controlPlane();
    const dir = tempDir();
    const ok = startCli(AGENT_BIN, ['doctor', '--config', configFile(dir, { controlPlane: t.started.grpcAddress, joinToken: TEST_JOIN_TOKEN, ice: { portRange: { min: 47000, max: 47010 } } })], cleanEnv({ PATH: dir }));
    children.push(ok.child);
    expect(await ok.exited).toBe(0);
    const lines = ok.stdout().trimEnd().split('\n');
    expect(lines.map((l) => l.slice(0, 21))).toEqual([
      'ok    config         ',
      'ok    control plane  ',
      'ok    token          ',
      'ok    disk           ',
      'ok    build cache    ',
      'warn  gpu            ',
      'ok    udp ports      ',
    ]);
    expect(lines[5]).toBe('warn  gpu            not found (no nvidia-smi on PATH); Pixel Streaming needs a GPU encoder');
    const failing = startCli(AGENT_BIN, ['doctor', '--config', configFile(tempDir(), { controlPlane: 'nonexistent.invalid:7443', joinToken: TEST_JOIN_TOKEN })]);
    children.push(failing.child);
    expect(await failing.exited).toBe(1);
    expect(failing.stdout()).toContain('fail  control plane  cannot resolve host "nonexistent.invalid"');
    expect(readFileSync(join(dir, 'agent.json'), 'utf8')).toContain(TEST_JOIN_TOKEN);
    expect(ok.stdout()).not.toContain(TEST_JOIN_TOKEN);
  });
});
