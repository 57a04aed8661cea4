// `pixelfleet-agent doctor` against a real control plane on loopback: an enrolled worker's token
// and a join token proven by real calls (nothing enrolled, the running agent's stream untouched),
// bad tokens, an unresolvable host reported as such, nothing listening; the TLS line against real
// TLS control planes (certificates made by openssl at test time); and as a real process.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor, type DoctorLine } from '@pixelfleet/agent';
import { startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { AGENT_BIN, cleanEnv, REPO_ROOT, startCli } from '../support/cli-process';
import { makeTestPki, type CertPair, type TestPki } from '../support/tls-certs';

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
    const bad = await runDoctor({ file: configFile(tempDir(), { controlPlane: t.started.grpcAddress, joinToken: 'wrong-join-token-0123456789abcdefgh' }), env: {} });
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
      'ok    tls            ',
      'ok    token          ',
      'ok    disk           ',
      'ok    build cache    ',
      'ok    app launcher   ',
      'warn  gpu            ',
      'ok    udp ports      ',
    ]);
    expect(lines[2]).toBe('ok    tls            not used: plaintext to a loopback control plane (this machine only)');
    // The command's own launcher path: agent/native/app-job/app-job.exe (present after npm run build:app-job).
    expect(lines[6]).toMatch(`ok    app launcher   not needed on linux (apps run directly); a Windows agent would run them under ${join(REPO_ROOT, 'agent/native/app-job/app-job.exe')} (`);
    expect(lines[7]).toBe('warn  gpu            not found (no nvidia-smi on PATH); Pixel Streaming needs a GPU encoder');
    const failing = startCli(AGENT_BIN, ['doctor', '--config', configFile(tempDir(), { controlPlane: 'nonexistent.invalid:7443', joinToken: TEST_JOIN_TOKEN })]);
    children.push(failing.child);
    expect(await failing.exited).toBe(1);
    expect(failing.stdout()).toContain('fail  control plane  cannot resolve host "nonexistent.invalid"');
    expect(readFileSync(join(dir, 'agent.json'), 'utf8')).toContain(TEST_JOIN_TOKEN);
    expect(ok.stdout()).not.toContain(TEST_JOIN_TOKEN);
  });
});

