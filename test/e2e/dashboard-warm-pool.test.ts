// The warm pool panel of a project's sessions page in Debian's Chromium, from a real control plane
// whose agent runs scripted sessions: no panel for a project without a pool; ready, starting,
// wanted and how viewers were served for one with a pool; when its instances kept failing, why the
// build is no longer warmed and what to do (a READONLY member reads it, with no button), and the
// owner's button warming the build again. Each state is scanned for accessibility (axe-core).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { launchChromium } from '../support/chromium';
import { seriousAccessibilityViolations } from '../support/accessibility';
import { invitedWithPassword } from '../support/dashboard-client';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { seedLiveBuild, setProjectSettings } from '../support/seed';

const PASSWORD = 'four unrelated words here';
const clock = new ManualClock(Date.now());
let t: TestControlPlane;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let closeAgent: (() => Promise<void>) | undefined;

beforeAll(async () => {
  // On a fake clock that jumps seconds, a lease of an hour: the agent's heartbeats come on real time.
  t = await startTestControlPlane({ clock, overrides: { workers: { heartbeatIntervalSeconds: 10, leaseSeconds: 3600, lostGraceSeconds: 120 } } });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await closeAgent?.();
  await browser?.close();
  await t?.destroy();
});

async function signIn(page: Page, email: string): Promise<void> {
  await page.context().clearCookies();
  await page.goto(`${t.started.publicUrls.dashboard}/sign-in`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
}

async function expectAccessible(page: Page): Promise<void> {
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
}

describe('the warm pool on the sessions page', () => {
  it('is absent without a pool; shows the pool, then why its build is no longer warmed, and warms it again from the owner\'s button', { timeout: 90_000 }, async () => {
    const ownerId = await invitedWithPassword(t, 'pia@example.com', PASSWORD);
    const readerId = await invitedWithPassword(t, 'ron@example.com', PASSWORD);
    const warm = await t.cp.accounts.createProject(ownerId, 'Showroom', 'europe');
    const plain = await t.cp.accounts.createProject(ownerId, 'Plain', 'europe');
    await t.cp.accounts.addMember(warm.projectId, readerId, 'READONLY');
    seedLiveBuild(t.cp, warm.projectId);
    seedLiveBuild(t.cp, plain.projectId, 'upl_plain');
    const script = new ScriptedSessions();
    const { agent } = await startTestAgent({ grpcAddress: t.started.grpcAddress, slots: 2, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal });
    script.agent = agent;
    closeAgent = () => agent.close();
    await linkReaches(agent, 'connected');
    setProjectSettings(t.cp, warm.projectId, { warmPoolMinIdle: 1 });
    t.cp.sessions.warmPoolSettingsChanged(warm.projectId);
    await expect.poll(() => script.started.length).toBe(1);
    script.report(script.started[0]!, 'appIdentified');
    await expect.poll(() => t.cp.sessions.warm.countByState().ready).toBe(1);

    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await signIn(page, 'pia@example.com');
    const sessionsOf = async (projectId: string, name: string) => {
      await page.goto(`${t.started.publicUrls.dashboard}/projects/${projectId}/sessions`);
      await page.getByRole('heading', { name: `${name}: Sessions` }).waitFor();
      await page.getByText('No sessions match in this window.').waitFor();
    };
    const panel = page.getByRole('region', { name: 'Warm pool' });
    const figure = (testId: string) => panel.getByTestId(testId).textContent();

    // No pool: no panel.
    await sessionsOf(plain.projectId, 'Plain');
    expect(await panel.count()).toBe(0);

    // A pool of one, loaded: ready 1 of 1 wanted, nobody served yet.
    await sessionsOf(warm.projectId, 'Showroom');
    await panel.waitFor();
    expect([await figure('warm-ready'), await figure('warm-starting'), await figure('warm-wanted'), await figure('warm-claims'), await figure('warm-misses')]).toEqual(['1', '0', '1', '0', '0']);
    expect(await panel.getByRole('alert').count()).toBe(0);
    await expectAccessible(page);

    // Its instances keep failing: one crashes, its replacement 5 s later crashes, the next launch is refused.
    script.crash(script.started[0]!);
    await expect.poll(() => t.cp.sessions.warm.countByState().ready).toBe(0);
    clock.advance(5_000);
    await expect.poll(() => script.started.length).toBe(2);
    script.failStartWith = 'LAUNCH_FAILED';
    script.crash(script.started[1]!);
    await expect.poll(() => t.cp.sessions.warm.countByState().starting).toBe(0);
    clock.advance(10_000);
    await expect.poll(() => t.cp.sessions.warmPoolOf(t.cp.accounts.requireProject(warm.projectId)).stopped).toBeDefined();

    const why = 'Build upl_live is no longer warmed: its warm instances failed 3 times in a row (the last: app failed to launch). Until it is warmed again, every viewer waits for the app to launch.';
    // A READONLY member reads why and what to do, with nothing to press.
    await signIn(page, 'ron@example.com');
    await sessionsOf(warm.projectId, 'Showroom');
    expect(await panel.getByRole('alert').textContent()).toBe(why);
    await panel.getByText('Only someone with full access to the project can.').waitFor();
    expect(await panel.getByRole('button').count()).toBe(0);
    await expectAccessible(page);

    // The owner: the same, and the button that saves the pool's minimum again; the build is warmed anew.
    await signIn(page, 'pia@example.com');
    await sessionsOf(warm.projectId, 'Showroom');
    expect(await panel.getByRole('alert').textContent()).toBe(why);
    expect(await figure('warm-ready')).toBe('0');
    await expect.poll(() => panel.getByRole('link', { name: 'upload a new build' }).getAttribute('href')).toBe(`${new URL(t.started.publicUrls.dashboard).pathname}/projects/${warm.projectId}/builds`);
    await expectAccessible(page);
    script.failStartWith = undefined;
    await panel.getByRole('button', { name: 'Warm this build again' }).click();
    await panel.getByRole('alert').waitFor({ state: 'detached' });
    await expect.poll(() => script.started.length).toBe(3);
    await panel.getByTestId('warm-starting').filter({ hasText: /^1$/ }).waitFor({ timeout: 15_000 });
    expect(problems).toEqual([]);
    await page.close();
  });
});
