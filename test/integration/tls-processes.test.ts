// TLS with the real commands: `pixelfleet serve` serving gRPC with a certificate it reloads on
// SIGHUP (new connections get the renewed one, the listener and open connections stay), a
// `pixelfleet-agent run` process linking through its CA, and the refusal to listen in plaintext
// where other machines can connect unless the config says so.
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '@pixelfleet/control-plane';
import { cleanEnv, PIXELFLEET_BIN, AGENT_BIN, startCli } from '../support/cli-process';
import { killAll, PROCESS_ADMIN_TOKEN, spawnServe, startAgentProcess, startServe, type ServeProcess } from '../support/fleet-processes';
import { makeTestPki, type TestPki } from '../support/tls-certs';

let pki: TestPki;
/** Every test's files (configs, data dirs, live certificates), removed at the end. */
let root: string;

beforeAll(() => {
  pki = makeTestPki();
  root = mkdtempSync(join(tmpdir(), 'pf-tls-proc-'));
});

afterEach(() => killAll());

afterAll(() => rmSync(root, { recursive: true, force: true }));

const tempDir = (): string => mkdtempSync(join(root, 'test-'));

const serialOf = (file: string): string => new X509Certificate(readFileSync(file)).serialNumber;

/** A TLS connection to the gRPC (h2) or HTTPS port, verified against the test CA (kept open by the caller). */
function connectTls(port: number, alpn: 'h2' | 'http/1.1' = 'h2'): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: readFileSync(pki.caFile), ALPNProtocols: [alpn] }, () => resolve(socket));
    socket.on('error', reject);
  });
}

async function servedSerial(port: number, alpn: 'h2' | 'http/1.1' = 'h2'): Promise<string> {
  const socket = await connectTls(port, alpn);
  const serial = socket.getPeerCertificate().serialNumber;
  socket.destroy();
  return serial;
}

/** The test server certificate copied to `<dir>/<name>.pem` and `.key`: the files a config names and a renewal overwrites. */
function liveCertificate(dir: string, name: string): { certFile: string; keyFile: string } {
  const live = { certFile: join(dir, `${name}.pem`), keyFile: join(dir, `${name}.key`) };
  copyFileSync(pki.server.certFile, live.certFile);
  copyFileSync(pki.server.keyFile, live.keyFile);
  return live;
}

/**
 * A renewal on a serving process: with a connection open on the first certificate, the renewed
 * one is copied over the live files and the process gets SIGHUP. New connections get the renewed
 * certificate; the open one (returned, still open) keeps the first.
 */
async function renewWithSighup(cp: ServeProcess, live: { certFile: string; keyFile: string }, port: number, alpn: 'h2' | 'http/1.1'): Promise<TLSSocket> {
  expect(await servedSerial(port, alpn)).toBe(serialOf(pki.server.certFile));
  const open = await connectTls(port, alpn);
  let openClosed = false;
  open.on('close', () => (openClosed = true));
  copyFileSync(pki.renewed.certFile, live.certFile);
  copyFileSync(pki.renewed.keyFile, live.keyFile);
  cp.child.kill('SIGHUP');
  await cp.output(/TLS certificates reloaded/);
  expect(await servedSerial(port, alpn)).toBe(serialOf(pki.renewed.certFile));
  expect(openClosed).toBe(false);
  expect(open.getPeerCertificate().serialNumber).toBe(serialOf(pki.server.certFile));
  return open;
}

async function adminWorkers(grpcAddress: string): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runAdminCli(['workers', '--json', '--server', grpcAddress, '--ca', pki.caFile], {
    env: { PIXELFLEET_ADMIN_TOKEN: PROCESS_ADMIN_TOKEN },
    stdout: (t) => (out += t),
    stderr: (t) => (out += t),
  });
  return { code, out };
}

