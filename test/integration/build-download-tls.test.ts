// The agent's build downloads over real TLS, as its config says (docs/deployment.md "TLS"): a real HTTPS
// server with certificates made here by openssl serves a real build zip to an agent built from
// its config (buildAgent). A private CA works with tls.caFile and is refused without it, naming
// the key; a wrong CA, an expired certificate and a wrong host name are refused with clear
// messages and no retry. Plain http:// to another machine is refused before any connection unless
// tls.insecure; to a loopback host it stays allowed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { BuildCache, buildAgent, loadAgentConfig } from '@pixelfleet/agent';
import { failureOf } from '../support/command-failure';
import type { PrepareBuildCommand } from '@pixelfleet/proto';
import { createLogger, ManualClock } from '@pixelfleet/common';
import { writeBuildZip } from '../support/build-zips';
import { makeTestPki, type CertPair, type TestPki } from '../support/tls-certs';

/**
 * In the tests' own network namespace (test/run-isolated.mjs) an address other machines could
 * have is added to loopback, so a real server stands for a plain-HTTP control plane on another
 * machine. Outside such a namespace that would change the machine's network, so those cases do
 * not run there (the refusal before any connection runs everywhere).
 */
const isolated = process.env.PIXELFLEET_NETNS === '1';
const REMOTE_ADDRESS = '198.51.100.20';

let root: string;
let pki: TestPki;
let zip: { body: Buffer; sha256: string };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pf-build-tls-'));
  pki = makeTestPki();
  const body = await readFile(await writeBuildZip(root, 'linux', { pakBytes: 64 * 1024 }));
  zip = { body, sha256: createHash('sha256').update(body).digest('hex') };
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(pki.dir, { recursive: true, force: true });
});

/** Serves the build at any path; `requests` counts the HTTP requests that got through (a refused handshake makes none). */
function handler(requests: string[]) {
  return (req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.url ?? '');
    res.writeHead(200, { 'content-length': String(zip.body.length), 'content-type': 'application/zip' }).end(zip.body);
  };
}

async function listen(server: Server, host: string): Promise<number> {
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

/** A real HTTPS server on 127.0.0.1 presenting `pair`; closed when the test ends. */
async function httpsServer(pair: CertPair): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const server = createHttpsServer({ cert: await readFile(pair.certFile), key: await readFile(pair.keyFile) }, handler(requests));
  const port = await listen(server, '127.0.0.1');
  return { url: `https://127.0.0.1:${port}/api/agent/archives/upl_1.zip?token=t0k`, requests };
}

async function httpServer(host: string): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const port = await listen(createHttpServer(handler(requests)), host);
  return { url: `http://${host}:${port}/api/agent/archives/upl_1.zip?token=t0k`, requests };
}

function command(downloadUrl: string): PrepareBuildCommand {
  return { kind: 'prepareBuild', uploadId: 'upl_1', projectId: 'prj_a', downloadUrl, sizeBytes: zip.body.length, sha256: zip.sha256 };
}

/** An agent built from its config as `run` builds it (never started: no control link is dialed); `lines` holds its log. */
async function agentWith(env: Record<string, string>) {
  const dataDir = await mkdtemp(join(root, 'agent-'));
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const config = loadAgentConfig({
    env: { PIXELFLEET_AGENT_CONTROL_PLANE: '127.0.0.1:9', PIXELFLEET_AGENT_REGION: 'europe', PIXELFLEET_AGENT_DATA_DIR: dataDir, ...env },
  });
  // The ManualClock never runs a retry's backoff: a failure that were retried would hang the test.
  const agent = buildAgent(config, { logger: createLogger('info', sink), clock: new ManualClock() });
  onTestFinished(() => agent.close());
  return { agent, lines };
}

