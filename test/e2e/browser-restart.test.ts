// The viewer page in a real browser (Debian chromium) against the real processes, through a
// control plane restart while its session is Starting: the app is held at the mock's signalling
// gate, `pixelfleet serve` is killed (SIGKILL: the page sees 1006) or stopped (SIGTERM: 1012), the
// app identifies while it is down, and serve starts again. The page resumes, asks again for the
// streamer list its first socket never got, Epic's library subscribes, and the video decodes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { killAll, sessionStatuses } from '../support/fleet-processes';
import { appLogOf, restartServe, serveGatedMockAppBuild, startStreamingFleet } from '../support/streaming-fleet';

let browser: Awaited<ReturnType<typeof launchChromium>>;
let gatedBuild: Awaited<ReturnType<typeof serveGatedMockAppBuild>>;
const dirs: string[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  gatedBuild = await serveGatedMockAppBuild();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gatedBuild?.close();
});

afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Frames the page's <video> has decoded (0 before the stream plays). */
const framesDecoded = (page: Page) => page.evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0);

/** The one session of a fresh fleet, once it exists. */
async function onlySession(grpcAddress: string): Promise<string> {
  let id: string | undefined;
  await vi.waitFor(async () => {
    id = [...(await sessionStatuses(grpcAddress)).keys()][0];
    expect(id).toBeDefined();
  }, { timeout: 20_000, interval: 200 });
  return id!;
}

describe('the viewer page through a control plane restart while its session is Starting', () => {
  for (const how of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${how}: the page resumes, lists the app that identified meanwhile, subscribes and decodes`, { timeout: 120_000 }, async () => {
      const GATE = gatedBuild.gate;
      rmSync(GATE, { force: true });
      const dir = mkdtempSync(join(tmpdir(), 'pf-browser-restart-'));
      dirs.push(dir);
      const config = { sessions: { connectTimeoutSeconds: 25 } };
      const fleet = await startStreamingFleet({ dir, buildUrl: gatedBuild.buildUrl, config });
      const page = await browser.context.newPage();
      await page.goto(`${fleet.cp.httpOrigin}/share/${fleet.account.projectId}`);
      const sessionId = await onlySession(fleet.cp.grpcAddress);
      const appLog = () => appLogOf(dir, sessionId);
      await vi.waitFor(() => expect(appLog()).toContain(`Waiting for ${GATE} before connecting to signalling`), { timeout: 30_000, interval: 50 });
      expect((await sessionStatuses(fleet.cp.grpcAddress)).get(sessionId)).toBe('Starting');

      fleet.cp.child.kill(how);
      await fleet.cp.exited;
      writeFileSync(GATE, '');
      await vi.waitFor(() => expect(appLog()).toContain('Streamer identified as'), { timeout: 30_000, interval: 50 });
      const again = await restartServe(dir, fleet.cp, config);

      await expect.poll(() => framesDecoded(page), { timeout: 60_000, interval: 200 }).toBeGreaterThan(0);
      const before = await framesDecoded(page);
      await expect.poll(() => framesDecoded(page), { timeout: 10_000, interval: 200 }).toBeGreaterThan(before + 10);
      expect((await sessionStatuses(again.grpcAddress)).get(sessionId)).toBe('Running');
      // The same session, never ended and made again: the page shows the stream, not a close.
      expect([...(await sessionStatuses(again.grpcAddress)).keys()]).toEqual([sessionId]);
      await page.close();
      await expect.poll(async () => (await sessionStatuses(again.grpcAddress)).get(sessionId), { timeout: 20_000, interval: 200 }).toBe('Terminated');
    });
  }
});
