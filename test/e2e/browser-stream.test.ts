// End to end in a real browser: Debian chromium opens the share URL, is placed on a worker
// whose agent launched the mock Unreal app, decodes the H.264 stream through the werift relay,
// round-trips a UIInteraction via the iframe embedding API, and a second viewer waits in line
// and is promoted to streaming when the first page closes. The page runs Epic's UE 5.7 frontend
// library; the same page built on the UE 5.5 one streams too. A signalling drop mid-stream is
// bridged without touching the media. An app that kicks its viewer (disconnectPlayer) ends the
// session with the page's own sentence. An app that takes 30 s to start (-MockStartupSeconds) is waited for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { bundlePlayer } from '@pixelfleet/web-player';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { printAgentOutputOnFailure, startBundledAgent, type BundledAgent } from '../support/bundled-agent';
import { mockAppCommand } from '../support/mock-app';
import { launchChromium } from '../support/chromium';
import { framesDecoded, playerFrame, playerMessages, serveEmbeddingPage } from '../support/embedded-player';
import { setProjectSettings, statusHistory } from '../support/seed';

let t: TestControlPlane;
let agent: BundledAgent;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let shareUrl: string;
/** A project whose app takes 30 s to start, as a big Unreal level does. */
let slowShareUrl: string;
let host: Awaited<ReturnType<typeof serveEmbeddingPage>>;
let hostUrl: string;

printAgentOutputOnFailure();

beforeAll(async () => {
  browser = await launchChromium();
  t = await startTestControlPlane();
  const owner = await t.cp.accounts.createUser('browser@example.com');
  const projectId = (await t.cp.accounts.createProject(owner.userId, 'Browser', 'europe')).projectId;
  await t.cp.registerLocalBuild(projectId);
  setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000 });
  // Kick mode: only a UIInteraction {"kick": …} makes the app disconnect its viewer; the others are echoed.
  agent = await startBundledAgent(t, { launcherCommand: mockAppCommand('-MockKickOnUIInteraction') });
  shareUrl = `${t.started.publicUrls.share}/${projectId}`;
  const slowProjectId = (await t.cp.accounts.createProject(owner.userId, 'Slow start', 'europe')).projectId;
  await t.cp.registerLocalBuild(slowProjectId);
  setProjectSettings(t.cp, slowProjectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000, launchArgs: ['-MockStartupSeconds=30'] });
  slowShareUrl = `${t.started.publicUrls.share}/${slowProjectId}`;
  host = await serveEmbeddingPage(shareUrl);
  hostUrl = host.url;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await host?.close();
  await agent?.stop();
  await t?.destroy();
});

const playerText = (page: Page) => playerFrame(page).evaluate(() => document.body.innerText);

/**
 * Which generation of Epic's frontend library drives the player: '5.7' when its Config has the
 * BrowserSendOffer flag (UE 5.6+ libraries), '5.5' when not, 'none' without a library object.
 */
const frontendGeneration = (page: Page) =>
  playerFrame(page).evaluate(() => {
    const stream = (window as unknown as { pixelStreaming?: { config: { getFlags(): { id: string }[] } } }).pixelStreaming;
    if (stream === undefined) return 'none';
    return stream.config.getFlags().some((flag) => flag.id === 'BrowserSendOffer') ? '5.7' : '5.5';
  });

/** A customer's page embedding the player (another origin), recording what the player posts to it. */
async function embed(page: Page): Promise<void> {
  await page.goto(hostUrl);
  await page.waitForSelector('#player');
}

/** The host page sends a UIInteraction through the embedding API. */
const postUiInteraction = (page: Page, data: unknown) =>
  page.evaluate((d) => {
    (document.getElementById('player') as HTMLIFrameElement).contentWindow!.postMessage({ source: 'pixelfleet-host', type: 'uiInteraction', data: d }, '*');
  }, data);

