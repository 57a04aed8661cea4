// `npm ci` under every Node version package.json's engines allows gives no EBADENGINE: each
// locked package's engines.node covers the whole supported range (light-my-request is pinned
// to 6.6.0 through `overrides` because 6.8's cookie@2 declares node >=22; Node 22 before 22.13 and
// Node 23 are left out because rolldown and napi-rs refuse them).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli-process';

interface LockedPackage {
  version?: string;
  engines?: { node?: string } | string[];
}

const root = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockedPackage> };

describe('engines', () => {
  it('every locked package supports every Node version the repository supports', () => {
    // semver is npm's own range logic (a dependency of the toolchain, not of ours).
    const semver = createRequire(import.meta.url)('semver') as { subset(sub: string, dom: string): boolean; satisfies(v: string, r: string): boolean };
    const supported = root.engines.node;
    expect(semver.satisfies(process.versions.node, supported)).toBe(true);
    const refusing = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !Array.isArray(p.engines) && p.engines?.node !== undefined && !semver.subset(supported, p.engines.node))
      .map(([path, p]) => `${path}@${p.version ?? '?'} wants node ${(p.engines as { node: string }).node}`);
    expect(refusing).toEqual([]);
  });
});
