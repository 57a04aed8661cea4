// Bundles the agent (with its workspace packages and npm dependencies) into one CommonJS file
// with esbuild: what node.exe runs on Windows and `node dist/agent.cjs run` runs anywhere.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

export const BUNDLE_ENTRY = fileURLToPath(new URL('../../src/bundle-main.ts', import.meta.url));

/**
 * The sources find their files relative to their own place in the agent package
 * (`new URL('../../native/app-job/app-job.exe', import.meta.url)` from `src/launcher/`). In the
 * bundle, import.meta.url stands for a file two folders below the bundle's own, so the bundle's
 * folder plays the agent package's root: app-job.exe is looked for at `native/app-job/` beside it.
 */
const BANNER = "const __bundleMetaUrl = require('node:url').pathToFileURL(require('node:path').join(__dirname, 'src', 'bundle', 'agent.cjs')).href;";

/**
 * Writes the bundle to outFile (minified off, so stack traces stay readable) and its source map to
 * outFile.map (linked from the bundle's last line; without the sources' text, which the repository
 * holds): under `node --enable-source-maps` a stack names agent/src/… lines, not the bundle's.
 */
export async function bundleAgent(outFile: string): Promise<void> {
  await build({
    entryPoints: [BUNDLE_ENTRY],
    outfile: outFile,
    bundle: true,
    platform: 'node',
    // Workspace packages from their TypeScript sources (the "source" export condition), so the
    // bundle never depends on a stale or missing dist/.
    conditions: ['source'],
    format: 'cjs',
    target: 'node20',
    banner: { js: BANNER },
    define: { 'import.meta.url': '__bundleMetaUrl' },
    legalComments: 'none',
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
    // Reproducible: no absolute paths of the build machine in the output.
    absWorkingDir: fileURLToPath(new URL('../../..', import.meta.url)),
  });
}
