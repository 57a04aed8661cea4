// HTTPS without a proxy: the control plane serves the share page itself with http.tls, and Debian's
// chromium plays it over https with the signalling WebSocket over wss. Chromium trusts exactly the
// leaf certificate's public key (trustOnlyCertificateArg), not every certificate: the same browser
// without the flag refuses the page. A reload of http.tls (what SIGHUP does;
// test/integration/tls-processes.test.ts sends the signal to `pixelfleet serve`) serves the renewed
// certificate, with a new key, to new connections: a browser trusting only the old key is refused,
// one trusting the new key plays. The agent is the bundle, as it ships (startBundledAgent).
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { printAgentOutputOnFailure, startBundledAgent, type BundledAgent } from '../support/bundled-agent';
import { mockAppCommand } from '../support/mock-app';
import { launchChromium, trustOnlyCertificateArg } from '../support/chromium';
import { makeTestPki, type TestPki } from '../support/tls-certs';

let pki: TestPki;
let live: { certFile: string; keyFile: string };
let liveDir: string;
let t: TestControlPlane;
let agent: BundledAgent;
let shareUrl: string;
const browsers: Awaited<ReturnType<typeof launchChromium>>[] = [];

printAgentOutputOnFailure();

/** A Chromium of its own (a fresh profile: no connection or TLS session of another one to reuse). */
async function browserTrusting(certFile?: string) {
  const browser = await launchChromium(certFile === undefined ? [] : [trustOnlyCertificateArg(certFile)]);
  browsers.push(browser);
  return browser;
}

/** The serial number of the certificate a new TLS connection to the HTTPS port gets (verified against the test CA). */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: readFileSync(pki.caFile), ALPNProtocols: ['http/1.1'] }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const serialOf = (file: string): string => new X509Certificate(readFileSync(file)).serialNumber;

const framesDecoded = (page: Page) => page.evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0);

beforeAll(async () => {
  pki = makeTestPki();
  liveDir = mkdtempSync(join(tmpdir(), 'pf-https-live-'));
  live = { certFile: join(liveDir, 'http.pem'), keyFile: join(liveDir, 'http.key') };
  copyFileSync(pki.server.certFile, live.certFile);
  copyFileSync(pki.server.keyFile, live.keyFile);
  t = await startTestControlPlane({ overrides: { http: { host: '127.0.0.1', port: 0, tls: live } } });
  const owner = await t.cp.accounts.createUser('https@example.com');
  const projectId = (await t.cp.accounts.createProject(owner.userId, 'Https', 'europe')).projectId;
  await t.cp.registerLocalBuild(projectId);
  agent = await startBundledAgent(t, { launcherCommand: mockAppCommand() });
  shareUrl = `${t.started.publicUrls.share}/${projectId}`;
}, 60_000);

afterAll(async () => {
  for (const b of browsers.splice(0)) await b.close();
  await agent?.stop();
  await t?.destroy();
  if (liveDir) rmSync(liveDir, { recursive: true, force: true });
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

/**
 * Opens the share page in a new tab, waits for the video to decode and keep decoding, checks the
 * page and its signalling socket went over TLS, then closes the tab and waits for its session to end.
 */
async function plays(browser: Awaited<ReturnType<typeof launchChromium>>): Promise<void> {
  const page = await browser.context.newPage();
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  const response = await page.goto(shareUrl);
  expect(response?.status()).toBe(200);
  expect(await page.evaluate(() => ({ protocol: location.protocol, secure: window.isSecureContext }))).toEqual({ protocol: 'https:', secure: true });
  await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
  const before = await framesDecoded(page);
  await expect.poll(() => framesDecoded(page), { timeout: 5_000, interval: 200 }).toBeGreaterThan(before + 10);
  const running = t.cp.sessions.list({ limit: 20 }).filter((s) => s.status === 'Running');
  expect(running.map((s) => s.assignedWorker)).toEqual([agent.workerId]);
  const signalling = `${shareUrl.replace(/^https:/, 'wss:')}/signalling`;
  expect(sockets).toContain(signalling);
  expect(sockets.every((url) => url.startsWith('wss://'))).toBe(true);
  await page.close();
  await expect.poll(() => t.cp.sessions.get(running[0]!.sessionId).status, { timeout: 15_000 }).toBe('Terminated');
}

/** What a navigation to the share page ends with: 'loaded' or the browser's network error. */
async function navigation(browser: Awaited<ReturnType<typeof launchChromium>>): Promise<string> {
  const page = await browser.context.newPage();
  try {
    await page.goto(shareUrl);
    return 'loaded';
  } catch (err) {
    return /net::(ERR_[A-Z_]+)/.exec((err as Error).message)?.[1] ?? (err as Error).message;
  } finally {
    await page.close();
  }
}

describe('the share page over HTTPS served by the control plane itself (http.tls)', () => {
  it('plays in chromium over https with signalling over wss; chromium trusts the leaf key it was given, and nothing else', async () => {
    expect(shareUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/share\/prj_/);
    await plays(await browserTrusting(pki.server.certFile));
    // The flag is what makes the browser trust the certificate: without it, or for another key, it refuses.
    expect(await navigation(await browserTrusting())).toBe('ERR_CERT_AUTHORITY_INVALID');
    expect(await navigation(await browserTrusting(pki.renewed.certFile))).toBe('ERR_CERT_AUTHORITY_INVALID');
  }, 120_000);

  it('after a reload of http.tls, new connections get the renewed certificate: the old key is refused, the new one plays', async () => {
    const before = serialOf(pki.server.certFile);
    expect(await servedSerial(t.started.httpPort)).toBe(before);
    copyFileSync(pki.renewed.certFile, live.certFile);
    copyFileSync(pki.renewed.keyFile, live.keyFile);
    t.cp.reloadTls();
    expect(await servedSerial(t.started.httpPort)).toBe(serialOf(pki.renewed.certFile));
    expect(serialOf(pki.renewed.certFile)).not.toBe(before);
    expect(await navigation(await browserTrusting(pki.server.certFile))).toBe('ERR_CERT_AUTHORITY_INVALID');
    await plays(await browserTrusting(pki.renewed.certFile));
  }, 120_000);
});
