// One browser page's code bundled in memory by esbuild: a minified IIFE and its CSS, nothing
// written to disk and nothing fetched from a CDN, so the pages work on an air-gapped network.
// The player page and the dashboard are both built here; each package keeps its own entry,
// options and cache. Node only: reached as `@pixelfleet/common/browser-bundle`, never from the
// index (the agent's bundle and the browser must not pull esbuild in).
import { dirname } from 'node:path';
import { build, type BuildOptions } from 'esbuild';

/** A page's two assets. */
export interface BrowserBundle {
  /** Minified IIFE, ES2020, ASCII only. */
  readonly js: string;
  readonly css: string;
}

export interface BrowserBundleOptions {
  /** The output's base name (`player` → player.js, player.css); named in the error when one is missing. */
  name: string;
  /** The entry file's absolute path; its folder is esbuild's working dir. */
  entry: string;
  /** JSX through this runtime's automatic transform (`preact`); omitted: no JSX in the sources. */
  jsxImportSource?: string;
  /** Module names swapped for others at bundle time. */
  alias?: Record<string, string>;
}

export async function bundleBrowserPage(options: BrowserBundleOptions): Promise<BrowserBundle> {
  const jsx: BuildOptions = options.jsxImportSource === undefined ? {} : { jsx: 'automatic', jsxImportSource: options.jsxImportSource };
  const result = await build({
    entryPoints: { [options.name]: options.entry },
    absWorkingDir: dirname(options.entry),
    outdir: `pixelfleet-${options.name}`, // nothing is written; names the in-memory outputs
    write: false,
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser', // a package with a browser field (e.g. `ws`) resolves to its browser form
    conditions: ['source'], // workspace packages from their sources, built or not
    target: 'es2020',
    charset: 'ascii',
    ...jsx,
    define: { 'process.env.NODE_ENV': '"production"' },
    ...(options.alias === undefined ? {} : { alias: options.alias }),
    logLevel: 'silent',
  });
  const files = result.outputFiles ?? []; // present whenever write is false
  const js = files.find((file) => file.path.endsWith('.js'));
  const css = files.find((file) => file.path.endsWith('.css'));
  if (js === undefined || css === undefined) throw new Error(`esbuild produced no ${options.name}.js/${options.name}.css`);
  return { js: js.text, css: css.text };
}
