// TLS on the control plane's listeners, for real: certificates made by openssl at test time, a
// control plane serving gRPC (and HTTPS) with them, the admin CLI and a real agent dialing it.
// A wrong CA, an expired certificate, a wrong host name and a missing or foreign client
// certificate are each refused with a sentence naming the setting to fix; a reload serves a
// renewed certificate to new connections without closing the listener.
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAgent, loadAgentConfig, type Agent } from '@pixelfleet/agent';
import { runAdminCli } from '@pixelfleet/control-plane';
import { createLogger } from '@pixelfleet/common';
import { LogCapture, startTestControlPlane, TEST_ADMIN_TOKEN, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { makeTestPki, type CertPair, type TestPki } from '../support/tls-certs';

let pki: TestPki;
/** A control plane serving gRPC with the good server certificate (the admin CLI and agent tests share it). */
let t: TestControlPlane;

beforeAll(async () => {
  pki = makeTestPki();
  t = await tlsControlPlane(pki.server);
});

afterAll(() => t.destroy());

async function tlsControlPlane(pair: CertPair, extra: { clientCaFile?: string } = {}): Promise<TestControlPlane> {
  return startTestControlPlane({ overrides: { grpc: { host: '127.0.0.1', port: 0, tls: { ...pair, ...extra } } } });
}

async function admin(server: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runAdminCli(['workers', '--json', '--server', server, ...args], {
    env: { PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
  });
  return { code, stdout, stderr };
}

/** The serial number of the certificate a new TLS connection to 127.0.0.1:port is shown. */
function servedSerial(port: number, alpn: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: [], rejectUnauthorized: false, ALPNProtocols: [alpn] }, () => {
      const cert: PeerCertificate = socket.getPeerCertificate();
      socket.destroy();
      resolve(cert.serialNumber);
    });
    socket.on('error', reject);
  });
}

const serialOf = (file: string): string => new X509Certificate(readFileSync(file)).serialNumber;

/** An open TLS connection (not closed by the test), to see a reload leave it alone. */
function openConnection(port: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: readFileSync(pki.caFile), ALPNProtocols: ['h2'] }, () => resolve(socket));
    socket.on('error', reject);
  });
}

