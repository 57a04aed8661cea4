// Which packaged Unreal app an archive holds, read from its entry names alone (agent-notes §4):
// Windows — a root `<Name>.exe` (UE's bootstrap, never launched) and one real binary, Shipping
// before Development before the Blueprint-only engine binary; Linux — a root `<Name>.sh` and
// `<Project>/Binaries/Linux/<Target>-Linux-Shipping` marked executable; both need
// `<Project>/Content/Paks/*.pak`. Names match case-insensitively, as Windows would resolve them.
import { ArchiveRejection, quoteEntryName } from './archive-rejection';
import { type ArchiveEntry } from './entry-guards';

export type BuildPlatform = 'windows' | 'linux';

export interface UnrealLayout {
  platform: BuildPlatform;
  /** The Unreal project (its folder at the root), as the archive spells it. */
  projectName: string;
  /** The binary to launch, relative to the extracted root, '/'-separated. */
  executable: string;
  /** Arguments before the session flags: `<Project>`, or `../../../<Project>/<Project>.uproject` (Blueprint-only). */
  baseArgs: string[];
}

const EXPECTED =
  'expected <Name>.exe at the root and <Project>/Binaries/Win64/<Project>-Win64-Shipping.exe, ' +
  'or <Name>.sh at the root and <Project>/Binaries/Linux/<Project>-Linux-Shipping';

const WIN_SHIPPING = /-Win64-Shipping\.exe$/i;
/** A Development build's binary is plain `<Target>.exe`; Debug/DebugGame/Test carry a `-Win64-` suffix. */
const WIN_DEVELOPMENT = /^(?!.*-Win64-).+\.exe$/i;
const LINUX_SHIPPING = /-Linux-Shipping$/i;
const BLUEPRINT_BINARIES = ['UnrealGame-Win64-Shipping.exe', 'UnrealGame.exe'];

interface Binary {
  path: string;
  projectName: string;
  executable: boolean;
}

function segmentsOf(entry: ArchiveEntry): string[] {
  return entry.path.split('/');
}

function same(a: string | undefined, b: string): boolean {
  return a !== undefined && a.toLowerCase() === b.toLowerCase();
}

/** Files at `<Project>/Binaries/<platformDir>/<name>` whose name passes `test` (not under Engine/). */
function projectBinaries(files: readonly ArchiveEntry[], platformDir: string, test: RegExp): Binary[] {
  return files.flatMap((f) => {
    const [project, binaries, platform, name, ...rest] = segmentsOf(f);
    if (project === undefined || name === undefined || rest.length > 0 || same(project, 'Engine')) return [];
    if (!same(binaries, 'Binaries') || !same(platform, platformDir) || !test.test(name)) return [];
    return [{ path: f.path, projectName: project, executable: f.executable }];
  });
}

function listNames(binaries: readonly Binary[]): string {
  const names = binaries.map((b) => quoteEntryName(b.path));
  return names.length === 2 ? `${names[0]} and ${names[1]}` : names.join(', ');
}

function ambiguous(binaries: readonly Binary[], kind: string): ArchiveRejection {
  return new ArchiveRejection('NOT_AN_UNREAL_BUILD', `the archive holds ${binaries.length} ${kind} executables, ${listNames(binaries)}: it must hold exactly one`);
}

function notUnreal(why: string): ArchiveRejection {
  return new ArchiveRejection('NOT_AN_UNREAL_BUILD', why);
}

/** The one candidate of the first tier that has any, or a rejection naming them all. */
function pickOne(tiers: readonly { binaries: Binary[]; kind: string }[]): Binary | undefined {
  for (const { binaries, kind } of tiers) {
    if (binaries.length > 1) throw ambiguous(binaries, kind);
    if (binaries[0]) return binaries[0];
  }
  return undefined;
}

function blueprintBinary(files: readonly ArchiveEntry[]): Binary | undefined {
  for (const name of BLUEPRINT_BINARIES) {
    const found = files.find((f) => {
      const s = segmentsOf(f);
      return s.length === 4 && same(s[0], 'Engine') && same(s[1], 'Binaries') && same(s[2], 'Win64') && same(s[3], name);
    });
    if (found) return { path: found.path, projectName: '', executable: found.executable };
  }
  return undefined;
}

/** A root-level file with this extension (`.exe`, `.sh`). */
function hasRootFile(files: readonly ArchiveEntry[], extension: string): boolean {
  return files.some((f) => !f.path.includes('/') && f.path.toLowerCase().endsWith(extension));
}

