// Which binary of a packaged Windows build to start, and its base argument (agent-notes.md §4):
// never the root `<Name>.exe` (BootstrapPackagedGame may block on a MessageBox, and killing it
// orphans the game), but the real binary, as the bootstrap itself would run it.
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { LaunchError } from './launch-error';

export interface ResolvedExecutable {
  /** Absolute path of the binary. */
  exe: string;
  /** Arguments before the session flags: `<Project>`, or `../../../<Project>/<Project>.uproject`. */
  baseArgs: string[];
  /** The Unreal project (folder) name. */
  projectName: string;
}

const SHIPPING = /-Win64-Shipping\.exe$/i;
/** A Development build's binary is plain `<Target>.exe`; Debug/DebugGame/Test carry a suffix. */
const DEVELOPMENT = /^(?!.*-Win64-)[^\\/]+\.exe$/i;
const BLUEPRINT_SHIPPING = 'UnrealGame-Win64-Shipping.exe';
const BLUEPRINT_DEVELOPMENT = 'UnrealGame.exe';

/** Entries of dir, or none when it does not exist or is not a directory. */
async function entries(dir: string) {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
}

/** The real path of `dir/<segments…>` matched case-insensitively (Windows names), if it is a directory. */
async function findDir(dir: string, ...segments: string[]): Promise<string | undefined> {
  let current = dir;
  for (const segment of segments) {
    const match = (await entries(current)).find((e) => e.isDirectory() && e.name.toLowerCase() === segment.toLowerCase());
    if (!match) return undefined;
    current = join(current, match.name);
  }
  return current;
}

async function filesIn(dir: string | undefined, test: (name: string) => boolean): Promise<string[]> {
  if (dir === undefined) return [];
  // Only regular files: a symlink (Dirent reports it as such) never counts as the app.
  return (await entries(dir)).filter((e) => e.isFile() && test(e.name)).map((e) => join(dir, e.name));
}

/**
 * Finds the app binary under buildDir (the extracted build's root).
 * Code project: exactly one `<Project>/Binaries/Win64/<Target>-Win64-Shipping.exe` (or, with
 * no Shipping binary anywhere, one Development `<Target>.exe`), base argument `<Project>`.
 * Blueprint-only: `Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe` (or `UnrealGame.exe`)
 * with exactly one `<Project>/<Project>.uproject`, base argument
 * `../../../<Project>/<Project>.uproject` (relative to the binary's folder, the working directory).
 * @throws LaunchError EXECUTABLE_NOT_FOUND, or AMBIGUOUS_EXECUTABLE naming the candidates.
 */
export async function resolveExecutable(buildDir: string): Promise<ResolvedExecutable> {
  const projects = (await entries(buildDir)).filter((e) => e.isDirectory() && e.name.toLowerCase() !== 'engine').map((e) => e.name).sort();

  for (const pattern of [SHIPPING, DEVELOPMENT]) {
    const found: { exe: string; projectName: string }[] = [];
    for (const projectName of projects) {
      for (const exe of await filesIn(await findDir(buildDir, projectName, 'Binaries', 'Win64'), (n) => pattern.test(n))) found.push({ exe, projectName });
    }
    if (found.length > 1) {
      throw new LaunchError('AMBIGUOUS_EXECUTABLE', `the build holds ${found.length} app binaries: ${found.map((f) => relative(buildDir, f.exe).replaceAll('\\', '/')).join(', ')}`);
    }
    if (found[0]) return { exe: found[0].exe, baseArgs: [found[0].projectName], projectName: found[0].projectName };
  }

  const engineBin = await findDir(buildDir, 'Engine', 'Binaries', 'Win64');
  const [blueprintExe] = [
    ...(await filesIn(engineBin, (n) => n.toLowerCase() === BLUEPRINT_SHIPPING.toLowerCase())),
    ...(await filesIn(engineBin, (n) => n.toLowerCase() === BLUEPRINT_DEVELOPMENT.toLowerCase())),
  ];
  if (blueprintExe === undefined) {
    throw new LaunchError('EXECUTABLE_NOT_FOUND', 'the build holds no <Project>/Binaries/Win64/<Target>-Win64-Shipping.exe and no Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe');
  }
  const uprojects: { projectName: string; file: string }[] = [];
  for (const projectName of projects) {
    for (const file of await filesIn(join(buildDir, projectName), (n) => n.toLowerCase() === `${projectName.toLowerCase()}.uproject`)) {
      uprojects.push({ projectName, file: file.slice(join(buildDir, projectName).length + 1) });
    }
  }
  if (uprojects.length > 1) {
    throw new LaunchError('AMBIGUOUS_EXECUTABLE', `the Blueprint-only build holds ${uprojects.length} projects: ${uprojects.map((u) => `${u.projectName}/${u.file}`).join(', ')}`);
  }
  const [uproject] = uprojects;
  if (uproject === undefined) {
    throw new LaunchError('EXECUTABLE_NOT_FOUND', 'the build holds Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe but no <Project>/<Project>.uproject');
  }
  return { exe: blueprintExe, baseArgs: [`../../../${uproject.projectName}/${uproject.file}`], projectName: uproject.projectName };
}