describe('a viewer in chromium', () => {
  it('decodes the stream, round-trips a UIInteraction, and a queued second viewer is promoted when the first leaves', async () => {
    const first = await browser.context.newPage();
    await embed(first);
    // Decoded frames keep rising: the picture really moves.
    await expect.poll(() => framesDecoded(first), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    const before = await framesDecoded(first);
    await expect.poll(() => framesDecoded(first), { timeout: 5_000, interval: 200 }).toBeGreaterThan(before + 10);
    await expect.poll(async () => (await playerMessages(first)).map((m) => m.state).filter(Boolean), { timeout: 10_000 }).toContain('loadingComplete');
    expect(await frontendGeneration(first)).toBe('5.7');

    // UIInteraction through the embedding API reaches the app, whose Response comes back.
    await first.evaluate(() => {
      (document.getElementById('player') as HTMLIFrameElement).contentWindow!.postMessage({ source: 'pixelfleet-host', type: 'uiInteraction', data: { ping: 'e2e' } }, '*');
    });
    await expect.poll(async () => (await playerMessages(first)).filter((m) => m.type === 'response').map((m) => m.data), { timeout: 10_000 }).toContainEqual('{"ping":"e2e"}');

    // window.pixelStreaming, where Epic's stock player puts it, is the object driving this stream.
    const sent = await playerFrame(first).evaluate(() => (window as unknown as { pixelStreaming?: { emitUIInteraction(data: object): boolean } }).pixelStreaming?.emitUIInteraction({ ping: 'window' }));
    expect(sent).toBe(true);
    await expect.poll(async () => (await playerMessages(first)).filter((m) => m.type === 'response').map((m) => m.data), { timeout: 10_000 }).toContainEqual('{"ping":"window"}');

    // A second viewer waits and sees its position.
    const second = await browser.context.newPage();
    await embed(second);
    await expect.poll(async () => (await playerMessages(second)).map((m) => m.state), { timeout: 10_000 }).toContain('queue-1');
    await expect.poll(() => playerText(second), { timeout: 5_000 }).toMatch(/number 1/i);

    // The first viewer leaves: the second is promoted and streams.
    await first.close();
    await expect.poll(() => framesDecoded(second), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    const states = (await playerMessages(second)).map((m) => m.state).filter(Boolean);
    expect(states.indexOf('queue-1')).toBeLessThan(states.indexOf('loadingComplete'));
    await second.close();
  }, 120_000);

  it("the same page built on Epic's UE 5.5 frontend library (1.3) streams and takes input too", async () => {
    const older = await bundlePlayer('@epicgames-ps/lib-pixelstreamingfrontend-ue5.5');
    const page = await browser.context.newPage();
    // The control plane serves the 5.7 bundle; this page gets the 5.5 one in its place.
    await page.route('**/share/assets/player.js', (route) => route.fulfill({ status: 200, contentType: 'text/javascript; charset=utf-8', body: older.js }));
    await embed(page);
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    expect(await frontendGeneration(page)).toBe('5.5');
    const before = await framesDecoded(page);
    await expect.poll(() => framesDecoded(page), { timeout: 5_000, interval: 200 }).toBeGreaterThan(before + 10);
    await postUiInteraction(page, { ping: 'ue5.5' });
    await expect.poll(async () => (await playerMessages(page)).filter((m) => m.type === 'response').map((m) => m.data), { timeout: 10_000 }).toContainEqual('{"ping":"ue5.5"}');
    const sessionId = t.cp.sessions.list({ limit: 10 }).find((s) => s.status === 'Running')?.sessionId;
    await page.close();
    await expect.poll(() => t.cp.sessions.get(sessionId!).status, { timeout: 10_000 }).toBe('Terminated');
  }, 90_000);

  it('bridges a signalling drop mid-stream: the same session keeps decoding and still takes input', async () => {
    const page = await browser.context.newPage();
    await embed(page);
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    const running = t.cp.sessions.list({ limit: 10 }).filter((s) => s.status === 'Running');
    expect(running).toHaveLength(1);
    const sessionId = running[0]!.sessionId;

    // The viewer's socket dies without a close frame, as when a proxy or the network drops it.
    const sockets = [...(t.cp.http as unknown as { websocketServer: { clients: Set<{ terminate(): void }> } }).websocketServer.clients];
    expect(sockets).toHaveLength(1);
    sockets[0]!.terminate();
    await expect.poll(() => t.logs.text(), { timeout: 10_000 }).toContain('viewer signalling resumed');
    expect(t.cp.gateway.detached).toBe(0);

    const before = await framesDecoded(page);
    await expect.poll(() => framesDecoded(page), { timeout: 5_000, interval: 200 }).toBeGreaterThan(before + 10);
    await page.evaluate(() => {
      (document.getElementById('player') as HTMLIFrameElement).contentWindow!.postMessage({ source: 'pixelfleet-host', type: 'uiInteraction', data: { ping: 'after-drop' } }, '*');
    });
    await expect.poll(async () => (await playerMessages(page)).filter((m) => m.type === 'response').map((m) => m.data), { timeout: 10_000 }).toContainEqual('{"ping":"after-drop"}');
    expect((await playerMessages(page)).map((m) => m.state)).not.toContain('disconnected');
    expect(await playerFrame(page).evaluate(() => document.querySelector('main')?.dataset['reconnecting'])).toBeUndefined();

    expect(statusHistory(t.cp, sessionId)).toEqual(['Enqueued', 'Starting', 'Running']);
    await page.close();
    await expect.poll(() => t.cp.sessions.get(sessionId).status, { timeout: 10_000 }).toBe('Terminated');
  }, 90_000);

  it("an app that disconnects its viewer ends the session with 4012: the page shows its sentence and tells the embedding page why", async () => {
    const page = await browser.context.newPage();
    await embed(page);
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    await expect.poll(() => t.cp.sessions.list({ limit: 10 }).filter((s) => s.status === 'Running').length, { timeout: 10_000 }).toBe(1);
    const sessionId = t.cp.sessions.list({ limit: 10 }).find((s) => s.status === 'Running')?.sessionId;

    await postUiInteraction(page, { kick: 'game over' });
    await expect.poll(async () => (await playerMessages(page)).filter((m) => m.state === 'disconnected'), { timeout: 10_000 }).toEqual([
      { source: 'pixelfleet', type: 'state', state: 'disconnected', code: 4012, reason: 'the app disconnected the viewer: game over', message: 'The application ended your session.' },
    ]);
    expect(await playerText(page)).toContain('The application ended your session.');
    await expect.poll(() => t.cp.sessions.get(sessionId!).status, { timeout: 15_000 }).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId!).endReason).toBe('app disconnected the viewer');
    await page.close();
  }, 90_000);

  it('an app that takes 30 s to start: the page says it is starting, nothing gives up, and the stream plays once the app is up', async () => {
    const page = await browser.context.newPage();
    const navigated = Date.now();
    await page.goto(slowShareUrl);
    await expect.poll(() => page.evaluate(() => document.body.innerText), { timeout: 10_000 }).toContain('Launching the application. This can take a minute.');
    // A timeout anywhere on the way (page, gateway, agent) would end the session before the app is up.
    await expect.poll(() => page.evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0), { timeout: 45_000, interval: 500 }).toBeGreaterThan(10);
    expect(Date.now() - navigated).toBeGreaterThanOrEqual(30_000);
    await page.close();
  }, 90_000);
});
