// The README's pictures of the dashboard, taken by the browser tests as they walk it: only when
// PIXELFLEET_SCREENSHOTS names a folder (`PIXELFLEET_SCREENSHOTS=docs/screenshots npx vitest run
// test/e2e/dashboard-browser.test.ts test/e2e/browser-analytics.test.ts`), never in a plain run.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

/** Saves the page as `<folder>/<name>.jpg` (1280 px wide, JPEG 70: small enough to commit) when asked to. */
export async function screenshotForDocs(page: Page, name: string): Promise<void> {
  const folder = process.env.PIXELFLEET_SCREENSHOTS;
  if (folder === undefined || folder === '') return;
  mkdirSync(folder, { recursive: true });
  const size = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(folder, `${name}.jpg`), type: 'jpeg', quality: 70 });
  if (size !== null) await page.setViewportSize(size);
}
