// Builds the browser bundle (player.js + player.css) in memory with esbuild, once per process: on
// Epic's newest published frontend library, or, for tests that prove the page on an earlier
// generation, on that one instead (the same API, swapped in at bundle time).

import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

// Named from the package root so that it is found both from src/ and from the compiled dist/.
const ENTRY = fileURLToPath(new URL('../src/player/main.ts', import.meta.url));

/** Epic's frontend library the page is written against and served with: the UE 5.7 generation, Epic's newest on npm. */
export const FRONTEND_LIBRARY = '@epicgames-ps/lib-pixelstreamingfrontend-ue5.7';

/**
 * Generations of Epic's frontend library a bundle can be built on: the page's own, and UE 5.5's
 * (1.3), whose API the page uses identically. Only tests build the 5.5 one (a devDependency: a
 * production install does not have it).
 */
export const FRONTEND_LIBRARIES = [FRONTEND_LIBRARY, '@epicgames-ps/lib-pixelstreamingfrontend-ue5.5'] as const;
export type FrontendLibrary = (typeof FRONTEND_LIBRARIES)[number];

/** The page's two assets, served as `<assetBase>/player.js` and `<assetBase>/player.css`. */
export interface PlayerBundle {
  /** Minified IIFE, ES2020, ASCII only. */
  readonly js: string;
  readonly css: string;
}

const cached = new Map<FrontendLibrary, Promise<PlayerBundle>>();

/**
 * Bundle the viewer page's browser code, on FRONTEND_LIBRARY unless another generation is named.
 * The first call per library builds (≈0.3 s); later calls share its result.
 */
export function bundlePlayer(library: FrontendLibrary = FRONTEND_LIBRARY): Promise<PlayerBundle> {
  let bundle = cached.get(library);
  if (bundle === undefined) {
    bundle = buildPlayer(library).catch((error: unknown) => {
      cached.delete(library); // let a later call try again
      throw error;
    });
    cached.set(library, bundle);
  }
  return bundle;
}

async function buildPlayer(library: FrontendLibrary): Promise<PlayerBundle> {
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
    ...(library === FRONTEND_LIBRARY ? {} : { alias: { [FRONTEND_LIBRARY]: library } }),
    logLevel: 'silent',
  });
  const js = result.outputFiles.find((file) => file.path.endsWith('.js'));
  const css = result.outputFiles.find((file) => file.path.endsWith('.css'));
  if (js === undefined || css === undefined) throw new Error('esbuild produced no player.js/player.css');
  return { js: js.text, css: css.text };
}
