// vitest globalSetup: the process tests (cli-process.ts, fleet-processes.ts) run the compiled
// binaries and the end-to-end tests the agent bundle (dist/agent.cjs), so both must match the
// sources. Compiles the packages whose dist/ is missing or older than a source file (≈2 s) and
// rebuilds the bundle when it is stale by the same rule (≈2 s), once per run, before any test file
// starts; a fresh dist and bundle cost a stat per source file. It also names the run for the
// Wine prefix the Windows tests share (wine.ts) and, at the end, removes that prefix.
import { build, buildAgentBundle, bundleStale, stalePackages } from '../../scripts/build.mjs';
import { removeRunPrefix, TEST_RUN_ENV } from './wine.ts';

export async function setup() {
  process.env[TEST_RUN_ENV] = String(process.pid);
  const stale = stalePackages();
  if (stale.length > 0) build(stale);
  if (bundleStale()) await buildAgentBundle();
}

export async function teardown() {
  await removeRunPrefix(String(process.pid));
}