describe('pixelfleet serve with grpc.tls', () => {
  it('reloads its certificate on SIGHUP for new connections, keeping the listener and open connections; a bad file keeps the old one', async () => {
    const dir = tempDir();
    const live = liveCertificate(dir, 'grpc');
    const cp = await startServe({ dataDir: join(dir, 'data'), configDir: dir, config: { grpc: { host: '127.0.0.1', port: 0, tls: live } } });
    const port = Number(cp.grpcAddress.split(':')[1]);
    const agent = await startAgentProcess({ grpcAddress: cp.grpcAddress, dataDir: join(dir, 'agent'), configDir: dir, hostname: 'tls-proc-worker', tls: { caFile: pki.caFile } });
    const open = await renewWithSighup(cp, live, port, 'h2');
    open.destroy();
    const workers = await adminWorkers(cp.grpcAddress);
    expect(workers.code).toBe(0);
    expect(JSON.parse(workers.out)).toMatchObject({ workers: [{ hostname: 'tls-proc-worker', link: 'connected' }] });

    writeFileSync(live.certFile, 'not a certificate');
    cp.child.kill('SIGHUP');
    await cp.output(/TLS reload failed; still serving the previous certificates/);
    expect(cp.text()).toMatch(/config keys \\"grpc\.tls\.certFile\\"\/\\"grpc\.tls\.keyFile\\"/);
    expect(await servedSerial(port)).toBe(serialOf(pki.renewed.certFile));
    expect(cp.child.exitCode).toBeNull();
    expect(agent.child.exitCode).toBeNull();
  });

  it('with http.tls: serves HTTPS itself and reloads its certificate on SIGHUP for new connections, keeping open ones', async () => {
    const dir = tempDir();
    const live = liveCertificate(dir, 'http');
    const cp = await startServe({ dataDir: join(dir, 'data'), configDir: dir, config: { http: { host: '127.0.0.1', port: 0, tls: live } } });
    expect(cp.httpOrigin).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(new URL(cp.httpOrigin).port);
    const open = await renewWithSighup(cp, live, port, 'http/1.1');
    expect(cp.text()).toMatch(/"http":true/);
    // The open connection still answers: an HTTP/1.1 request on it, with the old certificate.
    open.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    const reply = await new Promise<string>((resolve) => {
      let text = '';
      open.on('data', (d: Buffer) => (text += d.toString()));
      open.on('end', () => resolve(text));
    });
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);

    writeFileSync(live.keyFile, 'not a key');
    cp.child.kill('SIGHUP');
    await cp.output(/TLS reload failed; still serving the previous certificates/);
    expect(await servedSerial(port, 'http/1.1')).toBe(serialOf(pki.renewed.certFile));
    expect(cp.child.exitCode).toBeNull();
  });

  it('a SIGHUP during start-up (a certificate renewal racing a restart) neither stops nor stalls it', async () => {
    const dir = tempDir();
    const live = { certFile: join(dir, 'grpc.pem'), keyFile: join(dir, 'grpc.key') };
    copyFileSync(pki.server.certFile, live.certFile);
    copyFileSync(pki.server.keyFile, live.keyFile);
    const cp = spawnServe({ dataDir: join(dir, 'data'), configDir: dir, config: { grpc: { host: '127.0.0.1', port: 0, tls: live } } });
    // Its first line of output comes while it is still starting: no listener is open yet.
    await cp.output(/\n/);
    expect(cp.text()).not.toMatch(/listening|gRPC +127/);
    cp.child.kill('SIGHUP');
    const started = await Promise.race([cp.output(/gRPC +(127\.0\.0\.1:\d+)/).then((m) => m[1]!), cp.exited.then((end) => ({ end }))]);
    expect(started, 'ended by the SIGHUP instead of starting').toBeTypeOf('string');
    const grpcAddress = started as string;
    // Up and serving (over TLS, with the certificate it read at start), not ended by the signal.
    const workers = await adminWorkers(grpcAddress);
    expect(workers).toMatchObject({ code: 0 });
    expect(cp.child.exitCode).toBeNull();
    cp.child.kill('SIGTERM');
    expect(await cp.exited).toBe(0);
  });

  it('pixelfleet-agent refuses to start on a tls.caFile it cannot read, naming the key', async () => {
    const dir = tempDir();
    const file = join(dir, 'agent.json');
    writeFileSync(file, JSON.stringify({ controlPlane: 'cp.example.com:50051', region: 'europe', dataDir: join(dir, 'agent'), tls: { caFile: join(dir, 'missing.pem') } }));
    const p = startCli(AGENT_BIN, ['run', '--config', file], cleanEnv());
    expect(await p.exited).toBe(78);
    expect(p.stderr()).toBe(`pixelfleet-agent: refusing to start: tls.caFile ${join(dir, 'missing.pem')} cannot be read: ENOENT\n`);
  });
});

