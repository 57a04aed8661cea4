// The sample configs under deploy/ load through the real loaders (so they stay valid as keys
// change), and the files an operator copies them to, holding real secrets, are git-ignored.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadControlPlaneConfig } from '@pixelfleet/control-plane';
import { loadAgentConfig } from '@pixelfleet/agent';
import { REPO_ROOT } from '../support/cli-process';

const sample = (name: string) => join(REPO_ROOT, 'deploy', name);

/** The message a loader refuses with. */
function refusal(load: () => unknown): string {
  try {
    load();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the config loaded');
}

describe('sample configs', () => {
  it('are refused as they are, each placeholder secret named, with how to make one', () => {
    // One key at a time, as an operator meets them: each refusal names the next placeholder left.
    const replaced: Record<string, unknown> = {};
    for (const [key, value] of [
      ['adminToken', { adminToken: randomBytes(32).toString('hex') }],
      ['agentJoinToken', { agentJoinToken: randomBytes(32).toString('hex') }],
      ['metrics.bearerToken', { metrics: { bearerToken: randomBytes(32).toString('hex') } }],
    ] as const) {
      const message = refusal(() => loadControlPlaneConfig({ file: sample('control-plane.example.json'), env: {}, overrides: replaced }));
      expect(message, key).toContain(`${key} is the sample config's placeholder (CHANGE-ME…); generate one with \`openssl rand -hex 32\``);
      Object.assign(replaced, value);
    }
    expect(refusal(() => loadAgentConfig({ file: sample('agent.example.json'), env: {} }))).toContain("joinToken is the sample config's placeholder");
  });

  it('load once their secrets are replaced', () => {
    const secret = (n: number) => randomBytes(32).toString('hex') + String(n);
    const join = secret(2);
    const cp = loadControlPlaneConfig({ file: sample('control-plane.example.json'), env: {}, overrides: { adminToken: secret(1), agentJoinToken: join, metrics: { bearerToken: secret(3) } } });
    expect(cp.dataDir).toBe('/var/lib/pixelfleet');
    const agent = loadAgentConfig({ file: sample('agent.example.json'), env: { PIXELFLEET_AGENT_JOIN_TOKEN: join } });
    expect(agent.joinToken).toBe(cp.agentJoinToken);
    expect(agent.region).toBe('europe');
  });

  it('the files with real secrets are git-ignored; the samples are not', () => {
    const ignored = (path: string) => {
      try {
        execFileSync('git', ['check-ignore', '--no-index', '-q', path], { cwd: REPO_ROOT });
        return true;
      } catch {
        return false;
      }
    };
    for (const path of ['control-plane.json', 'agent.json', 'deploy/control-plane.json', 'deploy/agent.json', 'prod.secret.json', 'deploy/staging.secret.json']) expect(ignored(path), path).toBe(true);
    for (const path of ['deploy/control-plane.example.json', 'deploy/agent.example.json', 'deploy/pixelfleet.service', 'package.json']) expect(ignored(path), path).toBe(false);
  });
});