describe('gRPC over TLS: the admin CLI', () => {
  it('reaches the server through its CA, by IP or by name', async () => {
    const byIp = await admin(t.started.grpcAddress, ['--ca', pki.caFile]);
    expect(byIp.stderr).toBe('');
    expect(byIp.code).toBe(0);
    expect(JSON.parse(byIp.stdout)).toEqual({ workers: [] });
    const byName = await admin(`localhost:${t.started.grpcPort}`, ['--ca', pki.caFile]);
    expect(byName.code).toBe(0);
  });

  it('refuses a server its CA did not sign (a wrong CA, or the system roots) with exit 1 and what to set', async () => {
    for (const args of [['--ca', pki.otherCaFile], ['--tls']]) {
      const r = await admin(t.started.grpcAddress, args);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^error: TLS: the server's certificate is not signed by a trusted CA \(set --ca to the CA that signed it\) \[/);
    }
  });

  it('says the server may require TLS when it dialed a loopback server in plaintext', async () => {
    for (const args of [[], ['--insecure']]) {
      const r = await admin(t.started.grpcAddress, args);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: the server cut the connection: it may require TLS \(this client dialed in plaintext; set --ca\)/);
    }
    const both = await admin(t.started.grpcAddress, ['--tls', '--insecure']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^error: --tls and --insecure contradict each other\n/);
  });

  it('refuses a CA file it cannot read, naming the flag, before dialing (exit 2)', async () => {
    const r = await admin(t.started.grpcAddress, ['--ca', join(pki.dir, 'missing.pem')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`error: --ca ${join(pki.dir, 'missing.pem')} cannot be read: ENOENT\n`);
  });

  it('serves HTTP in plaintext while gRPC has TLS (each listener has its own setting)', () => {
    expect(t.started.httpOrigin).toMatch(/^http:\/\//);
  });
});

describe('certificates the client must refuse', () => {
  it('an expired server certificate', async () => {
    const t = await tlsControlPlane(pki.expired);
    try {
      const r = await admin(t.started.grpcAddress, ['--ca', pki.caFile]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: TLS: the server's certificate has expired \(renew it on the server\)/);
    } finally {
      await t.destroy();
    }
  });

  it('a certificate for another host name, accepted when --server-name names it', async () => {
    const t = await tlsControlPlane(pki.wrongHost);
    try {
      const r = await admin(t.started.grpcAddress, ['--ca', pki.caFile]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: TLS: the server's certificate does not name the host dialed \(dial a name it carries, or set --server-name to one\)/);
      expect((await admin(t.started.grpcAddress, ['--ca', pki.caFile, '--server-name', 'pixelfleet.invalid'])).code).toBe(0);
    } finally {
      await t.destroy();
    }
  });
});

describe('mutual TLS (grpc.tls.clientCaFile)', () => {
  let mtls: TestControlPlane;
  beforeAll(async () => {
    mtls = await tlsControlPlane(pki.server, { clientCaFile: pki.caFile });
  });
  afterAll(() => mtls.destroy());

  it('takes a client certificate its client CA signed', async () => {
    const r = await admin(mtls.started.grpcAddress, ['--ca', pki.caFile, '--cert', pki.client.certFile, '--key', pki.client.keyFile]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('refuses a client without a certificate, or with one another CA signed', async () => {
    const none = await admin(mtls.started.grpcAddress, ['--ca', pki.caFile]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^error: TLS: the server requires a client certificate \(set --cert\/--key\)/);
    const foreign = await admin(mtls.started.grpcAddress, ['--ca', pki.caFile, '--cert', pki.otherCaClient.certFile, '--key', pki.otherCaClient.keyFile]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/^error: TLS: the server cut the connection after the handshake: it may not accept this client certificate/);
  });

  it('links an agent that presents its certificate, and tells one without it what to set', async () => {
    const { agent } = await startTestAgent({
      grpcAddress: mtls.started.grpcAddress,
      tls: { caFile: pki.caFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile },
    });
    try {
      await linkReaches(agent, 'connected');
    } finally {
      await agent.close();
    }
    const logs = new LogCapture();
    const bare = unstartedAgent(mtls.started.grpcAddress, { caFile: pki.caFile }, logs);
    const starting = bare.start();
    try {
      await logLine(logs, /control link refused: TLS: the server requires a client certificate \(set tls\.certFile\)/);
    } finally {
      await bare.close();
      await starting.catch(() => undefined);
    }
  });
});

function unstartedAgent(grpcAddress: string, tls: Record<string, string>, logs: LogCapture, dataDir = mkdtempSync(join(tmpdir(), 'pf-agent-'))): Agent {
  const config = loadAgentConfig({
    env: {
      PIXELFLEET_AGENT_CONTROL_PLANE: grpcAddress,
      PIXELFLEET_AGENT_JOIN_TOKEN: TEST_JOIN_TOKEN,
      PIXELFLEET_AGENT_REGION: 'europe',
      PIXELFLEET_AGENT_DATA_DIR: dataDir,
      PIXELFLEET_AGENT_HOSTNAME: 'tls-worker',
      ...Object.fromEntries(Object.entries(tls).map(([k, v]) => [`PIXELFLEET_AGENT_TLS__${k.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}`, v])),
    },
  });
  return buildAgent(config, { backoff: { initialMs: 50, maxMs: 200 }, logger: createLogger('debug', logs.stream), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
}

/** The first captured log line that matches, once one is written (within 10 s). */
async function logLine(logs: LogCapture, match: RegExp): Promise<string> {
  await expect.poll(() => logs.lines.some((l) => match.test(l)), { timeout: 10_000 }).toBe(true);
  return logs.lines.find((l) => match.test(l))!;
}

describe("the agent's control link over TLS", () => {
  it('enrolls and connects through tls.caFile', async () => {
    const { agent } = await startTestAgent({ grpcAddress: t.started.grpcAddress, tls: { caFile: pki.caFile } });
    try {
      await linkReaches(agent, 'connected');
      expect(agent.tlsFailure).toBeUndefined();
    } finally {
      await agent.close();
    }
  });

  it('an enrolled agent whose CA does not match waits with the reason in its link and its log', async () => {
    const { agent, dataDir } = await startTestAgent({ grpcAddress: t.started.grpcAddress, tls: { caFile: pki.caFile } });
    await linkReaches(agent, 'connected');
    await agent.close();
    const logs = new LogCapture();
    const wrong = unstartedAgent(t.started.grpcAddress, { caFile: pki.otherCaFile }, logs, dataDir);
    await wrong.start();
    try {
      const line = await logLine(logs, /control link refused: TLS: the server's certificate is not signed by a trusted CA \(set tls\.caFile to the CA that signed it\)/);
      expect(JSON.parse(line)).toMatchObject({ level: 50, component: 'control-link' });
      expect(logs.lines.filter((l) => l.includes('control link refused'))).toHaveLength(1);
      expect(wrong.link.linkState).not.toBe('connected');
      expect(wrong.tlsFailure).toBe("TLS: the server's certificate is not signed by a trusted CA (set tls.caFile to the CA that signed it)");
    } finally {
      await wrong.close();
    }
  });

  it('a control plane without TLS is told as such', async () => {
    const plain = await startTestControlPlane();
    const logs = new LogCapture();
    const agent = unstartedAgent(plain.started.grpcAddress, { caFile: pki.caFile }, logs);
    const starting = agent.start();
    try {
      await logLine(logs, /control link refused: TLS: the server does not speak TLS on this port/);
    } finally {
      await agent.close();
      await starting.catch(() => undefined);
      await plain.destroy();
    }
  });

  it('an expired certificate and a wrong host name are logged as such at enrollment', async () => {
    for (const [pair, sentence] of [
      [pki.expired, /control link refused: TLS: the server's certificate has expired/],
      [pki.wrongHost, /control link refused: TLS: the server's certificate does not name the host dialed \(dial a name it carries, or set tls\.serverName to one\)/],
    ] as const) {
      const cp = await tlsControlPlane(pair);
      const logs = new LogCapture();
      const agent = unstartedAgent(cp.started.grpcAddress, { caFile: pki.caFile }, logs);
      const starting = agent.start();
      try {
        await logLine(logs, sentence);
      } finally {
        await agent.close();
        await starting.catch(() => undefined);
        await cp.destroy();
      }
    }
  });
});

describe('an agent told to dial another machine in plaintext', () => {
  it('warns at start that the worker token crosses the network unencrypted', async () => {
    const logs = new LogCapture();
    const config = loadAgentConfig({
      env: { PIXELFLEET_AGENT_CONTROL_PLANE: 'cp.example.com:50051', PIXELFLEET_AGENT_REGION: 'europe', PIXELFLEET_AGENT_DATA_DIR: mkdtempSync(join(tmpdir(), 'pf-agent-')), PIXELFLEET_AGENT_TLS__INSECURE: 'true' },
    });
    const agent = buildAgent(config, { logger: createLogger('debug', logs.stream), env: {} });
    await agent.close();
    expect(logs.lines.filter((l) => l.includes('control link in plaintext (tls.insecure): the worker token crosses the network unencrypted'))).toHaveLength(1);
  });
});

describe('reloading certificates', () => {
  it('serves a renewed certificate to new connections on reloadTls(), keeping the listener and open connections', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-reload-'));
    const live = { certFile: join(dir, 'tls.pem'), keyFile: join(dir, 'tls.key') };
    copyFileSync(pki.server.certFile, live.certFile);
    copyFileSync(pki.server.keyFile, live.keyFile);
    const t = await startTestControlPlane({ overrides: { grpc: { host: '127.0.0.1', port: 0, tls: live }, http: { host: '127.0.0.1', port: 0, tls: live } } });
    try {
      expect(t.started.httpOrigin).toMatch(/^https:\/\/127\.0\.0\.1:/);
      const before = serialOf(pki.server.certFile);
      expect(await servedSerial(t.started.grpcPort, 'h2')).toBe(before);
      expect(await servedSerial(t.started.httpPort, 'http/1.1')).toBe(before);
      const open = await openConnection(t.started.grpcPort);
      let openClosed = false;
      open.on('close', () => (openClosed = true));

      copyFileSync(pki.renewed.certFile, live.certFile);
      copyFileSync(pki.renewed.keyFile, live.keyFile);
      t.cp.reloadTls();
      const after = serialOf(pki.renewed.certFile);
      expect(after).not.toBe(before);
      expect(await servedSerial(t.started.grpcPort, 'h2')).toBe(after);
      expect(await servedSerial(t.started.httpPort, 'http/1.1')).toBe(after);
      expect((await admin(t.started.grpcAddress, ['--ca', pki.caFile])).code).toBe(0);
      expect(await httpsHealth(t.started.httpPort)).toBe(200);
      // The connection made before the reload still has its certificate and is still open.
      expect(open.getPeerCertificate().serialNumber).toBe(before);
      expect(openClosed).toBe(false);
      open.destroy();

      // Unusable files: the reload throws naming the key, and the current certificate stays.
      writeFileSync(live.keyFile, 'not a key');
      expect(() => t.cp.reloadTls()).toThrow(/config keys "grpc\.tls\.certFile"\/"grpc\.tls\.keyFile": .* are not a usable certificate and key/);
      expect(await servedSerial(t.started.grpcPort, 'h2')).toBe(after);
    } finally {
      await t.destroy();
    }
  });

  it('refuses to start on an unreadable certificate, naming the key', async () => {
    await expect(tlsControlPlane({ certFile: join(pki.dir, 'missing.pem'), keyFile: pki.server.keyFile })).rejects.toThrow(
      `config key "grpc.tls.certFile": ${join(pki.dir, 'missing.pem')} cannot be read (ENOENT)`,
    );
  });
});

function httpsHealth(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    httpsGet({ host: '127.0.0.1', port, path: '/healthz', ca: readFileSync(pki.caFile) }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}
