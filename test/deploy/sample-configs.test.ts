// The sample configs under deploy/ load through the real loaders (so they stay valid as keys
// change), and the files an operator copies them to, holding real secrets, are git-ignored.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadControlPlaneConfig } from '@pixelfleet/control-plane';
import { loadAgentConfig } from '@pixelfleet/agent';
import { REPO_ROOT } from '../support/cli-process';

const sample = (name: string) => join(REPO_ROOT, 'deploy', name);

describe('sample configs', () => {
  it('load as they are, with placeholder secrets', () => {
    const cp = loadControlPlaneConfig({ file: sample('control-plane.example.json'), env: {} });
    expect(cp.adminToken).toMatch(/^CHANGE-ME/);
    expect(cp.agentJoinToken).toMatch(/^CHANGE-ME/);
    expect(cp.dataDir).toBe('/var/lib/pixelfleet');
    const agent = loadAgentConfig({ file: sample('agent.example.json'), env: {} });
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
