// Builds the browser bundle (player.js + player.css) in memory with esbuild, once per process.

import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

// Named from the package root so that it is found both from src/ and from the compiled dist/.
const ENTRY = fileURLToPath(new URL('../src/player/main.ts', import.meta.url));

/** The page's two assets, served as `<assetBase>/player.js` and `<assetBase>/player.css`. */
export interface PlayerBundle {
  /** Minified IIFE, ES2020, ASCII only. */
  readonly js: string;
  readonly css: string;
}

let cached: Promise<PlayerBundle> | undefined;

/** Bundle the viewer page's browser code. The first call builds (≈0.3 s); later calls share its result. */
export function bundlePlayer(): Promise<PlayerBundle> {
  cached ??= buildPlayer().catch((error: unknown) => {
    cached = undefined; // let a later call try again
    throw error;
  });
  return cached;
}

async function buildPlayer(): Promise<PlayerBundle> {
  const result = await build({
    entryPoints: { player: ENTRY },
    absWorkingDir: dirname(ENTRY),
    outdir: 'pixelfleet-player', // nothing is written; names the in-memory outputs
    write: false,
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser', // `ws` (re-exported by the library) resolves to its browser stub
    conditions: ['source'], // workspace packages from their sources, built or not
    target: 'es2020',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const js = result.outputFiles.find((file) => file.path.endsWith('.js'));
  const css = result.outputFiles.find((file) => file.path.endsWith('.css'));
  if (js === undefined || css === undefined) throw new Error('esbuild produced no player.js/player.css');
  return { js: js.text, css: css.text };
}
