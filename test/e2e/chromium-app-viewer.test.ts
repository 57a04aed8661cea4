// Full stack with an app that is real libwebrtc and makes keyframes only when asked (issue 21):
// `pixelfleet serve`, the bundled agent, the chromium app as the project's build (one headless
// chromium streaming a game scene through its own RTCPeerConnection, OpenH264) and the share page
// in Debian chromium. In each case the viewer's peer connects seconds after the app's opening
// keyframe went out, so the viewer can only see a picture if the relay asks the app for a keyframe
// and the app obeys: the app's keyFramesEncoded must rise past its value before the viewer's peer
// connected, and the viewer must decode within a generous bound (the 1 s target is bench:stream's).
//
// How the product orders the two legs: the app hears of the relay's player (playerConnected) only
// when the viewer subscribes, and the relay makes the viewer's offer at that same moment, so the
// ingest and the viewer's peer negotiate side by side and the viewer normally catches the opening
// keyframe. A viewer is late when its path is slow or broken during that negotiation; the viewer's
// network (viewer-network.ts) makes it so: a slow path holds the relay's offer, a drop or a control
// plane restart lands between the offer and the page's answer. The drop waits for the page's answer
// and the server never reads it (an answer written into a socket that was dying; left to a race, it
// made the restart case fail in loaded runs only): after a drop both sides count what they read and
// the resume sends again what the other never got (signalling-journal.ts); after a restart the next
// run has no count, and the page sends its answer and candidates again because its peer is still
// being set up (signalling-resume.ts). A drop once the stream is up needs no
// keyframe: the peer connection outlives its signalling socket (the bridged drop at the end of the
// drop case shows that with this app too).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { serveChromiumAppBuild, type ChromiumAppBuild } from '../support/chromium-app/app-build';
import { readLatestAppStats, type AppStats } from '../support/chromium-app/app-stats';
import { callApi, killAll, sessionStatuses } from '../support/fleet-processes';
import { restartServe, startStreamingFleet, type StreamingFleet } from '../support/streaming-fleet';
import { connectedViewerPeer, VIEWER_PEER_PROBE, viewerPeers, type ViewerPeer } from '../support/viewer-peer-probe';
import { ViewerNetwork } from '../support/viewer-network';
import { printMoment } from '../support/moment-figures';

/**
 * The app's picture. Larger ones are no good on a loaded 2-core machine: the encoder falls behind
 * the scene, and OpenH264's scene-change detection then makes keyframes nobody asked for (measured
 * with this scene, chromium to chromium without the relay: every 0.6–0.9 s at 480x270, about
 * 2 s at 1280x720; none in 8–10 s at 320x180), which would hide a keyframe request the app never
 * obeyed. Each case checks that the app made no keyframe of its own before its viewer connected.
 */
const APP_SETTINGS = { resX: 320, resY: 180, fps: 30, maxBitrate: 8_000_000 };
/** The fleet's config: the restart case keeps its ports; a page away for seconds stays resumable on a slow machine. */
const FLEET_CONFIG = { sessions: { connectTimeoutSeconds: 90 }, viewers: { resumeGraceSeconds: 60 } };
/** How long after the app's first keyframe the viewer's peer may start connecting, at least. */
const LATE_BY_MS = 3_000;
/** The generous bound on the viewer's first decoded frame after its peer connected. */
const FIRST_FRAME_BOUND_MS = 5_000;
/** The chromium app starts in seconds (tsx, then chromium); the session may wait for it. */
const APP_START_TIMEOUT_MS = 60_000;

let browser: Awaited<ReturnType<typeof launchChromium>>;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/** The running case's app stats as last read, for a failure's report. */
let lastStats: AppStats | undefined;

beforeEach(({ onTestFailed }) => {
  lastStats = undefined;
  onTestFailed(() => {
    const { keyFramesEncoded, framesEncoded, pliCount, firCount, players } = lastStats ?? {};
    console.error(`the app's stats as last read: ${JSON.stringify(lastStats ? { keyFramesEncoded, framesEncoded, pliCount, firCount, players } : 'none')}`);
  });
});

afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Stand {
  dir: string;
  fleet: StreamingFleet;
  build: ChromiumAppBuild;
  network: ViewerNetwork;
}

/** serve, the agent and the chromium app's build, live (APP_SETTINGS); the share page goes through the viewer's network. */
async function startStand(): Promise<Stand> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-chromium-app-e2e-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const build = await serveChromiumAppBuild();
  cleanups.push(() => build.close());
  const fleet = await startStreamingFleet({ dir, buildUrl: build.buildUrl, config: FLEET_CONFIG });
  const { apiKey, userId, projectId } = fleet.account;
  const patched = await callApi(fleet.cp.httpOrigin, 'PATCH', `/projects/${projectId}/settings`, { apiKey, userId, ...APP_SETTINGS });
  expect(patched.status).toBe(200);
  const network = await ViewerNetwork.start(fleet.cp.httpOrigin);
  cleanups.push(() => network.close());
  return { dir, fleet, build, network };
}

