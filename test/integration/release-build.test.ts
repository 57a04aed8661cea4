// The release build (npm run build): every package door's default target is compiled JavaScript in
// dist/ that plain Node loads, with source maps back to src/; `pixelfleet serve` and
// `pixelfleet-agent run` run it with tsx and typescript unresolvable and no TypeScript file loaded
// (test/support/production-probe.mjs watches every module they load), and the viewer page's bundle,
// the proto descriptor and the agent's package.json are still found from dist.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { build, PACKAGES, stalePackages } from '../../scripts/build.mjs';
import { cleanEnv, REPO_ROOT } from '../support/cli-process';
import { killAll, startAgentProcess, startServe } from '../support/fleet-processes';

const PROBE = join(REPO_ROOT, 'test/support/production-probe.mjs');

afterEach(killAll);

/** A temporary folder, removed once the test is over (after afterEach has killed its processes). */
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-release-'));
  onTestFinished(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

type ProbeLine = { esm?: string; cjs?: string; execArgv?: string[] };

function probeEnv(file: string): Record<string, string> {
  return { NODE_OPTIONS: `--import=${pathToFileURL(PROBE).href}`, PIXELFLEET_PROBE_FILE: file };
}

function readProbe(file: string): { modules: string[]; execArgv: string[] | undefined } {
  const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as ProbeLine);
  const modules = lines.flatMap((l) => (l.esm !== undefined ? [fileURLToPath(l.esm.startsWith('file:') ? l.esm : 'file:///node:builtin')] : l.cjs !== undefined ? [l.cjs] : []));
  return { modules, execArgv: lines.find((l) => l.execArgv !== undefined)?.execArgv };
}

/** Modules of this repository (not node_modules' third parties) that a process loaded. */
function ownModules(modules: string[]): string[] {
  return modules.filter((m) => m.startsWith(REPO_ROOT + '/') && !m.slice(REPO_ROOT.length).includes('/node_modules/') || /\/node_modules\/@pixelfleet\//.test(m));
}

function expectCompiledOnly(modules: string[]): void {
  expect(modules.filter((m) => /\/node_modules\/(tsx|typescript)\//.test(m) || /\.[mc]?ts$/.test(m))).toEqual([]);
  const own = ownModules(modules);
  expect(own.length).toBeGreaterThan(20);
  // Every module of ours is a compiled file under a package's dist/ (or its bin launcher).
  const compiled = new RegExp(`/(${PACKAGES.join('|')})/(dist|bin)/[^]*\\.(m?js|json)$`);
  expect(own.filter((m) => !compiled.test(m) && !m.endsWith('/package.json'))).toEqual([]);
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, args, { env, cwd: REPO_ROOT });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => done({ code, out }));
  });
}

/** Writes files (path → text) under root. */
function writeTree(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

describe('scripts/build.mjs', () => {
  const LIB = {
    'lib/package.json': '{ "type": "module" }',
    'lib/src/index.ts': [
      "import { twice } from './math';",
      "import { area, type Shape } from './shapes';",
      "import type { Unit } from './units';",
      "export { label } from './dir';",
      'export const value = twice(21);',
      "export async function later(): Promise<number> { const m = await import('./math'); return m.twice(2); }",
      "export function shapeArea(s: Shape, _u: Unit = 'm'): number { return area(s); }",
    ].join('\n'),
    'lib/src/math.ts': 'export function twice(n: number): number { return n * 2; }',
    'lib/src/math.test.ts': "import { twice } from './math';\nexport const t = twice(1);",
    'lib/src/shapes.ts': 'export interface Shape { w: number; h: number }\nexport const area = (s: Shape): number => s.w * s.h;',
    'lib/src/units.ts': "export type Unit = 'm' | 'cm';",
    'lib/src/dir/index.ts': "export const label: string = 'dir';",
  };

  it('compiles each source (not tests) to dist/ with .js specifiers Node resolves, directory imports as /index.js, and source maps', async () => {
    const root = tempDir();
    writeTree(root, LIB);
    expect(build(['lib'], root)).toBe(5);
    expect(existsSync(join(root, 'lib/dist/math.test.js'))).toBe(false);
    const index = readFileSync(join(root, 'lib/dist/index.js'), 'utf8');
    expect(index).toContain('"./dir/index.js"');
    expect(index).toContain('import("./math.js")');
    expect(index).not.toContain('./units'); // a type-only import leaves nothing behind
    expect((JSON.parse(readFileSync(join(root, 'lib/dist/dir/index.js.map'), 'utf8')) as { sources: string[] }).sources).toEqual(['../../src/dir/index.ts']);
    const script = `const m = await import(${JSON.stringify(pathToFileURL(join(root, 'lib/dist/index.js')).href)}); console.log(m.value, m.label, await m.later(), m.shapeArea({ w: 2, h: 3 }));`;
    const { code, out } = await run(['--input-type=module', '-e', script], cleanEnv());
    expect(out).toBe('42 dir 4 6\n');
    expect(code).toBe(0);
  });

  it('fails naming every relative import that names no source file', () => {
    const root = tempDir();
    writeTree(root, { ...LIB, 'lib/src/broken.ts': "export { twice } from './maths';\nexport const x = await import('../gone');" });
    expect(() => build(['lib'], root)).toThrow("build failed:\nlib/src/broken.ts: cannot resolve './maths'\nlib/src/broken.ts: cannot resolve '../gone'");
  });

  it('finds a package stale when dist is missing or a source or package.json is newer than it, not for a test file', () => {
    const root = tempDir();
    writeTree(root, LIB);
    expect(stalePackages(['lib'], root)).toEqual(['lib']);
    build(['lib'], root);
    expect(stalePackages(['lib'], root)).toEqual([]);
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(root, 'lib/src/math.test.ts'), later, later);
    expect(stalePackages(['lib'], root)).toEqual([]);
    utimesSync(join(root, 'lib/src/dir/index.ts'), later, later);
    expect(stalePackages(['lib'], root)).toEqual(['lib']);
    build(['lib'], root);
    utimesSync(join(root, 'lib/dist/.build-stamp'), later, later);
    expect(stalePackages(['lib'], root)).toEqual([]);
    const evenLater = new Date(Date.now() + 120_000);
    utimesSync(join(root, 'lib/package.json'), evenLater, evenLater);
    expect(stalePackages(['lib'], root)).toEqual(['lib']);
  });
});

