// A warm pool seen from a real browser: the mock Unreal app takes 10 s to start (-MockStartupSeconds,
// as a packaged level does), the project keeps one warm instance, and Debian chromium opening the
// share link (embedded, with query parameters) is served by it: frames decoded within a few seconds
// of navigation, where a launch alone takes 10. The relay's config, sent when the instance started
// with no viewer to take it, reaches the page before its streamer list (Epic's frontend subscribes
// only once it has it). The link's query parameters reach the app as one UIInteraction (the mock
// echoes it back), and the pool launches the instance's replacement at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { printAgentOutputOnFailure, startBundledAgent, type BundledAgent } from '../support/bundled-agent';
import { mockAppCommand } from '../support/mock-app';
import { launchChromium } from '../support/chromium';
import { framesDecoded, playerMessages, serveEmbeddingPage } from '../support/embedded-player';
import { sessionRecord, setProjectSettings } from '../support/seed';

let t: TestControlPlane;
let agent: BundledAgent;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let projectId: string;
let host: Awaited<ReturnType<typeof serveEmbeddingPage>>;

/** The app start a real packaged level takes (the mock idles this long before it dials its signalling). */
const APP_START_SECONDS = 10;

printAgentOutputOnFailure();

beforeAll(async () => {
  browser = await launchChromium();
  t = await startTestControlPlane();
  const owner = await t.cp.accounts.createUser('warm@example.com');
  projectId = (await t.cp.accounts.createProject(owner.userId, 'Warm', 'europe')).projectId;
  await t.cp.registerLocalBuild(projectId);
  setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000, launchArgs: [`-MockStartupSeconds=${APP_START_SECONDS}`] });
  // Two slots: the claimed instance and its replacement.
  agent = await startBundledAgent(t, { slots: 2, launcherCommand: mockAppCommand('-MockKickOnUIInteraction') });
  const shareUrl = `${t.started.publicUrls.share}/${projectId}?level=forest&lang=de`;
  host = await serveEmbeddingPage(shareUrl);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await host?.close();
  await agent?.stop();
  await t?.destroy();
});

describe('a share page served by a warm instance', () => {
  it(`decodes video within seconds of navigation although the app takes ${APP_START_SECONDS} s to start; the link's query parameters reach the app; the pool refills`, { timeout: 120_000 }, async () => {
    setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000, launchArgs: [`-MockStartupSeconds=${APP_START_SECONDS}`], warmPoolMinIdle: 1 });
    t.cp.sessions.warmPoolSettingsChanged(projectId);
    const launchedAt = Date.now();
    await expect.poll(() => t.cp.sessions.warm.countByState().ready, { timeout: 60_000, interval: 100 }).toBe(1);
    // The app really took its start time: the instance was launched and loaded before any viewer.
    expect(Date.now() - launchedAt).toBeGreaterThanOrEqual(APP_START_SECONDS * 1000);
    const [instance] = t.cp.sessions.warm.ofProject(projectId);

    const page = await browser.context.newPage();
    const navigatedAt = Date.now();
    await page.goto(host.url);
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 50 }).toBeGreaterThan(0);
    const firstFrameMs = Date.now() - navigatedAt;
    // A cold launch could not be under the app's start; the bench measures the figure (bench:stream (e)).
    expect(firstFrameMs).toBeLessThan(APP_START_SECONDS * 1000 / 2);

    const served = sessionRecord(t.cp, instance!.sessionId);
    expect(served).toMatchObject({ status: 'Running', claimedAt: expect.any(Number) as unknown });
    expect(served?.pooled).toBeUndefined();
    expect(t.cp.sessions.list({ projectId, limit: 10 }).map((s) => s.sessionId)).toEqual([instance!.sessionId]);
    // The app heard the link's parameters, once, as the first UIInteraction (the mock echoes it).
    await expect
      .poll(async () => (await playerMessages(page)).filter((m) => m.type === 'response').map((m) => m.data), { timeout: 10_000 })
      .toContainEqual(JSON.stringify({ pixelfleetQueryParameters: { level: 'forest', lang: 'de' } }));
    // Its replacement loads in the other slot.
    await expect.poll(() => t.cp.sessions.warm.ofProject(projectId).length, { timeout: 10_000 }).toBe(1);
    expect(t.cp.sessions.warm.ofProject(projectId)[0]?.sessionId).not.toBe(instance!.sessionId);
    console.log(`warm first frame: ${firstFrameMs} ms from navigation (app start ${APP_START_SECONDS} s)`);
    await page.close();
  });
});
