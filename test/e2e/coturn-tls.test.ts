// TURN over TLS with Debian's coturn and the certbot deploy hook as an operator installs them:
// the hook copies certbot's certificate and key where deploy/coturn/turnserver.conf's cert= and
// pkey= point, coturn serves it on its TLS port, and on a renewal the hook's reload (SIGUSR2 to
// coturn, as its default `systemctl kill --signal=SIGUSR2 coturn.service` sends) makes coturn
// serve the renewed certificate to new connections without a restart. Copying alone does not.
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli-process';
import { startCoturn, type RunningServer } from '../support/edge-servers';
import { makeTestPki, type CertPair, type TestPki } from '../support/tls-certs';

const HOOK = join(REPO_ROOT, 'deploy/coturn/certbot-deploy-hook.sh');

let pki: TestPki;
let root: string;
let lineage: string;
let certDir: string;
let coturn: RunningServer & { tlsPort?: number; pidFile: string };

/** certbot's live/ links moved to a certificate, as an issue or a renewal leaves them. */
function certbotIssues(pair: CertPair): void {
  mkdirSync(lineage, { recursive: true });
  for (const [name, file] of [['fullchain.pem', pair.certFile], ['privkey.pem', pair.keyFile]] as const) {
    rmSync(join(lineage, name), { force: true });
    symlinkSync(file, join(lineage, name));
  }
}

function runHook(reload: string): void {
  const run = spawnSync(HOOK, [], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RENEWED_LINEAGE: lineage, COTURN_CERT_DIR: certDir, COTURN_OWNER: userInfo().username, COTURN_RELOAD: reload },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`the hook exited ${run.status}: ${run.stderr}`);
}

/** The serial of the certificate a new TLS connection to coturn's TLS port gets, verified against the test CA. */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: readFileSync(pki.caFile) }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const serialOf = (file: string): string => new X509Certificate(readFileSync(file)).serialNumber;

beforeAll(async () => {
  pki = makeTestPki();
  root = mkdtempSync(join(tmpdir(), 'pf-coturn-tls-'));
  lineage = join(root, 'letsencrypt/live/turn.example.com');
  certDir = join(root, 'coturn');
  certbotIssues(pki.server);
  runHook('true');
  coturn = await startCoturn({ secret: 'test-turn-secret-0123456789abcdef', realm: 'pixelfleet.test', allowLoopbackPeers: false, tls: { certFile: join(certDir, 'fullchain.pem'), keyFile: join(certDir, 'privkey.pem') } });
}, 30_000);

afterAll(async () => {
  await coturn?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

describe('coturn with the certbot deploy hook', () => {
  it("serves the hook's copy on its TLS port, and the renewed one after the hook's reload (SIGUSR2), without a restart", async () => {
    const port = coturn.tlsPort!;
    expect(await servedSerial(port)).toBe(serialOf(pki.server.certFile));
    expect(existsSync(coturn.pidFile)).toBe(true);
    const pid = readFileSync(coturn.pidFile, 'utf8').trim();

    // Renewed and copied, but coturn not told: it still serves the certificate it loaded.
    certbotIssues(pki.renewed);
    runHook('true');
    expect(readFileSync(join(certDir, 'fullchain.pem'), 'utf8')).toBe(readFileSync(pki.renewed.certFile, 'utf8'));
    expect(await servedSerial(port)).toBe(serialOf(pki.server.certFile));

    runHook(`kill -USR2 ${pid}`);
    await expect.poll(() => servedSerial(port), { timeout: 10_000, interval: 100 }).toBe(serialOf(pki.renewed.certFile));
    // The same process, still running: reloaded, not restarted.
    expect(readFileSync(coturn.pidFile, 'utf8').trim()).toBe(pid);
    expect(() => process.kill(Number(pid), 0)).not.toThrow();
  }, 60_000);
});