async function openSharePage(stand: Stand): Promise<Page> {
  const page = await browser.context.newPage();
  cleanups.push(() => page.close());
  await page.addInitScript(VIEWER_PEER_PROBE);
  await page.goto(`${stand.network.origin}/share/${stand.fleet.account.projectId}`);
  return page;
}

async function appStats(stand: Stand): Promise<AppStats> {
  let stats: AppStats | undefined;
  await expect.poll(() => (stats = readLatestAppStats(stand.build.statsPath)), { timeout: APP_START_TIMEOUT_MS, interval: 100 }).toBeDefined();
  lastStats = stats;
  return stats!;
}

/**
 * Waits for the app's opening keyframe, then until LATE_BY_MS past it (the point of the case: a
 * deliberate wait, not one for an event). Returns the app's stats at the end of the wait.
 */
async function appStreamedAlone(stand: Stand): Promise<{ firstKeyFrameAt: number; before: AppStats }> {
  await expect.poll(async () => (await appStats(stand)).keyFrameTimes.length, { timeout: APP_START_TIMEOUT_MS, interval: 100 }).toBeGreaterThan(0);
  const firstKeyFrameAt = (await appStats(stand)).keyFrameTimes[0]!;
  await delay(Math.max(0, firstKeyFrameAt + LATE_BY_MS - Date.now()));
  const before = await appStats(stand);
  // The scene made no keyframe of its own in those seconds, while the encoder kept encoding.
  expect(before.keyFramesEncoded).toBe(1);
  expect(before.keyFrameTimes).toEqual([firstKeyFrameAt]);
  expect(before.framesEncoded).toBeGreaterThan(30);
  return { firstKeyFrameAt, before };
}

/**
 * From the moment the viewer's peer could start connecting (`lateFrom`): the peer connects, the
 * app makes a keyframe at the relay's request, and the viewer decodes within the bound. Prints
 * the figures.
 */
async function viewerGetsAPicture(page: Page, stand: Stand, o: { name: string; firstKeyFrameAt: number; before: AppStats; lateFrom: number }): Promise<ViewerPeer> {
  let peer: ViewerPeer | undefined;
  await expect.poll(async () => (peer = await connectedViewerPeer(page)), { timeout: 30_000, interval: 50 }).toBeDefined();
  const connectedAt = peer!.connectedAt!;
  expect(connectedAt - o.firstKeyFrameAt).toBeGreaterThanOrEqual(LATE_BY_MS);
  // The app makes a keyframe once the viewer could connect, which it does only when asked (the
  // stats come from the app's page a few times a second: polled, not read once).
  let after = o.before;
  const requestedOf = (stats: AppStats) => stats.keyFrameTimes.filter((t) => t >= o.lateFrom);
  await expect.poll(async () => requestedOf((after = await appStats(stand))).length, { timeout: FIRST_FRAME_BOUND_MS, interval: 100 }).toBeGreaterThan(0);
  await expect.poll(async () => (peer = await connectedViewerPeer(page))?.firstFrameAt, { timeout: FIRST_FRAME_BOUND_MS + 5_000, interval: 50 }).toBeDefined();
  const firstFrameAt = peer!.firstFrameAt!;
  const requested = requestedOf(after);
  printMoment({
    moment: `${o.name} (${APP_SETTINGS.resX}x${APP_SETTINGS.resY}, whole stack)`,
    ...(requested.length > 0 ? { connectToKeyframeMs: requested[0]! - connectedAt } : {}),
    pictureMs: firstFrameAt - connectedAt,
    connectedAfterFirstKeyframeMs: connectedAt - o.firstKeyFrameAt,
    keyFramesEncoded: [o.before.keyFramesEncoded, after.keyFramesEncoded],
    pliCount: [o.before.pliCount, after.pliCount],
  });
  expect(requested.length).toBeGreaterThan(0);
  expect(firstFrameAt - connectedAt).toBeLessThanOrEqual(FIRST_FRAME_BOUND_MS);
  // The picture moves on from there.
  const decoded = peer!.framesDecoded;
  await expect.poll(async () => (await connectedViewerPeer(page))?.framesDecoded, { timeout: 5_000, interval: 100 }).toBeGreaterThan(decoded + 10);
  return peer!;
}

/** The one session of the fleet, once it exists. */
async function onlySession(grpcAddress: string): Promise<string> {
  let ids: string[] = [];
  await expect.poll(async () => (ids = [...(await sessionStatuses(grpcAddress)).keys()]), { timeout: 20_000, interval: 200 }).toHaveLength(1);
  return ids[0]!;
}

/**
 * The viewer leaves: the session ends once the agent has stopped the app and the app has exited,
 * on its own and cleanly (it closes its chromium first): code 0, not forced.
 */
async function viewerLeaves(stand: Stand, page: Page, grpcAddress: string, sessionId: string): Promise<void> {
  await page.close();
  await expect.poll(async () => (await sessionStatuses(grpcAddress)).get(sessionId), { timeout: 30_000, interval: 200 }).toBe('Terminated');
  const exits = stand.fleet.agent.text().split('\n').filter((line) => line.includes('"msg":"app exited"')).map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(exits).toMatchObject([{ sessionId, exitCode: 0, signal: null, expected: true, forced: false }]);
}

