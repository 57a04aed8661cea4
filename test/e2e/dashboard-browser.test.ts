// The dashboard in Debian's Chromium, walked as a customer: the invitation mail (through a real
// SMTP server) → its link → a password → sign-in → the projects page (live numbers, share link,
// embed snippet, a hostile project name shown as text) → a new API key (the one displayed is the
// one mailed; the old key gets 401 from the REST API). Then a project's settings (a refusal beside
// its field, the webhook saved and tested against a real receiver) and builds (a real zip from a
// real HTTP server: its stages and download progress arrive without a reload; Set Live reaches the
// receiver as `Distribute`), the team (a READONLY member added by e-mail, who sees no write
// control, whose forged writes are refused, and whose key loses the project once removed). Each page is scanned for accessibility (axe-core), nothing breaks its
// Content-Security-Policy, and its cookies carry their flags.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { HTTP_ERRORS } from '@pixelfleet/control-plane';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { launchChromium } from '../support/chromium';
import { seriousAccessibilityViolations } from '../support/accessibility';
import { screenshotForDocs } from '../support/screenshots';
import { SmtpReceiver, mailBody } from '../support/smtp-receiver';
import { DashboardClient } from '../support/dashboard-client';
import { seedLiveBuild } from '../support/seed';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { writeBuildZip } from '../support/build-zips';
import { listen, sendZip, type TestServer } from '../support/local-server';
import { WebhookReceiver } from '../support/webhook-receiver';

const PASSWORD = 'four unrelated words here';
const XSS_NAME = '<img src=x onerror=alert(1)>';

let smtp: SmtpReceiver;
let t: TestControlPlane;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let dashboardUrl: string;
let zipDir: string | undefined;
let zipFile: string;
let storage: TestServer | undefined;
let slowDownload: ServerResponse | undefined;
const webhooks = new WebhookReceiver();
const BUILD_CALL_WINDOW_SECONDS = 4;

beforeAll(async () => {
  smtp = await SmtpReceiver.start();
  // A short build-call window: a second call at once is refused as it would be within two minutes.
  t = await startTestControlPlane({ overrides: { mail: { smtp: { url: smtp.url }, from: 'Pixelfleet <noreply@pixelfleet.test>' }, limits: { buildCallWindowSeconds: BUILD_CALL_WINDOW_SECONDS } } });
  browser = await launchChromium();
  zipDir = mkdtempSync(join(tmpdir(), 'pf-dashboard-zip-'));
  zipFile = await writeBuildZip(zipDir, 'windows-shipping', { pakBytes: 4 * 1024 * 1024 });
  storage = await listen((req, res) => {
    if (webhooks.handle(req, res)) return;
    if (req.url === '/builds/slow.zip' && req.headers.range === undefined) {
      // A slow storage host: 64 KiB every 300 ms until the test cuts the answer; the pipeline then
      // resumes with a Range, answered at full speed.
      const zip = readFileSync(zipFile);
      res.writeHead(200, { 'content-type': 'application/zip', 'accept-ranges': 'bytes', 'content-length': zip.length });
      let sent = 0;
      const trickle = setInterval(() => {
        if (sent >= zip.length - 64 * 1024) return; // never the last chunk: the cut ends it
        res.write(zip.subarray(sent, sent + 64 * 1024));
        sent += 64 * 1024;
      }, 300);
      res.on('close', () => clearInterval(trickle));
      slowDownload = res;
      return;
    }
    sendZip(req, res, zipFile);
  });
  dashboardUrl = t.started.publicUrls.dashboard;
}, 60_000);

afterAll(async () => {
  await storage?.close();
  if (zipDir !== undefined) rmSync(zipDir, { recursive: true, force: true });
  await browser?.close();
  await t?.destroy();
  await smtp?.close();
});

/** A page that records what the browser refused under the page's policy, and every error it logged. */
async function openPage(context: BrowserContext): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    // A refusal the app shows (401 from /api/me: nobody is signed in; a 400, 404 or 429 the test
    // provokes) is logged by the browser as a failed load: not a problem. A CSP refusal or a
    // script error is.
    if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  // Nothing from another origin (an air-gapped network has none); the share page a test opens is the control plane's own.
  page.on('request', (request) => {
    if (new URL(request.url()).origin !== new URL(dashboardUrl).origin) problems.push(`request to another origin: ${request.url()}`);
  });
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, problems };
}

