// End to end, as a customer reads it: a viewer in Debian chromium watches the mock app through
// the share page (its client address named by a trusted proxy, as behind a load balancer), leaves,
// and the customer's key then answers from the analytics API alone who watched, from where, on
// what, how well it streamed and why it ended: the session's snapshots, its telemetry rows (the
// page's events, and statistics rows with framesDecoded rising), a breakdown that counts it, the
// session list's diagnosis, and the engine log the agent uploaded when the app exited,
// downloaded, holding the mock app's own lines. Then the same session in the dashboard, in the
// same browser: the list's verdict and its filters, the telemetry charts, the events, the engine log's
// end, and the audience with its sessions and median start-up per day. Last, a viewer whose page
// never reports: the relay's own witness (the viewer's receiver reports) gives its verdict.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { printAgentOutputOnFailure, startBundledAgent, type BundledAgent } from '../support/bundled-agent';
import { mockAppCommand } from '../support/mock-app';
import { launchChromium } from '../support/chromium';
import { setProjectSettings } from '../support/seed';
import { invitedWithPassword } from '../support/dashboard-client';
import { seriousAccessibilityViolations } from '../support/accessibility';
import { screenshotForDocs } from '../support/screenshots';

/** A public address DB-IP places in a known country (Google's resolver: United States). */
const VIEWER_ADDRESS = '8.8.8.8';

let t: TestControlPlane;
let agent: BundledAgent;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let projectId: string;
let apiKey: string;
let shareUrl: string;
/** The first case's session: the dashboard case reads it too. */
let watchedSessionId: string | undefined;

printAgentOutputOnFailure();