describe('HTTPS build downloads trust what the control link trusts', () => {
  it('a certificate from a private CA is accepted with tls.caFile, and the build is prepared', async () => {
    const server = await httpsServer(pki.server);
    const { agent } = await agentWith({ PIXELFLEET_AGENT_TLS__CA_FILE: pki.caFile });
    const record = await agent.builds.prepare(command(server.url));
    expect(record.sha256).toBe(zip.sha256);
    expect(agent.builds.list()).toEqual([{ uploadId: 'upl_1', sha256: zip.sha256, ready: true }]);
    expect(server.requests).toHaveLength(1);
  });

  it('without tls.caFile the private CA is refused at once, naming the key', async () => {
    const server = await httpsServer(pki.server);
    const { agent } = await agentWith({});
    const host = new URL(server.url).host;
    expect(await failureOf(agent.builds.prepare(command(server.url)))).toEqual([
      'DOWNLOAD_FAILED',
      `the build download from ${host} failed TLS verification: the server's certificate is not signed by a trusted CA (set tls.caFile in the agent's config to the CA that signed it)`,
    ]);
    expect(server.requests).toEqual([]);
    expect(agent.builds.list()).toEqual([]);
  });

  it('a certificate from another CA than tls.caFile, an expired one and one for another host are refused, each in its words', async () => {
    const { agent } = await agentWith({ PIXELFLEET_AGENT_TLS__CA_FILE: pki.caFile });
    const otherCa = await httpsServer(pki.otherCaServer);
    const expired = await httpsServer(pki.expired);
    const wrongHost = await httpsServer(pki.wrongHost);
    const from = (url: string) => `the build download from ${new URL(url).host} failed TLS verification: `;
    expect(await failureOf(agent.builds.prepare(command(otherCa.url)))).toEqual([
      'DOWNLOAD_FAILED',
      `${from(otherCa.url)}the server's certificate is not signed by the CA in tls.caFile (${pki.caFile})`,
    ]);
    expect(await failureOf(agent.builds.prepare(command(expired.url)))).toEqual(['DOWNLOAD_FAILED', `${from(expired.url)}the server's certificate has expired (renew it on the server)`]);
    expect(await failureOf(agent.builds.prepare(command(wrongHost.url)))).toEqual([
      'DOWNLOAD_FAILED',
      `${from(wrongHost.url)}the server's certificate does not name 127.0.0.1 (the host of the control plane's publicUrls.agents must be a name its HTTPS certificate carries; the agent's tls.serverName applies to the control link only)`,
    ]);
    expect([...otherCa.requests, ...expired.requests, ...wrongHost.requests]).toEqual([]);
  });

  it('a redirect to another origin (an object store) trusts the bundled roots and tls.caFile together, and refuses any other CA', async () => {
    const { agent } = await agentWith({ PIXELFLEET_AGENT_TLS__CA_FILE: pki.caFile });
    /** The control plane's archive route: 307 to `target` on another origin (localhost, not 127.0.0.1). */
    const redirecting = async (target: string): Promise<string> => {
      const server = createHttpsServer({ cert: await readFile(pki.server.certFile), key: await readFile(pki.server.keyFile) }, (_req, res) => res.writeHead(307, { location: target }).end());
      const port = await listen(server, '127.0.0.1');
      return `https://127.0.0.1:${port}/agent/builds/upl_1/archive?token=t0k`;
    };
    const store = await httpsServer(pki.server);
    const storeUrl = new URL(store.url);
    storeUrl.hostname = 'localhost';
    const record = await agent.builds.prepare(command(await redirecting(storeUrl.href)));
    expect(record.sha256).toBe(zip.sha256);
    expect(store.requests).toHaveLength(1);

    const untrusted = await httpsServer(pki.otherCaServer);
    const untrustedUrl = new URL(untrusted.url);
    untrustedUrl.hostname = 'localhost';
    const [code, message] = await failureOf(agent.builds.prepare({ ...command(await redirecting(untrustedUrl.href)), uploadId: 'upl_2' }));
    expect([code, message]).toEqual(['DOWNLOAD_FAILED', expect.stringContaining('failed TLS verification')]);
    expect(untrusted.requests).toEqual([]);
  });

  it('a tls.caFile that cannot be read when a download starts fails it naming the key', async () => {
    const server = await httpsServer(pki.server);
    const missing = join(root, 'gone-ca.pem');
    const cache = new BuildCache({ dir: join(await mkdtemp(join(root, 'cache-')), 'builds'), maxBytes: 1024 ** 3, clock: new ManualClock(), log: createLogger('silent'), tls: { caFile: missing } });
    onTestFinished(() => cache.close());
    expect(await failureOf(cache.prepare(command(server.url)))).toEqual(['DOWNLOAD_FAILED', `tls.caFile ${missing} cannot be read: ENOENT`]);
    expect(server.requests).toEqual([]);
  });
});

