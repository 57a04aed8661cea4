// Builds the browser bundle (player.js + player.css) in memory with esbuild, once per process: on
// Epic's newest published frontend library, or, for tests that prove the page on an earlier
// generation, on that one instead (the same API, swapped in at bundle time).

import { fileURLToPath } from 'node:url';
import { bundleBrowserPage, type BrowserBundle } from '@pixelfleet/common/browser-bundle';

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
export type PlayerBundle = BrowserBundle;

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

function buildPlayer(library: FrontendLibrary): Promise<PlayerBundle> {
  // `ws`, re-exported by the library, resolves to its browser stub.
  return bundleBrowserPage({ name: 'player', entry: ENTRY, ...(library === FRONTEND_LIBRARY ? {} : { alias: { [FRONTEND_LIBRARY]: library } }) });
}
