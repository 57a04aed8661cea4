// vitest globalSetup: the process tests (cli-process.ts, fleet-processes.ts) run the compiled
// binaries, so dist/ must match the sources. Compiles the packages whose dist/ is missing or older
// than a source file (≈2 s), once per run, before any test file starts; a fresh dist costs a stat
// per source file.
import { build, stalePackages } from '../../scripts/build.mjs';

export function setup() {
  const stale = stalePackages();
  if (stale.length > 0) build(stale);
}