describe('npm run build', () => {
  it('compiles every exported door to dist/ JavaScript that plain Node loads without tsx', async () => {
    const doors: string[] = [];
    for (const pkg of PACKAGES) {
      const manifest = JSON.parse(readFileSync(join(REPO_ROOT, pkg, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { source: string; default: string }> };
      for (const [subpath, target] of Object.entries(manifest.exports)) {
        if (typeof target === 'string') continue; // a data file (proto's descriptor)
        expect(target.source).toMatch(/^\.\/src\/.*\.ts$/);
        expect(target.default).toBe(target.source.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, '.js'));
        expect(existsSync(join(REPO_ROOT, pkg, target.default)), `${manifest.name} ${subpath}`).toBe(true);
        doors.push(`${manifest.name}${subpath.slice(1)}`);
      }
    }
    const probe = join(tempDir(), 'probe.jsonl');
    const script = `for (const door of ${JSON.stringify(doors)}) await import(door);`;
    const { code, out } = await run(['--input-type=module', '-e', script], cleanEnv(probeEnv(probe)));
    expect(out).toBe('');
    expect(code).toBe(0);
    const { modules, execArgv } = readProbe(probe);
    expectCompiledOnly(modules);
    expect(execArgv).toEqual(['--input-type=module', '-e', script]);
  });

  it('writes a source map beside every compiled file, naming its source', () => {
    let maps = 0;
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.js')) {
          expect(readFileSync(path, 'utf8')).toContain(`//# sourceMappingURL=${entry.name}.map`);
          const map = JSON.parse(readFileSync(`${path}.map`, 'utf8')) as { sources: string[] };
          expect(existsSync(resolve(dirname(path), map.sources[0]!)), path).toBe(true);
          maps++;
        }
      }
    };
    for (const pkg of PACKAGES) walk(join(REPO_ROOT, pkg, 'dist'));
    expect(maps).toBeGreaterThan(150);
  });
});

describe('the production binaries run the compiled code', () => {
  it('pixelfleet serve and pixelfleet-agent run start, connect and serve the viewer page with no tsx and no TypeScript file loaded', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'cp'));
    mkdirSync(join(dir, 'agent'));
    const cpProbe = join(dir, 'cp-probe.jsonl');
    const agentProbe = join(dir, 'agent-probe.jsonl');
    const cp = await startServe({ dataDir: join(dir, 'cp'), configDir: dir, env: probeEnv(cpProbe) });
    const agent = await startAgentProcess({ grpcAddress: cp.grpcAddress, dataDir: join(dir, 'agent'), configDir: dir, hostname: 'release-box', env: probeEnv(agentProbe), bin: 'pixelfleet-agent' });

    // The viewer page's bundle is built by esbuild from web-player's sources at first request.
    const js = await fetch(`${cp.httpOrigin}/share/assets/player.js`);
    expect(js.status).toBe(200);
    expect((await js.text()).length).toBeGreaterThan(10_000);

    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    cp.child.kill('SIGTERM');
    expect(await cp.exited).toBe(0);

    for (const [file, main] of [
      [cpProbe, 'control-plane/dist/main.js'],
      [agentProbe, 'agent/dist/main.js'],
    ] as const) {
      const { modules, execArgv } = readProbe(file);
      expect(execArgv).toEqual([]);
      expect(modules).toContain(join(REPO_ROOT, main));
      expectCompiledOnly(modules);
    }
  });
});
