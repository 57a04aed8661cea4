// Viewers on the internet, with the Debian packages an operator installs: Chromium plays the
// share page through a real nginx running deploy/nginx/pixelfleet.conf (HTTPS with a certificate
// made by openssl here, the only one Chromium trusts; the signalling WebSocket upgraded through it;
// the control plane trusting it in http.trustProxy), and the session records the viewer's address
// nginx passed, not nginx's.
// With its only path a relay (iceTransportPolicy 'relay'), the viewer reaches the agent through a
// real coturn (deploy/coturn/turnserver.conf, loopback peers allowed) using the per-session
// credential the control plane put in its `config`; the agent itself has no TURN server. A forged or
// expired credential is refused by coturn, and the shipped config as it is refuses a private peer.
import { createHmac } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { printAgentOutputOnFailure, startBundledAgent, type BundledAgent } from '../support/bundled-agent';
import { mockAppCommand } from '../support/mock-app';
import { launchChromium, trustOnlyCertificateArg } from '../support/chromium';
import { freePort, makeCertificate, startCoturn, startNginx, type RunningServer } from '../support/edge-servers';
import { sessionRecord } from '../support/seed';

/**
 * In the tests' own network namespace (test/run-isolated.mjs) nginx listens on a public address
 * added to loopback, so the browser's connections come from it: an address DB-IP places in the
 * United States, where 127.0.0.1 (nginx's own, towards the control plane) has no country.
 * Outside such a namespace it listens on 127.0.0.1 and the address check is left out.
 */
const isolated = process.env.PIXELFLEET_NETNS === '1';
const VIEWER_ADDRESS = isolated ? '8.8.8.8' : '127.0.0.1';
const TURN_SECRET = 'test-turn-secret-0123456789abcdef';
/** A day, as deployed: the session's own end (placement + maxRunTime, an hour by default) comes first. */
const TURN_TTL_SECONDS = 86_400;

let t: TestControlPlane;
let agent: BundledAgent;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let nginx: RunningServer & { origin: string };
let coturn: RunningServer & { port: number; url: string };
let certDir: string;
let projectId: string;

printAgentOutputOnFailure();

