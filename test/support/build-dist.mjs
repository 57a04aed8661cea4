// vitest globalSetup: the process tests (cli-process.ts, fleet-processes.ts) run the compiled
// binaries and the end-to-end tests the agent bundle (dist/agent.cjs), so both must match the
// sources. Compiles the packages whose dist/ is missing or older than a source file (≈2 s) and
// rebuilds the bundle when it is stale by the same rule (≈2 s), once per run, before any test file
// starts; a fresh dist and bundle cost a stat per source file.
import { build, buildAgentBundle, bundleStale, stalePackages } from '../../scripts/build.mjs';

export async function setup() {
  const stale = stalePackages();
  if (stale.length > 0) build(stale);
  if (bundleStale()) await buildAgentBundle();
}
