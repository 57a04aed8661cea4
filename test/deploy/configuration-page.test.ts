// docs/configuration.md's two key tables are the processes' config keys as a reader sees them: the
// control plane's section lists exactly the leaves `PIXELFLEET_*` may set, the agent's exactly
// those `PIXELFLEET_AGENT_*` may set.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONTROL_PLANE_ENV_LEAVES } from '@pixelfleet/control-plane/test-support';
import { AGENT_ENV_LEAVES } from '@pixelfleet/agent/test-support';

const PAGE = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

/** The keys the first cell of each table row names (`http.host` / `http.port` is two), in order. */
function documentedKeys(section: string): string[] {
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.slice(2).split(' | ')[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

const sorted = (keys: Iterable<string>) => [...keys].sort();

describe('docs/configuration.md', () => {
  const controlPlane = PAGE.slice(PAGE.indexOf('## Control plane'), PAGE.indexOf('## Agent'));
  const agent = PAGE.slice(PAGE.indexOf('## Agent'));

  it("lists every control plane key once, and no other", () => {
    expect(controlPlane.length).toBeGreaterThan(0);
    const keys = documentedKeys(controlPlane);
    expect(new Set(keys).size).toBe(keys.length);
    expect(sorted(keys)).toEqual(sorted(Object.keys(CONTROL_PLANE_ENV_LEAVES)));
  });

  it('lists every agent key once, and no other', () => {
    const keys = documentedKeys(agent);
    expect(new Set(keys).size).toBe(keys.length);
    expect(sorted(keys)).toEqual(sorted(Object.keys(AGENT_ENV_LEAVES)));
  });
});