/** The one folder every entry sits in, when the customer zipped the packaging folder itself. */
function wrappingFolder(entries: readonly ArchiveEntry[]): string | undefined {
  const tops = new Set(entries.map((e) => segmentsOf(e)[0]));
  const [top] = tops;
  if (tops.size !== 1 || top === undefined) return undefined;
  return entries.some((e) => !e.isDirectory && e.path.includes('/') && /^[^/]+\/[^/]+\.(exe|sh)$/i.test(e.path)) ? top : undefined;
}

/**
 * Finds the packaged Unreal app among the checked entries.
 * @throws ArchiveRejection NOT_AN_UNREAL_BUILD naming what is missing or ambiguous.
 */
export function findUnrealLayout(entries: readonly ArchiveEntry[]): UnrealLayout {
  const files = entries.filter((e) => !e.isDirectory);
  const windows = pickOne([
    { binaries: projectBinaries(files, 'Win64', WIN_SHIPPING), kind: 'Shipping' },
    { binaries: projectBinaries(files, 'Win64', WIN_DEVELOPMENT), kind: 'Development' },
  ]);
  const linux = pickOne([{ binaries: projectBinaries(files, 'Linux', LINUX_SHIPPING), kind: 'Linux Shipping' }]);
  if (windows && linux) {
    throw notUnreal(`the archive holds both a Windows build (${quoteEntryName(windows.path)}) and a Linux build (${quoteEntryName(linux.path)}): upload one`);
  }
  if (linux) return linuxLayout(files, linux);
  if (windows) return windowsLayout(files, windows, [windows.projectName]);
  const blueprint = blueprintBinary(files);
  if (blueprint) return blueprintLayout(files, blueprint);
  const folder = wrappingFolder(entries);
  if (folder !== undefined) {
    throw notUnreal(`the archive has no Unreal executable at its root: everything is inside the folder ${quoteEntryName(`${folder}/`)}; zip that folder's contents instead`);
  }
  throw notUnreal(`the archive has no Unreal executable: ${EXPECTED}`);
}

function windowsLayout(files: readonly ArchiveEntry[], binary: Binary, baseArgs: string[]): UnrealLayout {
  if (!hasRootFile(files, '.exe')) throw notUnreal(`the archive has ${quoteEntryName(binary.path)} but no <Name>.exe at the root`);
  requirePaks(files, binary.projectName);
  return { platform: 'windows', projectName: binary.projectName, executable: binary.path, baseArgs };
}

function linuxLayout(files: readonly ArchiveEntry[], binary: Binary): UnrealLayout {
  if (!hasRootFile(files, '.sh')) throw notUnreal(`the archive has ${quoteEntryName(binary.path)} but no <Name>.sh at the root`);
  if (!binary.executable) {
    throw notUnreal(`${quoteEntryName(binary.path)} is not marked executable in the archive: zip the build on Linux so that file permissions are kept`);
  }
  requirePaks(files, binary.projectName);
  return { platform: 'linux', projectName: binary.projectName, executable: binary.path, baseArgs: [binary.projectName] };
}

/** Blueprint-only: the engine's binary, launched with the one `<Project>/<Project>.uproject`. */
function blueprintLayout(files: readonly ArchiveEntry[], binary: Binary): UnrealLayout {
  const uprojects = files.filter((f) => {
    const [project, name, ...rest] = segmentsOf(f);
    return project !== undefined && rest.length === 0 && same(name, `${project}.uproject`);
  });
  if (uprojects.length > 1) {
    throw notUnreal(`the Blueprint-only build holds ${uprojects.length} projects, ${listNames(uprojects.map((u) => ({ path: u.path, projectName: '', executable: false })))}: it must hold exactly one`);
  }
  const [uproject] = uprojects;
  if (uproject === undefined) throw notUnreal(`the archive has ${quoteEntryName(binary.path)} but no <Project>/<Project>.uproject`);
  const projectName = segmentsOf(uproject)[0] ?? '';
  return windowsLayout(files, { ...binary, projectName }, [`../../../${uproject.path}`]);
}

function requirePaks(files: readonly ArchiveEntry[], projectName: string): void {
  const hasPak = files.some((f) => {
    const [project, content, paks, ...rest] = segmentsOf(f);
    return same(project, projectName) && same(content, 'Content') && same(paks, 'Paks') && rest.length > 0 && (rest.at(-1) ?? '').toLowerCase().endsWith('.pak');
  });
  if (!hasPak) throw notUnreal(`the archive has no ${projectName}/Content/Paks/*.pak: the packaged content is missing`);
}