beforeAll(async () => {
  if (isolated) {
    const add = spawnSync('ip', ['addr', 'replace', `${VIEWER_ADDRESS}/32`, 'dev', 'lo'], { encoding: 'utf8' });
    if (add.status !== 0) throw new Error(`ip addr replace failed: ${add.stderr}`);
  }
  certDir = mkdtempSync(join(tmpdir(), 'pf-edge-cert-'));
  const { certFile, keyFile } = makeCertificate(certDir, [VIEWER_ADDRESS, '127.0.0.1']);
  coturn = await startCoturn({ secret: TURN_SECRET, realm: 'pixelfleet.test', allowLoopbackPeers: true });
  const nginxPort = await freePort(VIEWER_ADDRESS);
  const origin = `https://${VIEWER_ADDRESS}:${nginxPort}`;
  t = await startTestControlPlane({
    overrides: {
      http: { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'] },
      publicUrls: { platform: origin, share: `${origin}/share`, api: `${origin}/api` },
      turn: { secret: TURN_SECRET, urls: [coturn.url], ttlSeconds: TURN_TTL_SECONDS },
    },
  });
  nginx = await startNginx({ listen: { host: VIEWER_ADDRESS, port: nginxPort }, upstreamPort: t.started.httpPort, certFile, keyFile });
  const owner = await t.cp.accounts.createUser('edge@example.com');
  projectId = (await t.cp.accounts.createProject(owner.userId, 'Edge', 'europe')).projectId;
  await t.cp.registerLocalBuild(projectId);
  // The agent as a public streaming server runs it: no STUN or TURN of its own (ice.iceServers empty).
  agent = await startBundledAgent(t, { launcherCommand: mockAppCommand() });
  // Trusting exactly the certificate made here: another one from nginx would fail the page.
  browser = await launchChromium([trustOnlyCertificateArg(certFile)]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await t?.destroy();
  await nginx?.stop();
  await coturn?.stop();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
  if (isolated) spawnSync('ip', ['addr', 'del', `${VIEWER_ADDRESS}/32`, 'dev', 'lo']);
});

// A failed test's page would keep its session, and the next viewer would wait in line behind it.
afterEach(async () => {
  for (const page of browser.context.pages()) await page.close();
});

const framesDecoded = (page: Page) => page.evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0);

interface RecordedPeer {
  config: RTCConfiguration;
}

/**
 * Every RTCPeerConnection the page makes is recorded with the configuration it was given; with
 * `forceRelay` its iceTransportPolicy becomes 'relay', so the browser gathers and uses relay
 * candidates only: the TURN server is its only path.
 */
async function recordPeers(page: Page, forceRelay: boolean): Promise<void> {
  await page.addInitScript((relay: boolean) => {
    const Native = window.RTCPeerConnection;
    const peers: { config: RTCConfiguration; pc: RTCPeerConnection }[] = [];
    (window as unknown as { peers: typeof peers }).peers = peers;
    window.RTCPeerConnection = class extends Native {
      constructor(config: RTCConfiguration = {}) {
        const given = relay ? { ...config, iceTransportPolicy: 'relay' as const } : config;
        super(given);
        peers.push({ config: given, pc: this });
      }
    };
  }, forceRelay);
}

const peerConfigs = (page: Page) => page.evaluate(() => (window as unknown as { peers: RecordedPeer[] }).peers.map((p) => JSON.parse(JSON.stringify(p.config)) as RTCConfiguration));

/** The candidate types of the selected pair of the page's connected peer connection (the stream's). */
const selectedPair = (page: Page) =>
  page.evaluate(async () => {
    const { pc } = (window as unknown as { peers: { pc: RTCPeerConnection }[] }).peers.find((p) => p.pc.connectionState === 'connected')!;
    const stats = [...(await pc.getStats()).values()] as Record<string, unknown>[];
    const transport = stats.find((s) => s.type === 'transport' && typeof s.selectedCandidatePairId === 'string');
    const pair = stats.find((s) => s.id === transport?.selectedCandidatePairId);
    const local = stats.find((s) => s.id === pair?.localCandidateId);
    const remote = stats.find((s) => s.id === pair?.remoteCandidateId);
    const localTypes = stats.filter((s) => s.type === 'local-candidate').map((s) => s.candidateType);
    return { local: local?.candidateType, remote: remote?.candidateType, localTypes };
  });

const sessionCountry = (sessionId: string) => sessionRecord(t.cp, sessionId)?.client?.countryCode;

describe('viewers on the internet', () => {
  it('plays the share page through nginx over HTTPS; the session records the viewer nginx names, not nginx', async () => {
    const page = await browser.context.newPage();
    // A forged header from the viewer: nginx replaces it with the address it sees.
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': '203.0.113.9' });
    await recordPeers(page, false);
    const response = await page.goto(`${nginx.origin}/share/${projectId}`);
    expect(response?.status()).toBe(200);
    // No TURN secret, credential or server in the page itself: they come with the session.
    const html = await response!.text();
    expect(html).not.toContain(TURN_SECRET);
    expect(html).not.toContain('turn:');
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    const before = await framesDecoded(page);
    await expect.poll(() => framesDecoded(page), { timeout: 5_000, interval: 200 }).toBeGreaterThan(before + 10);

    const running = t.cp.sessions.list({ limit: 10 }).filter((s) => s.status === 'Running');
    expect(running).toHaveLength(1);
    const sessionId = running[0]!.sessionId;
    await page.close();
    await expect.poll(() => t.cp.sessions.get(sessionId).status, { timeout: 15_000 }).toBe('Terminated');
    if (isolated) expect(sessionCountry(sessionId)).toBe('US');
    // The page, its bundle and the signalling socket went through nginx: its access log has the
    // page and bundle over HTTP/2, and the upgrade (101, logged once the socket closed) from the viewer's address.
    const access = () => readFileSync(join(nginx.dir, 'logs/access.log'), 'utf8');
    await expect.poll(access, { timeout: 5_000 }).toMatch(new RegExp(`^${VIEWER_ADDRESS.replaceAll('.', '\\.')} .*"GET /share/${projectId}/signalling HTTP/1.1" 101 `, 'm'));
    expect(access()).toContain('"GET /share/assets/player.js HTTP/2.0" 200 ');
    expect(nginx.output()).not.toMatch(/\[(error|crit|alert|emerg)\]/);
  }, 90_000);

  it("a viewer whose only path is relay plays through coturn with its session's credential; the agent has no TURN", async () => {
    const page = await browser.context.newPage();
    await recordPeers(page, true);
    await page.goto(`${nginx.origin}/share/${projectId}`);
    await expect.poll(() => framesDecoded(page), { timeout: 25_000, interval: 200 }).toBeGreaterThan(0);
    const before = await framesDecoded(page);
    await expect.poll(() => framesDecoded(page), { timeout: 5_000, interval: 200 }).toBeGreaterThan(before + 10);
    const sessionId = t.cp.sessions.list({ limit: 10 }).find((s) => s.status === 'Running')!.sessionId;

    // Each peer connection the page made (Epic's library may make more than one from a `config`)
    // got the relay's servers (none) plus this session's TURN entry, and nothing else.
    const configs = await peerConfigs(page);
    expect(configs.length).toBeGreaterThanOrEqual(1);
    for (const c of configs) expect(c.iceServers).toEqual(configs[0]!.iceServers);
    const servers = configs[0]!.iceServers ?? [];
    expect(servers).toHaveLength(1);
    const server = servers[0]!;
    expect(server.urls).toEqual([coturn.url]);
    const [expiry, named] = String(server.username).split(':');
    expect(named).toBe(sessionId);
    // Valid until a minute past the session's latest end, not for the whole TTL.
    const session = t.cp.sessions.get(sessionId);
    expect(session.maxRunTime).toBe(60);
    expect(Number(expiry)).toBe(Math.ceil((session.placedAt! + 60 * 60_000) / 1000) + 60);
    expect(Number(expiry)).toBeLessThan(Date.now() / 1000 + TURN_TTL_SECONDS - 3600);
    expect(server.credential).toBe(createHmac('sha1', TURN_SECRET).update(String(server.username)).digest('base64'));

    // The media goes through coturn: the selected pair's local side is a relay candidate, and the
    // only kind the browser gathered; coturn allocated for this session's username.
    const pair = await selectedPair(page);
    expect(pair.local).toBe('relay');
    expect(new Set(pair.localTypes)).toEqual(new Set(['relay']));
    // The agent offered host candidates only: it needs no TURN of its own.
    expect(pair.remote).toBe('host');
    expect(coturn.output()).toContain(`:${sessionId}`);
    expect(coturn.output()).toMatch(/ALLOCATE processed, success/);

    await page.close();
    await expect.poll(() => t.cp.sessions.get(sessionId).status, { timeout: 15_000 }).toBe('Terminated');
  }, 90_000);

  it('coturn refuses a forged or an expired credential (401) and allocates for a valid one', async () => {
    const page = await browser.context.newPage();
    // Any page of the origin: a secure context for RTCPeerConnection.
    await page.goto(`${nginx.origin}/healthz`);
    const credential = (secret: string, expirySeconds: number, sessionId: string) => {
      const username = `${expirySeconds}:${sessionId}`;
      return { urls: coturn.url, username, credential: createHmac('sha1', secret).update(username).digest('base64') };
    };
    /** What the browser gathers with only this TURN server: candidate types and the TURN errors. */
    const gather = (server: RTCIceServer) =>
      page.evaluate(async (s) => {
        const pc = new RTCPeerConnection({ iceServers: [s], iceTransportPolicy: 'relay' });
        const types: string[] = [];
        const errors: number[] = [];
        pc.onicecandidate = (e) => {
          if (e.candidate) types.push(e.candidate.type ?? '');
        };
        pc.onicecandidateerror = (e) => errors.push(e.errorCode);
        const done = new Promise<void>((resolve) => pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve()));
        pc.createDataChannel('probe');
        await pc.setLocalDescription(await pc.createOffer());
        await done;
        pc.close();
        return { types, errors };
      }, server);

    const now = Math.floor(Date.now() / 1000);
    const valid = await gather(credential(TURN_SECRET, now + 600, 'sess_valid'));
    expect(valid.types).toContain('relay');

    const forged = await gather(credential('another-secret-0123456789abcdef', now + 600, 'sess_forged'));
    expect(forged.types).toEqual([]);
    expect(forged.errors).toContain(401);

    const expired = await gather(credential(TURN_SECRET, now - 60, 'sess_expired'));
    expect(expired.types).toEqual([]);
    expect(expired.errors).toContain(401);
    await page.close();
  }, 60_000);

  it('the shipped coturn config refuses to relay to a private peer (loopback here), where the test exception allows it', async () => {
    const strict = await startCoturn({ secret: TURN_SECRET, realm: 'pixelfleet.test', allowLoopbackPeers: false });
    try {
      const page = await browser.context.newPage();
      await page.goto(`${nginx.origin}/healthz`);
      const username = `${Math.floor(Date.now() / 1000) + 600}:sess_peer_check`;
      const server = (url: string) => ({ urls: url, username, credential: createHmac('sha1', TURN_SECRET).update(username).digest('base64') });
      /**
       * Two relay-only peers in one page: one through `turn`, the other through the test's coturn, so
       * the first must relay to a peer on 127.0.0.1 (the other's relay address). Resolves with the
       * first's ICE state once it settles, or after 5 s (the refusal comes at once; connecting here takes well under 1 s).
       */
      const pair = (turn: RTCIceServer) =>
        page.evaluate(async ([s, other]) => {
          const relayed = new RTCPeerConnection({ iceServers: [s], iceTransportPolicy: 'relay' });
          const direct = new RTCPeerConnection({ iceServers: [other], iceTransportPolicy: 'relay' });
          relayed.onicecandidate = (e) => void (e.candidate && direct.addIceCandidate(e.candidate));
          direct.onicecandidate = (e) => void (e.candidate && relayed.addIceCandidate(e.candidate));
          relayed.createDataChannel('probe');
          const settled = new Promise<string>((resolve) => {
            relayed.oniceconnectionstatechange = () => {
              if (['connected', 'completed', 'failed'].includes(relayed.iceConnectionState)) resolve(relayed.iceConnectionState);
            };
            setTimeout(() => resolve(relayed.iceConnectionState), 5_000);
          });
          await relayed.setLocalDescription(await relayed.createOffer());
          await direct.setRemoteDescription(relayed.localDescription!);
          await direct.setLocalDescription(await direct.createAnswer());
          await relayed.setRemoteDescription(direct.localDescription!);
          const state = await settled;
          relayed.close();
          direct.close();
          return state;
        }, [turn, server(coturn.url)] as const);

      expect(await pair(server(coturn.url))).toMatch(/^(connected|completed)$/);
      expect(await pair(server(strict.url))).not.toMatch(/^(connected|completed)$/);
      // coturn refused the permission for the loopback peer (403 Forbidden), not the credential.
      expect(strict.output()).toMatch(/CREATE_PERMISSION processed, error 403/);
      expect(strict.output()).toMatch(/ALLOCATE processed, success/);
    } finally {
      await strict.stop();
    }
  }, 60_000);
});
