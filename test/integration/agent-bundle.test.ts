// The one-file agent bundle (what the Windows zip carries): `npm run build` writes it to
// dist/agent.cjs and rebuilds it when a bundled source is newer; copied into a folder with no
// node_modules and run by plain node, it enrolls with a real control plane, connects, and stops
// cleanly on SIGTERM; its service and doctor commands work from the bundle too.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { AGENT_BUNDLE as BUNDLE_PATH, bundledPackages, bundleStale, PACKAGES } from '../../scripts/build.mjs';
import { nextEvent, startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { AGENT_BUNDLE, cleanEnv, REPO_ROOT, startCli } from '../support/cli-process';

let dir: string;
let bundle: string;
const children: ChildProcessWithoutNullStreams[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-bundle-'));
  bundle = join(dir, 'agent.cjs');
  copyFileSync(AGENT_BUNDLE, bundle);
  copyFileSync(`${AGENT_BUNDLE}.map`, `${bundle}.map`);
});
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
    // Beside the bundle, wherever it is (none in this folder; agent-package.test.ts runs it where the zip puts one).
    expect(doctor.stdout()).toContain(`ok    app launcher   not needed on linux (apps run directly); a Windows agent would run them under ${join(dir, 'native/app-job/app-job.exe')} (not there)\n`);
  });
});

describe('the bundle npm run build writes', () => {
  it('is dist/agent.cjs at the repository root, the file the tests run, and fresh (the global setup rebuilt it if stale)', () => {
    expect(join(REPO_ROOT, BUNDLE_PATH)).toBe(AGENT_BUNDLE);
    expect(bundledPackages()).toEqual(['agent', 'build-archive', 'common', 'proto', 'signaling']);
    expect(bundleStale()).toBe(false);
  });

  it('has its source map beside it: under --enable-source-maps node finds it, and a place in the bundle maps to its agent/src line', async () => {
    const source = join(REPO_ROOT, 'agent/src/main.ts');
    const definition = 'async function runAgentCli(';
    const sourceLine = readFileSync(source, 'utf8').split('\n').findIndex((l) => l.includes(definition));
    const lines = readFileSync(AGENT_BUNDLE, 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes(definition));
    expect(sourceLine).toBeGreaterThan(0);
    expect(line).toBeGreaterThan(0);
    const column = lines[line]!.indexOf(definition);
    // Loading the bundle runs its CLI (--version here); then node's own record of its source map.
    const script = `require(${JSON.stringify(AGENT_BUNDLE)}); process.on('exit', () => console.log(JSON.stringify(require('node:module').findSourceMap(${JSON.stringify(AGENT_BUNDLE)})?.findEntry(${line}, ${column}) ?? null)));`;
    const p = startCli('--enable-source-maps', ['-e', script, 'bundle', '--version']);
    expect(await p.exited).toBe(0);
    const [version, entry] = p.stdout().trim().split('\n');
    expect(version).toBe('pixelfleet-agent 0.1.0');
    expect(JSON.parse(entry!)).toMatchObject({ originalSource: pathToFileURL(source).href, originalLine: sourceLine });
    expect(p.stderr()).toBe('');
  });

  it('is stale when it or its map is missing, or older than a bundled package\'s source or package.json, or package-lock.json; not for a test file or another package', () => {
    const root = mkdtempSync(join(tmpdir(), 'pf-bundle-stale-'));
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    const deps: Record<string, string[]> = { agent: ['proto', 'signaling'], 'control-plane': ['proto', 'signaling'] };
    for (const pkg of PACKAGES) {
      mkdirSync(join(root, pkg, 'src'), { recursive: true });
      const dependencies = Object.fromEntries((deps[pkg] ?? []).map((d) => [`@pixelfleet/${d}`, '0.1.0']));
      writeFileSync(join(root, pkg, 'package.json'), JSON.stringify({ name: `@pixelfleet/${pkg}`, dependencies: { zod: '^4', ...dependencies } }));
      writeFileSync(join(root, pkg, 'src', 'index.ts'), 'export const x = 1;');
      writeFileSync(join(root, pkg, 'src', 'index.test.ts'), 'export const y = 1;');
    }
    writeFileSync(join(root, 'package-lock.json'), '{}');
    expect(bundledPackages(root)).toEqual(['agent', 'proto', 'signaling']);
    expect(bundleStale(root)).toBe(true);
    const built = join(root, BUNDLE_PATH);
    mkdirSync(dirname(built), { recursive: true });
    writeFileSync(built, '');
    expect(bundleStale(root)).toBe(true);
    writeFileSync(`${built}.map`, '{}');
    let t = Date.now() + 60_000;
    const touch = (path: string) => {
      t += 60_000;
      utimesSync(join(root, path), new Date(t), new Date(t));
    };
    const rebuild = () => {
      t += 60_000;
      utimesSync(built, new Date(t), new Date(t));
    };
    rebuild();
    expect(bundleStale(root)).toBe(false);
    for (const notInput of ['signaling/src/index.test.ts', 'control-plane/src/index.ts', 'control-plane/package.json', 'web-player/src/index.ts']) {
      touch(notInput);
      expect(bundleStale(root), notInput).toBe(false);
      rebuild();
    }
    for (const input of ['agent/src/index.ts', 'signaling/src/index.ts', 'proto/package.json', 'package-lock.json']) {
      touch(input);
      expect(bundleStale(root), input).toBe(true);
      rebuild();
      expect(bundleStale(root)).toBe(false);
    }
  });
});
