// Builds the dashboard's browser bundle (dashboard.js + dashboard.css) in memory with esbuild, once
// per process, from src/app/ (Preact). Nothing comes from a CDN or the internet: the bundle is
// everything the page loads, so the dashboard works on an air-gapped network.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { bundleBrowserPage, type BrowserBundle } from '@pixelfleet/common/browser-bundle';

// Named from the package root so that it is found both from src/ and from the compiled dist/.
const ENTRY = fileURLToPath(new URL('../src/app/main.tsx', import.meta.url));

/** The page's two assets and the name they are served under. */
export interface DashboardBundle extends BrowserBundle {
  /**
   * 12 hex digits of the SHA-256 of both assets: part of their file names, so that a browser may
   * keep them for good (`immutable`) and a new bundle is a new name.
   */
  readonly version: string;
}

let cached: Promise<DashboardBundle> | undefined;

/** Bundle the dashboard's browser code. The first call builds (≈0.2 s); later calls share its result. */
export function bundleDashboard(): Promise<DashboardBundle> {
  cached ??= buildDashboard().catch((error: unknown) => {
    cached = undefined; // let a later call try again
    throw error;
  });
  return cached;
}

async function buildDashboard(): Promise<DashboardBundle> {
  const { js, css } = await bundleBrowserPage({ name: 'dashboard', entry: ENTRY, jsxImportSource: 'preact' });
  const version = createHash('sha256').update(js).update(css).digest('hex').slice(0, 12);
  return { js, css, version };
}
