// A Windows-packaged mock Unreal build, laid out as a customer's: the root `<Name>.exe` (UE's
// bootstrap), `<Name>/Binaries/Win64/<Name>-Win64-Shipping.exe`, `<Name>/Content/Paks/*.pak`.
// Both exes are built here with mingw-w64 from test/mock-unreal/windows/mock-shipping.c; the
// Shipping exe starts `MockApp\node.exe MockApp\mock-unreal.mjs <its arguments>` from its own
// folder: a Windows Node and the mock Unreal app bundled for it (one ES module, its clip beside it).
// So the build carries its own runtime, as a game does (node.exe stored, ~90 MB: the distribution
// moves a build of realistic weight), and runs under Wine as it would on Windows.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { compileWindowsProgram } from '@pixelfleet/agent/test-support';
import { buildEntries, DEFAULT_PROJECT } from './build-zips';
import { writeZip, type ZipEntrySpec } from './zip-writer';

const SHIPPING_SOURCE = fileURLToPath(new URL('../mock-unreal/windows/mock-shipping.c', import.meta.url));
const MOCK_UNREAL_ENTRY = fileURLToPath(new URL('../mock-unreal/mock-unreal.ts', import.meta.url));
const MOCK_FIXTURE = fileURLToPath(new URL('../mock-unreal/fixtures/testpattern.h264', import.meta.url));

/**
 * Bundles the mock Unreal app into one ES module for a Windows Node (werift and the workspace
 * packages inside; `require` made from the module's own URL for the CommonJS dependencies).
 * Its clip is looked for at `fixtures/testpattern.h264` beside the bundle.
 */
export async function bundleMockAppForWindows(outFile: string): Promise<void> {
  await build({
    entryPoints: [MOCK_UNREAL_ENTRY],
    outfile: outFile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    conditions: ['source'],
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    legalComments: 'none',
    logLevel: 'warning',
  });
}

export interface WindowsBuildOptions {
  /** The Windows node.exe the build carries (a path on this machine). */
  nodeExe: string;
  /** Default DEFAULT_PROJECT. */
  projectName?: string;
  /** File name in dir; default `windows-mock-build.zip`. */
  fileName?: string;
}

/** Writes the build zip into dir (its parts are built in `dir/parts`) and returns its path. */
export async function writeWindowsMockBuild(dir: string, options: WindowsBuildOptions): Promise<string> {
  const p = options.projectName ?? DEFAULT_PROJECT;
  const parts = join(dir, 'parts');
  mkdirSync(parts, { recursive: true });
  const [shipping, bootstrap] = await Promise.all([
    compileWindowsProgram(SHIPPING_SOURCE, join(parts, 'shipping.exe')),
    compileWindowsProgram(SHIPPING_SOURCE, join(parts, 'bootstrap.exe'), ['-DMOCK_BOOTSTRAP']),
    bundleMockAppForWindows(join(parts, 'mock-unreal.mjs')),
  ]);
  const binaries = `${p}/Binaries/Win64`;
  const ours: ZipEntrySpec[] = [
    { name: `${p}.exe`, data: readFileSync(bootstrap) },
    { name: `${binaries}/${p}-Win64-Shipping.exe`, data: readFileSync(shipping) },
    { name: `${binaries}/MockApp/node.exe`, data: readFileSync(options.nodeExe), method: 'store' },
    { name: `${binaries}/MockApp/mock-unreal.mjs`, data: readFileSync(join(parts, 'mock-unreal.mjs')) },
    { name: `${binaries}/MockApp/fixtures/testpattern.h264`, data: readFileSync(MOCK_FIXTURE), method: 'store' },
  ];
  const replaced = new Set(ours.map((e) => e.name));
  const entries = [...buildEntries('windows-shipping', { projectName: p }).filter((e) => !replaced.has(e.name)), ...ours];
  const zip = join(dir, options.fileName ?? 'windows-mock-build.zip');
  await writeZip(zip, entries);
  return zip;
}