describe('listeners other machines can reach', () => {
  it('pixelfleet serve refuses 0.0.0.0 in plaintext in one line naming the key (exit 78), and starts with a warning when grpc.insecure says so', async () => {
    const dir = tempDir();
    const base = { adminToken: PROCESS_ADMIN_TOKEN, agentJoinToken: 'process-join-token-0123456789abcdef', dataDir: join(dir, 'data'), http: { host: '127.0.0.1', port: 0 }, geoip: { enabled: false } };
    const refusedFile = join(dir, 'refused.json');
    writeFileSync(refusedFile, JSON.stringify({ ...base, grpc: { host: '0.0.0.0', port: 0 } }));
    const refused = startCli(PIXELFLEET_BIN, ['serve', '--config', refusedFile], cleanEnv());
    expect(await refused.exited).toBe(78);
    expect(refused.stderr()).toBe(
      'pixelfleet: refusing to start: config key "grpc.host": 0.0.0.0 is reachable from other machines and grpc.tls is not set: set grpc.tls.certFile and grpc.tls.keyFile, or grpc.insecure: true to accept plaintext\n',
    );

    const httpFile = join(dir, 'http.json');
    writeFileSync(httpFile, JSON.stringify({ ...base, http: { host: '0.0.0.0', port: 0 } }));
    const httpRefused = startCli(PIXELFLEET_BIN, ['serve', '--config', httpFile], cleanEnv());
    expect(await httpRefused.exited).toBe(78);
    expect(httpRefused.stderr()).toMatch(/^pixelfleet: refusing to start: config key "http\.host": 0\.0\.0\.0 is reachable from other machines without TLS: .*http\.trustProxy.*\n$/);

    const cp = await startServe({ dataDir: join(dir, 'data'), configDir: dir, config: { grpc: { host: '0.0.0.0', port: 0, insecure: true } } });
    await cp.output(/listening in plaintext on an address other machines can reach/);
    expect(cp.text()).toMatch(/"listener":"grpc \(0\.0\.0\.0:0, grpc\.insecure\)"/);
  });

  it('pixelfleet serve refuses an http:// publicUrls.agents on another machine in one line naming the key (exit 78), and starts with a warning when http.insecure says so', async () => {
    const dir = tempDir();
    const base = { adminToken: PROCESS_ADMIN_TOKEN, agentJoinToken: 'process-join-token-0123456789abcdef', dataDir: join(dir, 'data'), http: { host: '127.0.0.1', port: 0 }, geoip: { enabled: false } };
    const refusedFile = join(dir, 'refused.json');
    writeFileSync(refusedFile, JSON.stringify({ ...base, publicUrls: { agents: 'http://10.0.0.5:8080' } }));
    const refused = startCli(PIXELFLEET_BIN, ['serve', '--config', refusedFile], cleanEnv());
    expect(await refused.exited).toBe(78);
    expect(refused.stderr()).toBe(
      'pixelfleet: refusing to start: config key "publicUrls.agents": http://10.0.0.5:8080 is plain HTTP to another machine: agents would download builds and their signed links unencrypted; make it https://, or set http.insecure: true to accept plaintext\n',
    );

    const cp = await startServe({ dataDir: join(dir, 'data'), configDir: dir, config: { http: { host: '127.0.0.1', port: 0, insecure: true }, publicUrls: { agents: 'http://10.0.0.5:8080' } } });
    await cp.output(/agents download builds over plain HTTP from another machine \(http\.insecure\)/);
    expect(cp.text()).toMatch(/"agentsUrl":"http:\/\/10\.0\.0\.5:8080"/);
  });
});
