// The dashboard in Debian's Chromium, walked as a customer: the invitation mail (through a real
// SMTP server) → its link → a password → sign-in → the projects page (live numbers, share link,
// embed snippet, a hostile project name shown as text) → a new API key (the one displayed is the
// one mailed; the old key gets 401 from the REST API). Each page is scanned for accessibility
// (axe-core), nothing breaks its Content-Security-Policy, and its cookies carry their flags.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { HTTP_ERRORS } from '@pixelfleet/control-plane';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { launchChromium } from '../support/chromium';
import { seriousAccessibilityViolations } from '../support/accessibility';
import { SmtpReceiver, mailBody } from '../support/smtp-receiver';
import { seedLiveBuild } from '../support/seed';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';

const PASSWORD = 'four unrelated words here';
const XSS_NAME = '<img src=x onerror=alert(1)>';

let smtp: SmtpReceiver;
let t: TestControlPlane;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let dashboardUrl: string;

beforeAll(async () => {
  smtp = await SmtpReceiver.start();
  t = await startTestControlPlane({ overrides: { mail: { smtp: { url: smtp.url }, from: 'Pixelfleet <noreply@pixelfleet.test>' } } });
  browser = await launchChromium();
  dashboardUrl = t.started.publicUrls.dashboard;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.destroy();
  await smtp?.close();
});

/** A page that records what the browser refused under the page's policy, and every error it logged. */
async function openPage(context: BrowserContext): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    // A 401 from /api/me is how the app learns nobody is signed in: the browser logs the status.
    if (message.type() === 'error' && !/status of 401/.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
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

describe('a customer in the dashboard', () => {
  it('follows the invitation, sets a password, signs in, sees their projects live, and replaces their API key', async () => {
    const { user } = t.cp.people.invite('ada@example.com');
    const project = t.cp.accounts.createProject(user.userId, XSS_NAME, 'europe');
    const oldKey = t.cp.accounts.issueKey(user.userId);
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

    // Signing out ends the sign-in: the projects route refuses the old cookie.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect((await page.request.get(`${dashboardUrl}/api/projects`)).status()).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
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
});
