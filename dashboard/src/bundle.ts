// Builds the dashboard's browser bundle (dashboard.js + dashboard.css) in memory with esbuild, once
// per process, from src/app/ (Preact). Nothing comes from a CDN or the internet: the bundle is
// everything the page loads, so the dashboard works on an air-gapped network.
import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

// Named from the package root so that it is found both from src/ and from the compiled dist/.
const ENTRY = fileURLToPath(new URL('../src/app/main.tsx', import.meta.url));

/** The page's two assets and the name they are served under. */
export interface DashboardBundle {
  /** Minified IIFE, ES2020, ASCII only. */
  readonly js: string;
  readonly css: string;
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
  const result = await build({
    entryPoints: { dashboard: ENTRY },
    absWorkingDir: dirname(ENTRY),
    outdir: 'pixelfleet-dashboard', // nothing is written; names the in-memory outputs
    write: false,
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    conditions: ['source'], // workspace packages from their sources, built or not
    target: 'es2020',
    charset: 'ascii',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const js = result.outputFiles.find((file) => file.path.endsWith('.js'));
  const css = result.outputFiles.find((file) => file.path.endsWith('.css'));
  if (js === undefined || css === undefined) throw new Error('esbuild produced no dashboard.js/dashboard.css');
  const version = createHash('sha256').update(js.contents).update(css.contents).digest('hex').slice(0, 12);
  return { js: js.text, css: css.text, version };
}
