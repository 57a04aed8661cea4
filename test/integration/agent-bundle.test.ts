// The one-file agent bundle (what the Windows zip carries), built with esbuild into a folder with
// no node_modules and run by plain node: it enrolls with a real control plane, connects, and stops
// cleanly on SIGTERM; its service and doctor commands work from the bundle too.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bundleAgent } from '@pixelfleet/agent/bundle';
import { nextEvent, startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { cleanEnv, startCli } from '../support/cli-process';

let dir: string;
let bundle: string;
const children: ChildProcessWithoutNullStreams[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pf-bundle-'));
  bundle = join(dir, 'agent.cjs');
  await bundleAgent(bundle);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const c of cleanups.splice(0).reverse()) await c();
});

function start(args: string[], env = cleanEnv()) {
  const p = startCli(bundle, args, env);
  children.push(p.child);
  return p;
}

describe('the agent bundle (dist/agent.cjs)', () => {
  it('runs: enrolls, connects, and stops on SIGTERM', async () => {
    const t: TestControlPlane = await startTestControlPlane();
    cleanups.push(() => t.destroy());
    const config = join(dir, 'run.json');
    writeFileSync(config, JSON.stringify({ controlPlane: t.started.grpcAddress, joinToken: TEST_JOIN_TOKEN, region: 'europe', dataDir: join(dir, 'data'), hostname: 'bundled' }));
    const connected = nextEvent(t.cp, (e) => e.type === 'worker.connected', 30_000);
    const agent = start(['run', '--config', config]);
    await connected;
    expect(t.cp.registry.list()).toEqual([expect.objectContaining({ hostname: 'bundled', status: 'connected' })]);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    expect(agent.stderr()).toBe('');
  });

  it('prints the service plan and runs doctor', async () => {
    const config = join(dir, 'svc.json');
    writeFileSync(config, JSON.stringify({ controlPlane: 'nonexistent.invalid:7443', joinToken: TEST_JOIN_TOKEN, region: 'europe', dataDir: join(dir, 'd') }));
    const svc = start(['service', 'install', '--config', config, '--dry-run']);
    expect(await svc.exited).toBe(0);
    expect(svc.stdout()).toContain('<executable>C:\\Program Files\\Pixelfleet\\agent\\node.exe</executable>');
    const doctor = start(['doctor', '--config', config]);
    expect(await doctor.exited).toBe(1);
    expect(doctor.stdout()).toMatch(/^ok {4}config /);
    expect(doctor.stdout()).toContain('fail  control plane  cannot resolve host "nonexistent.invalid"');
  });
});