/** The mail the SMTP server got n-th (1-based), its body as text. */
async function nthMailBody(n: number): Promise<string> {
  const mails = await smtp.received(n);
  return mailBody(mails[n - 1]!.raw);
}

async function expectAccessible(page: Page): Promise<void> {
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
}

/** A person invited by mail who set their password through the link (the pages of that are the first test's). */
async function personWithPassword(email: string): Promise<string> {
  const before = smtp.mails.length;
  const { user } = await t.cp.people.invite(email);
  const token = /set-password#token=(pfi_[A-Za-z0-9_-]+)/.exec(await nthMailBody(before + 1))?.[1];
  await t.cp.people.setPasswordWithLink(token!, 'invitation', PASSWORD);
  return user.userId;
}

/** Sets the password of an address through the invitation the SMTP server received n-th (1-based), as its page would. */
async function passwordFromInvitation(email: string, n: number): Promise<string> {
  const mail = (await smtp.received(n))[n - 1]!;
  expect(mail.to).toEqual([email]);
  const token = /set-password#token=(pfi_[A-Za-z0-9_-]+)/.exec(mailBody(mail.raw))?.[1];
  return (await t.cp.people.setPasswordWithLink(token!, 'invitation', PASSWORD)).userId;
}

async function signIn(page: Page, email: string): Promise<void> {
  await page.goto(`${dashboardUrl}/sign-in`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
}

describe('a customer in the dashboard', () => {
  it('follows the invitation, sets a password, signs in, sees their projects live, and replaces their API key', async () => {
    const { user } = await t.cp.people.invite('ada@example.com');
    const project = await t.cp.accounts.createProject(user.userId, XSS_NAME, 'europe');
    const oldKey = await t.cp.accounts.issueKey(user.userId);
    const invitation = await nthMailBody(1);
    const link = /(http\S+\/set-password#token=pfi_[A-Za-z0-9_-]+)/.exec(invitation)?.[1];
    expect(link?.startsWith(`${dashboardUrl}/set-password#token=`)).toBe(true);

    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(dashboardUrl).origin });
    const { page, problems } = await openPage(browser.context);
    await page.goto(link!);
    await page.getByRole('heading', { name: 'Choose your password' }).waitFor();
    // The token leaves the address bar at once: no later copy, screenshot or Referer carries it.
    expect(page.url()).toBe(`${dashboardUrl}/set-password`);
    await expectAccessible(page);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('The same password again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set the password' }).click();

    await page.getByText('Your password is set. Sign in with it now.').waitFor();
    expect(await page.getByLabel('E-mail address').inputValue()).toBe('ada@example.com');
    await expectAccessible(page);
    // By keyboard: Tab from the address to the password, Enter submits.
    await page.getByLabel('E-mail address').focus();
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');

    // The projects page: the hostile name is text, not markup.
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: XSS_NAME }) });
    await card.waitFor();
    expect(await page.locator('main img').count()).toBe(0);
    const shareUrl = `${t.started.publicUrls.share}/${project.projectId}`;
    expect(await card.getByRole('link', { name: shareUrl }).getAttribute('href')).toBe(shareUrl);
    await card.getByRole('button', { name: `Copy the share link of ${XSS_NAME}` }).click();
    await card.getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(shareUrl);
    expect(await card.locator('.snippet').textContent()).toBe(`<iframe src="${shareUrl}" allow="fullscreen; autoplay" width="1280" height="720"></iframe>`);
    expect(await card.getByTestId('live-viewers').textContent()).toBe('0');
    await expectAccessible(page);
    await screenshotForDocs(page, 'dashboard-projects');
    // Dark, and on a phone's width: still accessible (contrast included), nothing wider than the screen.
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize({ width: 390, height: 844 });
    await expectAccessible(page);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });

    // Two viewers join a project whose one streaming server (a real agent over gRPC, its sessions
    // scripted) has one slot: one is placed, one waits in the line. The numbers change without a
    // reload, and again when the viewers leave.
    expect(await card.getByTestId('queued-viewers').textContent()).toBe('0');
    seedLiveBuild(t.cp, project.projectId);
    const script = new ScriptedSessions();
    const { agent } = await startTestAgent({ grpcAddress: t.started.grpcAddress, slots: 1, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal });
    script.agent = agent;
    try {
      await linkReaches(agent, 'connected');
      const viewers = [0, 1].map(() => t.cp.sessions.create(t.cp.accounts.requireProject(project.projectId)).session.sessionId);
      await card.getByTestId('live-viewers').filter({ hasText: /^1$/ }).waitFor({ timeout: 15_000 });
      await card.getByTestId('queued-viewers').filter({ hasText: /^1$/ }).waitFor({ timeout: 15_000 });
      for (const sessionId of viewers) t.cp.sessions.end(sessionId, 'ended');
      await card.getByTestId('queued-viewers').filter({ hasText: /^0$/ }).waitFor({ timeout: 15_000 });
    } finally {
      await agent.close();
    }

    // The session cookie's flags, as the browser holds it.
    const cookies = await browser.context.cookies(dashboardUrl);
    expect(cookies.find((c) => c.name === 'pf_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: new URL(dashboardUrl).pathname, secure: false });
    expect(cookies.find((c) => c.name === 'pf_csrf')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });

    // The account page: a new key, after the warning that the current one stops working.
    await page.getByRole('navigation').getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Request API Key' }).click();
    await page.getByText('Your current key stops working now.').waitFor();
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Replace my key' }).click();
    const shown = (await page.getByTestId('new-api-key').textContent()) ?? '';
    expect(shown).toMatch(/^pfk_/);
    expect(await nthMailBody(2)).toContain(shown);
    const status = (apikey: string) => fetch(`${t.started.publicUrls.api}/projects/projects-status?${new URLSearchParams({ userId: user.userId, apikey }).toString()}`).then((r) => r.status);
    expect(await status(shown)).toBe(200);
    expect(await status(oldKey)).toBe(401);

    // An operator: the admin token shown once makes this sign-in see the fleet (the agent of the
    // queue above, gone since); drain it.
    await page.getByLabel('Admin token').fill('not the admin token');
    await page.getByRole('button', { name: 'Confirm the admin token' }).click();
    await page.getByText('Wrong admin token').waitFor();
    expect(await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Fleet' }).count()).toBe(0);
    await page.getByLabel('Admin token').fill(TEST_ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Confirm the admin token' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Fleet' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.getByRole('button', { name: /^Drain / }).first().click();
    await page.getByText(/takes no new sessions; its running ones go on\.$/).waitFor();
    expect(t.cp.registry.list().every((w) => w.draining)).toBe(true);
    await page.getByRole('button', { name: /^Undrain / }).first().waitFor();
    await expectAccessible(page);

    // The sign-in ended elsewhere (sign out everywhere, from another browser): the page's next read
    // is refused and it asks to sign in again, where it stands, and goes on from there.
    await t.cp.people.signOutEverywhere(user.userId);
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Projects' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('E-mail address').fill('ada@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();

    // Signing out ends the sign-in: the projects route refuses the old cookie.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect((await page.request.get(`${dashboardUrl}/api/projects`)).status()).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('resets a forgotten password from the sign-in page: the mailed link, a new password, a sign-in with it; the old password and the used link no longer work', async () => {
    const email = 'ivan@example.com';
    await personWithPassword(email);
    const mailsBefore = smtp.mails.length;
    const { page, problems } = await openPage(browser.context);
    await page.goto(`${dashboardUrl}/sign-in`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
    await expectAccessible(page);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.locator('.notice-success').waitFor();
    // The same answer for an address with no account (it never says which).
    const accepted = await page.locator('.notice-success').textContent();
    await page.getByLabel('E-mail address').fill('nobody@example.com');
    await page.getByRole('button', { name: 'Send the link' }).click();
    await expect.poll(() => page.locator('.notice-success').textContent()).toBe(accepted);

    const reset = (await smtp.received(mailsBefore + 1))[mailsBefore]!;
    expect(reset.to).toEqual([email]);
    const link = /(http\S+\/reset-password#token=pfr_[A-Za-z0-9_-]+)/.exec(mailBody(reset.raw))?.[1];
    expect(link?.startsWith(`${dashboardUrl}/reset-password#token=`)).toBe(true);
    await page.goto(link!);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    expect(new URL(page.url()).hash).toBe(''); // the token leaves the address bar at once
    await expectAccessible(page);
    const newPassword = 'a brand new passphrase';
    await page.getByLabel('New password').fill(newPassword);
    await page.getByLabel('The same password again').fill(newPassword);
    await page.getByRole('button', { name: 'Set the password' }).click();
    // A reset signs nobody in: the page asks for the new password.
    await page.getByText('Your password is set. Sign in with it now.').waitFor();
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(newPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();

    // The old password is refused, the new one signs in, and the link does not work twice.
    const client = new DashboardClient(new URL(dashboardUrl).origin);
    await client.fetchCsrf();
    const base = new URL(dashboardUrl).pathname;
    expect((await client.post(`${base}/api/sign-in`, { email, password: PASSWORD })).status).toBe(401);
    expect((await client.post(`${base}/api/sign-in`, { email, password: newPassword })).status).toBe(200);
    const token = new URL(link!).hash.replace('#token=', '');
    expect((await client.post(`${base}/api/set-password`, { token, purpose: 'passwordReset', password: 'yet another passphrase' })).status).toBe(404);
    // The browser's context is the next tests' too: leave it signed out.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('sends its bundle gzipped to a browser that accepts it, as is to one that does not (and short answers as they are)', async () => {
    const html = await (await fetch(`${dashboardUrl}/account`)).text();
    const script = new URL(/<script src="([^"]+)"/.exec(html)![1]!, dashboardUrl).toString();
    const zipped = await rawGet(script, 'gzip');
    const plain = await rawGet(script, 'identity');
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toMatch(/accept-encoding/i);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
    expect(zipped.body.length).toBeLessThan(plain.body.length / 2);
    // A JSON answer too: the projects list of a signed-out browser is a short 401, sent as it is.
    const refused = await rawGet(`${dashboardUrl}/api/projects`, 'gzip');
    expect(refused.status).toBe(401);
    expect(refused.headers['content-encoding']).toBeUndefined();
  });

  it('is served with its policy on every page path, its assets cached for good, and unknown API paths as 404s', async () => {
    const shell = await fetch(`${dashboardUrl}/account`);
    expect(shell.status).toBe(200);
    expect(shell.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(shell.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await shell.text();
    const script = /<script src="([^"]+)"/.exec(html)?.[1];
    const asset = await fetch(new URL(script!, dashboardUrl));
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetch(`${dashboardUrl}/assets/dashboard.000000000000.js`)).status).toBe(404);
    const unknown = await fetch(`${dashboardUrl}/api/no-such-route`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toBe(HTTP_ERRORS.routeNotFound.message);
  });

  it("configures and tests the project's webhook, sees a refusal beside its field, and takes a build from URL to Set Live", async () => {
    const ownerId = await personWithPassword('grace@example.com');
    const project = await t.cp.accounts.createProject(ownerId, 'Configurator', 'europe');
    const { page, problems } = await openPage(browser.context);
    await signIn(page, 'grace@example.com');
    await page.getByRole('listitem').filter({ hasText: 'Configurator' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Configurator: Settings' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`${new URL(dashboardUrl).pathname}/projects/${project.projectId}/settings`);
    await expectAccessible(page);

    // Test without a URL: the API's 404 sentence.
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page.getByText('Webhook URL not configured: save a webhook URL first.').waitFor();

    // A refusal beside its field: the input says it is invalid and is described by the server's sentence.
    const width = page.getByLabel('Width (pixels)');
    await width.fill('1281');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Invalid field: resX must be even').waitFor();
    expect(await width.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await width.getAttribute('aria-describedby'))!.split(' ');
    const descriptions = await Promise.all(describedBy.map((id) => page.locator(`[id="${id}"]`).textContent()));
    expect(descriptions).toContain('Invalid field: resX must be even');
    await expectAccessible(page);
    await width.fill('1280');
    await page.getByLabel('Frames per second').fill('60');
    // The page reads the settings again after a save. That answer is held here until the webhook
    // below is typed, as a slow network would: its arrival must not wipe what is being typed.
    let releaseReread: () => void = () => undefined;
    const rereadHeld = new Promise<void>((resolve) => (releaseReread = resolve));
    let reread = false;
    const settingsPath = `**/api/projects/${project.projectId}/settings`;
    await page.route(settingsPath, async (route) => {
      if (route.request().method() === 'GET') {
        reread = true;
        await rereadHeld;
      }
      await route.continue();
    });
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved. New sessions use them.').waitFor();
    expect(t.cp.accounts.requireProject(project.projectId).settings.fps).toBe(60);

    // The webhook: every event but the test's, saved, then tested against the real receiver.
    await page.getByLabel('Webhook URL').fill(`${storage!.origin}/hook`);
    await page.getByRole('checkbox', { name: 'build.ready' }).uncheck();
    await expect.poll(() => reread).toBe(true);
    const rereadAnswered = page.waitForResponse((response) => response.url().endsWith(`/api/projects/${project.projectId}/settings`) && response.request().method() === 'GET');
    releaseReread();
    await rereadAnswered;
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))); // the answer drawn
    await page.unroute(settingsPath);
    expect(await page.getByLabel('Webhook URL').inputValue()).toBe(`${storage!.origin}/hook`);
    expect(await page.getByRole('checkbox', { name: 'build.ready' }).isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Webhook saved.').waitFor();
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page.getByText(/^Delivered: the receiver answered 204 in \d+ ms\.$/).waitFor();
    expect(webhooks.deliveries.some((d) => d.event === 'webhook.test')).toBe(true);
    const deliveryRow = page.getByRole('row').filter({ hasText: 'webhook.test' });
    await deliveryRow.getByText('answered 204').waitFor();
    await expectAccessible(page);
    await screenshotForDocs(page, 'dashboard-settings');

    // Builds: a real zip from a slow host; the page shows the stage and its bytes, rate and time left as they come.
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Builds' }).click();
    await page.getByRole('heading', { name: 'Configurator: Builds' }).waitFor();
    await page.getByLabel("Download URL of the build's .zip").fill(`${storage!.origin}/builds/slow.zip`);
    await page.getByRole('button', { name: 'Submit build' }).click();
    const submitted = await page.getByText(/^Build upl_\w+ submitted: pending\.$/).textContent();
    const uploadId = /(upl_\w+)/.exec(submitted!)![1]!;
    // A second build call at once: refused with the wait.
    await page.getByLabel("Download URL of the build's .zip").fill(`${storage!.origin}/builds/other.zip`);
    await page.getByRole('button', { name: 'Submit build' }).click();
    await page.getByText(/^Rate limit exceeded\. Try again in 1 minute\. You can try again in \d+ s\.$/).waitFor();
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: new RegExp(uploadId) }) });
    await card.locator('.stage-current', { hasText: 'Downloading Files' }).waitFor({ timeout: 15_000 });
    await card.getByTestId('build-progress').filter({ hasText: /^[\d.]+ (KiB|MiB) of [\d.]+ MiB · [\d.]+ KiB\/s · .+ left$/ }).waitFor({ timeout: 15_000 });
    await expectAccessible(page);
    await screenshotForDocs(page, 'dashboard-builds');

    slowDownload!.destroy();
    await card.getByText('Ready', { exact: true }).first().waitFor({ timeout: 30_000 });
    const stages = await card.locator('.stages .stage-name').allTextContents();
    expect(stages).toEqual(['pending', 'Downloading Files', 'Extracting & Scanning', 'Saving to Repository', 'Ready']);
    expect((await t.cp.builds.list(project.projectId)).find((b) => b.uploadId === uploadId)?.status).toBe('Ready');

    // Set Live: the receiver gets build.distributing with the status the spec gives Set Live.
    await card.getByRole('button', { name: 'Set Live' }).click();
    await card.getByText(/^Going live: Distributing to Servers\.$/).waitFor();
    const delivered = await webhooks.until(uploadId, 'build.distributing');
    expect(delivered.find((d) => d.event === 'build.distributing')?.status).toBe('Distribute');
    // build.ready was left unchecked: the receiver never got it.
    expect(webhooks.stages(uploadId)).not.toContain('build.ready Ready');
    await card.locator('.stages .stage-name', { hasText: 'Distributing to Servers' }).waitFor();

    // The team: the owner adds a new address as READONLY; it is invited by mail.
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Team' }).click();
    await page.getByRole('heading', { name: 'Configurator: Team' }).waitFor();
    const mailsBefore = smtp.mails.length;
    await page.getByLabel('Their e-mail address').fill('heidi@example.com');
    await page.getByLabel('Access', { exact: true }).selectOption('READONLY');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByText('heidi@example.com is a member now (read only).').waitFor();
    await page.getByRole('row').filter({ hasText: 'heidi@example.com' }).getByText('invited').waitFor();
    await expectAccessible(page);
    const readerId = await passwordFromInvitation('heidi@example.com', mailsBefore + 1);
    const readerKey = await t.cp.accounts.issueKey(readerId);
    const readerRest = () => fetch(`${t.started.publicUrls.api}/projects/${project.projectId}/settings?${new URLSearchParams({ userId: readerId, apikey: readerKey }).toString()}`).then((r) => r.status);
    expect(await readerRest()).toBe(200);
    expect(problems).toEqual([]);
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    // The READONLY member: the same pages with no write control, and writes forged with fetch refused.
    await signIn(page, 'heidi@example.com');
    await page.goto(`${dashboardUrl}/projects/${project.projectId}/settings`);
    await page.getByText('You have read-only access.').waitFor();
    expect(await page.getByRole('button', { name: /Save|Test|Disable|Enable/ }).count()).toBe(0);
    expect(await page.getByLabel('Webhook URL').inputValue()).toBe(`${storage!.origin}/…`);
    expect(await page.getByLabel('Name').getAttribute('readonly')).not.toBeNull();
    await expectAccessible(page);
    await page.goto(`${dashboardUrl}/projects/${project.projectId}/builds`);
    await page.getByRole('heading', { name: 'Configurator: Builds' }).waitFor();
    await page.getByText(uploadId).first().waitFor();
    expect(await page.getByRole('button', { name: /Set Live|Distribute|Submit build/ }).count()).toBe(0);
    const forged = await page.evaluate(
      async ({ base, projectId, upload }) => {
        const { csrfToken } = (await (await fetch(`${base}/api/csrf`)).json()) as { csrfToken: string };
        const headers = { 'content-type': 'application/json', 'x-csrf-token': csrfToken };
        const answers = await Promise.all([
          fetch(`${base}/api/projects/${projectId}/settings`, { method: 'PATCH', headers, body: JSON.stringify({ name: 'taken over' }) }),
          fetch(`${base}/api/projects/${projectId}/builds/${upload}/set-live`, { method: 'POST', headers, body: '{}' }),
          fetch(`${base}/api/projects/${projectId}/webhook-test`, { method: 'POST', headers, body: '{}' }),
        ]);
        return Promise.all(answers.map(async (r) => [r.status, ((await r.json()) as { message: string }).message]));
      },
      { base: new URL(dashboardUrl).pathname, projectId: project.projectId, upload: uploadId },
    );
    expect(forged).toEqual([
      [403, 'Forbidden: read-only access'],
      [403, 'Forbidden: read-only access'],
      [403, 'Forbidden: read-only access'],
    ]);
    expect(t.cp.accounts.requireProject(project.projectId).name).toBe('Configurator');
    // No Team tab for a member: the team is the owner's.
    expect(await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Team' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();

    // The owner removes the member: their key is refused on the project at once.
    await signIn(page, 'grace@example.com');
    await page.goto(`${dashboardUrl}/projects/${project.projectId}/team`);
    await page.getByRole('button', { name: 'Remove heidi@example.com' }).click();
    await page.getByText('heidi@example.com is no longer a member.').waitFor();
    expect(await readerRest()).toBe(403);
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});

/** A GET with this Accept-Encoding, its body as the bytes that crossed the wire (fetch would decode them). */
function rawGet(url: string, acceptEncoding: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}