describe("doctor's tls line", () => {
  let pki: TestPki;
  beforeAll(() => {
    pki = makeTestPki();
  });
  afterAll(() => rmSync(pki.dir, { recursive: true, force: true }));

  async function tlsControlPlane(pair: CertPair, extra: { clientCaFile?: string } = {}): Promise<TestControlPlane> {
    const t = await startTestControlPlane({ overrides: { grpc: { host: '127.0.0.1', port: 0, tls: { ...pair, ...extra } } } });
    cleanups.push(() => t.destroy());
    return t;
  }

  const doctor = (controlPlane: string, tls: Record<string, unknown>, certExpiryWarningDays?: number) =>
    runDoctor({ file: configFile(tempDir(), { controlPlane, joinToken: TEST_JOIN_TOKEN, tls }), env: {}, certExpiryWarningDays });

  /** The expiry as the tls line writes it. */
  const expiry = (certFile: string) => `${new Date(new X509Certificate(readFileSync(certFile)).validTo).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const SKIPPED = { check: 'token', verdict: 'warn', detail: 'skipped: TLS failed (see the tls line)' };

  it('names the server it verified, its issuer and expiry, then proves the token over TLS', async () => {
    const t = await tlsControlPlane(pki.server);
    const lines = await doctor(t.started.grpcAddress, { caFile: pki.caFile }, 1);
    expect(lines.map((l) => l.check).slice(0, 4)).toEqual(['config', 'control plane', 'tls', 'token']);
    expect(line(lines, 'tls')).toEqual({ check: 'tls', verdict: 'ok', detail: `verified 127.0.0.1 (issuer Pixelfleet test ca, expires ${expiry(pki.server.certFile)})` });
    expect(line(lines, 'token')).toEqual({ check: 'token', verdict: 'ok', detail: 'not enrolled yet; joinToken accepted (the agent enrolls at its first start)' });
    // The test certificates live two days: under the default 14, that is a warning to renew.
    const soon = await doctor(t.started.grpcAddress, { caFile: pki.caFile, serverName: 'localhost' });
    expect(line(soon, 'tls')).toEqual({
      check: 'tls',
      verdict: 'warn',
      detail: `verified localhost (issuer Pixelfleet test ca, expires ${expiry(pki.server.certFile)}, in 1 day: renew it on the server soon)`,
    });
  });

  it.each([
    ['a server signed by another CA', 'otherCa', "the server's certificate is not signed by a trusted CA (set tls.caFile to the CA that signed it)"],
    ['an expired certificate', 'expired', "the server's certificate has expired (renew it on the server)"],
    ['a certificate for another host name', 'wrongHost', "the server's certificate does not name the host dialed (dial a name it carries, or set tls.serverName to one)"],
    ['a server that requires a client certificate', 'mutual', 'the server requires a client certificate (set tls.certFile)'],
  ] as const)('fails %s with the setting to fix, and skips the token check', async (_what, server, detail) => {
    const t =
      server === 'otherCa' || server === 'mutual' ? await tlsControlPlane(pki.server, server === 'mutual' ? { clientCaFile: pki.caFile } : {}) : await tlsControlPlane(pki[server]);
    const lines = await doctor(t.started.grpcAddress, { caFile: server === 'otherCa' ? pki.otherCaFile : pki.caFile });
    expect(line(lines, 'control plane')?.verdict).toBe('ok');
    expect(line(lines, 'tls')).toEqual({ check: 'tls', verdict: 'fail', detail });
    expect(line(lines, 'token')).toEqual(SKIPPED);
  });

  it('fails a plaintext control plane when the agent expects TLS', async () => {
    const t = await controlPlane();
    const lines = await doctor(t.started.grpcAddress, { caFile: pki.caFile });
    expect(line(lines, 'tls')).toEqual({
      check: 'tls',
      verdict: 'fail',
      detail: 'the server does not speak TLS on this port (or TLS is off on this side while the server requires it)',
    });
    expect(line(lines, 'token')).toEqual(SKIPPED);
  });

  it('fails a server that accepts the connection but never answers the handshake', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          silent.close(() => r());
        }),
    );
    const address = `127.0.0.1:${(silent.address() as { port: number }).port}`;
    const lines = await runDoctor({ file: configFile(tempDir(), { controlPlane: address, joinToken: TEST_JOIN_TOKEN, tls: { caFile: pki.caFile } }), env: {}, timeoutMs: 300 });
    expect(line(lines, 'tls')).toEqual({ check: 'tls', verdict: 'fail', detail: `no TLS session with ${address}: no TLS handshake within 0.3 s` });
    expect(line(lines, 'token')).toEqual(SKIPPED);
  });

  it('fails a CA file it cannot read, naming the setting', async () => {
    const t = await tlsControlPlane(pki.server);
    const missing = join(pki.dir, 'missing-ca.pem');
    const lines = await doctor(t.started.grpcAddress, { caFile: missing });
    expect(line(lines, 'tls')).toEqual({ check: 'tls', verdict: 'fail', detail: `tls.caFile ${missing} cannot be read: ENOENT` });
    expect(line(lines, 'token')).toEqual(SKIPPED);
  });

  it('warns of plaintext to another machine (tls.insecure), as the agent does at every start', async () => {
    const lines = await doctor('nonexistent.invalid:7443', { insecure: true });
    expect(line(lines, 'tls')).toEqual({
      check: 'tls',
      verdict: 'warn',
      detail: 'plaintext to nonexistent.invalid (tls.insecure: true): the join and worker tokens cross the network unencrypted; give the control plane a certificate and remove tls.insecure',
    });
  });
});