describe('a real libwebrtc app (chromium) and a share-page viewer whose peer connects after the app\'s opening keyframe', () => {
  it('the viewer joins late (a slow path holds the relay\'s offer): the relay asks, the app makes a keyframe, the viewer decodes', { timeout: 180_000 }, async () => {
    const started = performance.now();
    const stand = await startStand();
    const offer = stand.network.holdFrom('offer');
    const page = await openSharePage(stand);
    await offer.held;
    const { firstKeyFrameAt, before } = await appStreamedAlone(stand);

    const lateFrom = Date.now();
    offer.release();
    await viewerGetsAPicture(page, stand, { name: 'late viewer', firstKeyFrameAt, before, lateFrom });
    await viewerLeaves(stand, page, stand.fleet.cp.grpcAddress, await onlySession(stand.fleet.cp.grpcAddress));
    console.log(`[late viewer] test took ${Math.round(performance.now() - started)} ms`);
  });

  it('a signalling drop between the relay\'s offer and the page\'s answer: the page resumes with its token, what either side lost is sent again, the peer connects, the relay asks, the viewer decodes; a later drop leaves the stream alone', { timeout: 180_000 }, async () => {
    const started = performance.now();
    const stand = await startStand();
    const cut = stand.network.cutAfter('offer', { thenPageSends: 'answer' });
    const page = await openSharePage(stand);
    await cut;
    const { firstKeyFrameAt, before } = await appStreamedAlone(stand);

    const lateFrom = Date.now();
    stand.network.up();
    const peer = await viewerGetsAPicture(page, stand, { name: 'resumed after a drop', firstKeyFrameAt, before, lateFrom });
    await stand.fleet.cp.output(/viewer signalling resumed/);

    // Once the stream is up, a drop is bridged: the same peer connection carries on, no new one is made.
    const resumesBefore = stand.fleet.cp.text().match(/viewer signalling resumed/g)!.length;
    const decoded = (await connectedViewerPeer(page))!.framesDecoded;
    stand.network.dropWebSockets();
    await expect.poll(() => stand.fleet.cp.text().match(/viewer signalling resumed/g)!.length, { timeout: 20_000, interval: 100 }).toBe(resumesBefore + 1);
    await expect.poll(async () => (await connectedViewerPeer(page))?.framesDecoded, { timeout: 5_000, interval: 100 }).toBeGreaterThan(decoded + 10);
    const peers = await viewerPeers(page);
    expect(peers.filter((p) => p.connectedAt !== undefined)).toHaveLength(1);
    expect((await connectedViewerPeer(page))!.connectedAt).toBe(peer.connectedAt);
    await viewerLeaves(stand, page, stand.fleet.cp.grpcAddress, await onlySession(stand.fleet.cp.grpcAddress));
    // What each resume sent again (replayedFrames), and what was held while the page was away.
    const resumes = stand.fleet.cp.text().split('\n').filter((line) => line.includes('viewer signalling resumed'));
    console.log(`[resumed after a drop] ${resumes.map((line) => JSON.stringify(pick(JSON.parse(line) as Record<string, unknown>, ['heldSignals', 'replayedFrames', 'framesNoLongerKept']))).join(', ')}`);
    console.log(`[resumed after a drop] test took ${Math.round(performance.now() - started)} ms`);
  });

  it('a control plane restart between the relay\'s offer and the page\'s answer: the page resumes against the next run, its kept answer connects the peer, the relay asks, the viewer decodes', { timeout: 180_000 }, async ({ onTestFailed }) => {
    const started = performance.now();
    const stand = await startStand();
    const cut = stand.network.cutAfter('offer', { thenPageSends: 'answer' });
    const page = await openSharePage(stand);
    await cut;
    const sessionId = await onlySession(stand.fleet.cp.grpcAddress);
    // Killed (no graceful stop) while the page is away with the answer it keeps, and started again.
    await stand.fleet.cp.kill();
    const again = await restartServe(stand.dir, stand.fleet.cp, FLEET_CONFIG);
    // A failure says what the restarted control plane made of the page's resume.
    onTestFailed(() => {
      const lines = again.text().split('\n').filter((line) => /viewer|session|resum/i.test(line));
      console.error(`the restarted control plane's viewer and session lines:\n${lines.slice(-40).map((line) => line.slice(0, 400)).join('\n')}`);
    });
    const { firstKeyFrameAt, before } = await appStreamedAlone(stand);

    const lateFrom = Date.now();
    stand.network.up();
    await viewerGetsAPicture(page, stand, { name: 'resumed after a restart', firstKeyFrameAt, before, lateFrom });
    // The same session, resumed on the next run and never ended.
    await again.output(/viewer signalling resumed/);
    expect(await sessionStatuses(again.grpcAddress)).toEqual(new Map([[sessionId, 'Running']]));
    await viewerLeaves(stand, page, again.grpcAddress, sessionId);
    console.log(`[resumed after a restart] test took ${Math.round(performance.now() - started)} ms`);
  });
});

function pick(record: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in record).map((k) => [k, record[k]]));
}