describe('plain http:// build downloads', () => {
  const refusal = (host: string) =>
    `the build URL is plain http:// to another machine (${host}): the archive link and the build would cross the network unencrypted; give the control plane's publicUrls.agents an https:// origin, or set buildCache.insecureDownloads: true in the agent's config to accept plaintext`;

  it('to another machine are refused before any connection', async () => {
    const { agent } = await agentWith({});
    // Nothing listens there (a documentation address): a connection attempt would fail and be retried on the ManualClock, never answering.
    expect(await failureOf(agent.builds.prepare(command('http://192.0.2.1:9/api/agent/archives/upl_1.zip?token=t0k')))).toEqual(['DOWNLOAD_FAILED', refusal('192.0.2.1:9')]);
    expect(await failureOf(agent.builds.prepare(command('http://cp.example.com/api/agent/archives/upl_1.zip?token=t0k')))).toEqual(['DOWNLOAD_FAILED', refusal('cp.example.com')]);
  });

  it('to a loopback host are downloaded (one machine: the demo and the tests)', async () => {
    const server = await httpServer('127.0.0.1');
    const { agent, lines } = await agentWith({});
    await agent.builds.prepare(command(server.url));
    expect(server.requests).toHaveLength(1);
    expect(lines.filter((l) => l.includes('plaintext'))).toEqual([]);
  });

  describe.runIf(isolated)('to a server on another address', () => {
    beforeAll(() => {
      const add = spawnSync('ip', ['addr', 'replace', `${REMOTE_ADDRESS}/32`, 'dev', 'lo'], { encoding: 'utf8' });
      if (add.status !== 0) throw new Error(`ip addr replace failed: ${add.stderr}`);
    });

    it('are refused without a request reaching it', async () => {
      const server = await httpServer(REMOTE_ADDRESS);
      const { agent } = await agentWith({});
      expect(await failureOf(agent.builds.prepare(command(server.url)))).toEqual(['DOWNLOAD_FAILED', refusal(new URL(server.url).host)]);
      expect(server.requests).toEqual([]);
    });

    it('are downloaded with buildCache.insecureDownloads (the control link keeping its TLS) or tls.insecure, with a warning', async () => {
      const envs: Record<string, string>[] = [{ PIXELFLEET_AGENT_BUILD_CACHE__INSECURE_DOWNLOADS: 'true', PIXELFLEET_AGENT_TLS__CA_FILE: pki.caFile }, { PIXELFLEET_AGENT_TLS__INSECURE: 'true' }];
      for (const env of envs) {
        const server = await httpServer(REMOTE_ADDRESS);
        const { agent, lines } = await agentWith(env);
        await agent.builds.prepare(command(server.url));
        await agent.builds.delete('upl_1');
        expect(server.requests).toHaveLength(1);
        const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string; host?: string }).filter((l) => l.level === 40);
        expect(warnings).toContainEqual(
          expect.objectContaining({ msg: 'build download in plaintext (buildCache.insecureDownloads): the archive link and the build cross the network unencrypted', host: new URL(server.url).host }),
        );
      }
    });
  });
});
