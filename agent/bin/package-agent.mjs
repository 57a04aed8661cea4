#!/usr/bin/env node
// npm run package:agent: builds dist/pixelfleet-agent-win-x64.zip (see src/package/package-agent.ts)
// and prints its size and contents, or one line on stderr and exit 1 (e.g. without mingw-w64, which
// app-job.exe needs). `-- --fetch-only`: only fetches the pinned npm tarballs into dist/.cache (npm
// test does, before the tests lose the network); it needs no mingw-w64.
import { register as registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// Workspace packages from their TypeScript sources (their "source" export condition), as under
// `node --conditions=source`, which npm run does not pass.
registerHooks('data:text/javascript,export function resolve(s,c,n){return n(s,{...c,conditions:[...c.conditions,"source"]})}');
register();
const { fetchPinnedTarballs, packageAgent } = await import('../src/package/package-agent.ts');
const { formatBytes } = await import('@pixelfleet/build-archive');
const outDir = fileURLToPath(new URL('../../dist', import.meta.url));
const args = process.argv.slice(2);
if (args.some((a) => a !== '--fetch-only')) {
  console.error('usage: npm run package:agent [-- --fetch-only]');
  process.exit(2);
}
try {
  if (args.includes('--fetch-only')) {
    for (const path of await fetchPinnedTarballs(`${outDir}/.cache`)) console.log(`ready: ${path}`);
    process.exit(0);
  }
  const r = await packageAgent(outDir);
  console.log(`${r.zip}: ${formatBytes(r.bytes)} (${r.bytes} bytes), sha256 ${r.sha256}`);
  for (const e of r.entries) console.log(`  ${formatBytes(e.bytes).padStart(10)}  ${e.sha256.slice(0, 16)}  ${e.name}`);
  console.log(`the same bundle runs here: node ${outDir}/agent.cjs run --config <file>`);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}