beforeAll(async () => {
  browser = await launchChromium();
  // The browser's requests come from loopback, the "proxy" that names the viewer in X-Forwarded-For.
  t = await startTestControlPlane({ overrides: { http: { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'] } } });
  const owner = await t.cp.accounts.createUser('analytics@example.com');
  apiKey = await t.cp.accounts.issueKey(owner.userId);
  projectId = (await t.cp.accounts.createProject(owner.userId, 'Analytics', 'europe')).projectId;
  await t.cp.registerLocalBuild(projectId);
  setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000 });
  agent = await startBundledAgent(t, { launcherCommand: mockAppCommand() });
  shareUrl = `${t.started.publicUrls.share}/${projectId}`;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await t?.destroy();
});

interface Reply {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

/** A read of the analytics API with the customer's key. */
async function read(path: string, query: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${t.started.publicUrls.platform}/api/v1/analytics${path}?${new URLSearchParams(query).toString()}`, { headers: { 'x-api-key': apiKey, ...headers } });
  const text = await res.text();
  return { status: res.status, text, body: res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const framesDecoded = (page: Page) => page.evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0);

describe("a customer reads a viewer's session through the analytics API", () => {
  it('snapshots, telemetry with framesDecoded rising, a breakdown that counts the viewer, the diagnosis, and the engine log', async () => {
    const page = await browser.context.newPage();
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': VIEWER_ADDRESS });
    const day = new Date();
    await page.goto(shareUrl);
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    const sessionId = t.cp.sessions.list({ limit: 10 }).find((s) => s.status === 'Running')?.sessionId;
    expect(sessionId).toBeDefined();
    // Two statistics rows (one every 5 s) and one flush (every 10 s) of the page's reporter.
    await expect
      .poll(async () => ((await read('/frontend-streaming-logs', { sessionId: sessionId!, projectId })).body.logs as Record<string, string>[] | undefined)?.filter((r) => r.logType === undefined).length ?? 0, {
        timeout: 30_000,
        interval: 1_000,
      })
      .toBeGreaterThanOrEqual(2);
    await page.close({ runBeforeUnload: true });
    await expect.poll(() => t.cp.sessions.get(sessionId!).status, { timeout: 15_000 }).toBe('Terminated');
    watchedSessionId = sessionId;

    // Why it ended, and when: the recorded statuses, oldest first.
    const snapshots = await read(`/sessions/${sessionId}`, { projectId });
    expect(snapshots.status).toBe(200);
    const statuses = (snapshots.body.snapshots as { data: { status: string; assignedWorker?: string } }[]).map((s) => s.data.status);
    expect(statuses).toEqual(['Enqueued', 'Starting', 'Running', 'Terminated']);
    expect(snapshots.body.totalSnapshots).toBe(4);

    // How well it streamed: the page's events, and statistics rows whose framesDecoded rises.
    const logs = await read('/frontend-streaming-logs', { sessionId: sessionId!, projectId, limit: '1000' });
    const rows = logs.body.logs as Record<string, unknown>[];
    expect(logs.body.total).toBe(rows.length);
    const events = rows.filter((r) => r.logType === 'Webrtc').map((r) => r.event);
    expect(events).toEqual(expect.arrayContaining(['sdpAnswer', 'connected']));
    const frames = rows.filter((r) => r.logType === undefined).map((r) => Number(r.framesDecoded)).reverse(); // oldest first
    expect(frames.length).toBeGreaterThanOrEqual(2);
    expect(frames.at(-1)!).toBeGreaterThan(frames[0]!);
    // On what, from where: the server's reading of the viewer, on the first event rows.
    const firstEvent = rows.filter((r) => r.logType === 'Webrtc').at(-1)!;
    expect(firstEvent).toMatchObject({ os: 'Linux', deviceType: 'desktop', geoData: { countryCode: 'US' } });
    expect(firstEvent.browser).toMatch(/Chrom/);

    // The breakdown of the day counts this viewer.
    const window = { startDate: new Date(day.getTime() - 3_600_000).toISOString(), endDate: new Date(Date.now() + 60_000).toISOString() };
    const byOs = await read(`/projects/${projectId}/analytics/breakdown`, { dimension: 'os', ...window });
    expect(byOs.body).toMatchObject({ success: true, dimension: 'os', total: 1, count: 1, breakdown: [{ value: 'Linux', count: 1, percentage: 100 }] });
    const byCountry = await read(`/projects/${projectId}/analytics/breakdown`, { dimension: 'country', ...window });
    expect(byCountry.body).toMatchObject({ total: 1, breakdown: [{ value: 'United States', count: 1, percentage: 100 }] });

    // The session list: times, worker, end reason, and the reading rules' verdict.
    const list = await read(`/projects/${projectId}/sessions`, window);
    const entry = (list.body.sessions as Record<string, unknown>[]).find((s) => s.sessionId === sessionId);
    expect(entry).toMatchObject({ status: 'Terminated', endReason: 'viewer left', diagnosis: 'videoDelivered', os: 'Linux', geoData: { countryCode: 'US' } });
    expect(entry!.startupMs).toEqual(expect.any(Number));
    // The start-up splits where the app identified itself: the app loading, then the viewer's WebRTC.
    expect(entry!.launchMs).toEqual(expect.any(Number));
    expect(entry!.negotiationMs).toEqual(expect.any(Number));
    expect((entry!.launchMs as number) + (entry!.negotiationMs as number)).toBe(entry!.startupMs);

    // The engine log the agent uploaded once the app exited, downloaded: the mock app's own lines.
    await expect.poll(async () => (await read(`/log-files/session/${sessionId}`, { projectId })).body.total, { timeout: 30_000, interval: 500 }).toBeGreaterThanOrEqual(1);
    const files = (await read(`/log-files/session/${sessionId}`, { projectId })).body.logFiles as { _id: string; fileName: string; fileSize: number }[];
    const engineLog = files.find((f) => f.fileName.endsWith('.log'));
    expect(engineLog).toBeDefined();
    const download = await read(`/log-files/${engineLog!._id}/download`, { projectId }, { 'accept-encoding': 'identity' });
    expect(download.status).toBe(200);
    expect(download.text).toContain('LogInit: Display: Running engine for game:');
    expect(download.text).toContain('LogPixelStreaming: Streamer identified as');
    expect(Buffer.byteLength(download.text)).toBe(engineLog!.fileSize);
  }, 150_000);

  // What this case cannot show: whether the row came from the page's last statistics at pagehide
  // (viewer.ts) or from its 5 s tick, which comes first depends on how soon the app's first frame
  // follows the page's session. The page's statistics at pagehide are what makes it hold when the
  // viewer leaves before the tick.
  it('a viewer who leaves seconds after the first frame, before the page delivered any statistics: its statistics arrive as it goes, and the diagnosis is videoDelivered', async () => {
    const page = await browser.context.newPage();
    const before = new Set(t.cp.sessions.list({ limit: 100 }).map((s) => s.sessionId));
    await page.goto(shareUrl);
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    const sessionId = t.cp.sessions.list({ limit: 100 }).find((s) => !before.has(s.sessionId))?.sessionId;
    expect(sessionId).toBeDefined();
    // The viewer watches for a moment (the point of the case: a deliberate wait, not one for an
    // event), long enough for the library's statistics (every second) to see the frames, and leaves
    // within the page's first statistics interval (5 s from its session), before the page's first
    // delivery (10 s): so far the server holds no statistics row of this session.
    await page.waitForTimeout(1_500);
    const statisticsRows = async () => ((await read('/frontend-streaming-logs', { sessionId: sessionId!, projectId })).body.logs as Record<string, unknown>[]).filter((r) => r.logType === undefined);
    expect(await statisticsRows()).toEqual([]);
    await page.close({ runBeforeUnload: true });
    await expect.poll(() => t.cp.sessions.get(sessionId!).status, { timeout: 15_000 }).toBe('Terminated');

    await expect.poll(async () => (await statisticsRows()).length, { timeout: 10_000, interval: 250 }).toBeGreaterThan(0);
    expect(Number((await statisticsRows())[0]!.framesDecoded)).toBeGreaterThan(0);
    const window = { startDate: new Date(Date.now() - 3_600_000).toISOString(), endDate: new Date(Date.now() + 60_000).toISOString() };
    const list = await read(`/projects/${projectId}/sessions`, window);
    expect((list.body.sessions as Record<string, unknown>[]).find((s) => s.sessionId === sessionId)).toMatchObject({ diagnosis: 'videoDelivered' });
  }, 90_000);

  it("the customer sees the same session in the dashboard: the list's verdict, telemetry charts, events, the engine log and the audience", async () => {
    expect(watchedSessionId).toBeDefined();
    const password = 'four unrelated words here';
    await invitedWithPassword(t, 'analytics@example.com', password);
    const dashboard = t.started.publicUrls.dashboard;
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of 401/.test(message.text())) problems.push(message.text());
    });
    await page.goto(`${dashboard}/projects/${projectId}/sessions`);
    await page.getByLabel('E-mail address').fill('analytics@example.com');
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();

    // The list: the viewer's session with its verdict, from the page the address named.
    await page.getByRole('heading', { name: 'Analytics: Sessions' }).waitFor();
    const row = page.getByRole('row').filter({ has: page.locator(`a[href$="/sessions/${watchedSessionId}"]`) });
    await row.getByRole('cell', { name: 'Video delivered' }).waitFor();
    expect(await row.getByRole('cell', { name: 'United States' }).count()).toBe(1);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);

    // The filters: a verdict it did not get hides it; its own verdict and its country (a choice the
    // window's audience offers) show it again.
    await page.getByLabel('What the viewer got').selectOption('Media never connected');
    await page.getByRole('button', { name: 'Show sessions' }).click();
    await row.waitFor({ state: 'detached' });
    await page.getByLabel('What the viewer got').selectOption('Video delivered');
    await page.getByLabel('Country').selectOption('United States');
    await page.getByRole('button', { name: 'Show sessions' }).click();
    await row.getByRole('cell', { name: 'Video delivered' }).waitFor();
    expect(await page.locator('.pager').textContent()).toMatch(/of \d+/);

    // The session page: the charts of its statistics rows (frames per second above 0 at their highest), its events, its log.
    await row.getByRole('link').click();
    await page.getByRole('heading', { name: /^Session/ }).waitFor();
    await page.getByText('Video delivered.').waitFor();
    const fpsChart = page.getByRole('img', { name: /^Frames per second\. / });
    await fpsChart.waitFor();
    const fpsSummary = (await fpsChart.getAttribute('aria-label'))!;
    expect(Number(/highest ([\d.]+) fps/.exec(fpsSummary)?.[1])).toBeGreaterThan(0);
    expect(await page.locator('figure.chart canvas').count()).toBeGreaterThanOrEqual(4);
    expect(await page.locator('.events-list').textContent()).toContain('connected');
    expect(await page.getByRole('list', { name: 'Status timeline' }).locator('.stage-name').allTextContents()).toEqual(['Enqueued', 'Starting', 'Running', 'Terminated']);
    const show = page.getByRole('button', { name: /^Show the end of .+\.log$/ });
    await show.click();
    await page.locator('pre.log-tail', { hasText: 'LogPixelStreaming: Streamer identified as' }).waitFor();
    const download = page.getByRole('link', { name: /^Download .+\.log$/ });
    const answer = await page.request.get(new URL((await download.getAttribute('href'))!, dashboard).toString());
    expect(answer.status()).toBe(200);
    expect(await answer.text()).toContain('LogInit: Display: Running engine for game:');
    // An ended session offers no End session button.
    expect(await page.getByRole('button', { name: 'End session' }).count()).toBe(0);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshotForDocs(page, 'dashboard-session');

    // The audience of the last 30 days counts the viewers, from where and on what.
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Audience' }).click();
    await page.getByRole('heading', { name: 'Analytics: Audience' }).waitFor();
    const total = Number(await page.getByTestId('analytics-total').textContent());
    expect(total).toBeGreaterThanOrEqual(1);
    const countries = page.getByRole('region', { name: 'Countries' });
    await countries.getByText('United States').waitFor();
    expect(await page.getByRole('region', { name: 'Operating systems' }).getByText('Linux').count()).toBe(1);
    // Per day: today's sessions (this file's viewers, every one of today's) and their median start-up, a real one.
    const perDay = (await page.getByRole('img', { name: /^Sessions per day/ }).getAttribute('aria-label'))!;
    const todays = Number(/last (\d+) sessions/.exec(perDay)?.[1]);
    expect(todays).toBeGreaterThanOrEqual(1);
    expect(todays).toBeLessThanOrEqual(total);
    // Every session of the window is in one of its days (whichever side of a UTC midnight this ran).
    const audience = (await (await page.request.get(`${dashboard}/api/projects/${projectId}/analytics`)).json()) as { days: { sessions: number }[] };
    expect(audience.days.reduce((n, d) => n + d.sessions, 0)).toBe(total);
    const startups = (await page.getByRole('img', { name: /^Median start-up per day/ }).getAttribute('aria-label'))!;
    const todaysMedian = Number(/last ([\d.]+) s\./.exec(startups)?.[1]);
    expect(todaysMedian).toBeGreaterThan(0);
    expect(todaysMedian).toBeLessThan(30);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshotForDocs(page, 'dashboard-audience');
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  // The relay as the second witness: this viewer's page never delivers a row (its telemetry posts
  // and beacons are refused on the way), and it leaves 2 s after its first frame. What Chromium's
  // receiver reports told the relay (the first keyframe arrived whole) is all the server has.
  it("a viewer whose player never reports and who leaves after 2 s: the relay's witness makes it videoDelivered", async () => {
    const page = await browser.context.newPage();
    // Blocked in Chromium's network stack (page.route sees fetches but not the pagehide beacon).
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setBlockedURLs', { urls: ['*/api/v1/telemetry*'] });
    const before = new Set(t.cp.sessions.list({ limit: 100 }).map((s) => s.sessionId));
    await page.goto(shareUrl);
    await expect.poll(() => framesDecoded(page), { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
    const sessionId = t.cp.sessions.list({ limit: 100 }).find((s) => !before.has(s.sessionId))?.sessionId;
    expect(sessionId).toBeDefined();
    await page.waitForTimeout(2_000); // the viewer watches for 2 s (the case's point, not a wait for an event)
    await page.close({ runBeforeUnload: true });
    await expect.poll(() => t.cp.sessions.get(sessionId!).status, { timeout: 15_000 }).toBe('Terminated');

    const window = { startDate: new Date(Date.now() - 3_600_000).toISOString(), endDate: new Date(Date.now() + 60_000).toISOString() };
    const entry = async () => ((await read(`/projects/${projectId}/sessions`, window)).body.sessions as Record<string, unknown>[]).find((s) => s.sessionId === sessionId);
    await expect.poll(async () => (await entry())?.diagnosis, { timeout: 10_000, interval: 250 }).toBe('videoDelivered');
    // Not one row reached the server: the verdict is the relay's alone.
    expect((await read('/frontend-streaming-logs', { sessionId: sessionId!, projectId })).body.logs).toEqual([]);
  }, 90_000);
});
