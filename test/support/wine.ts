// The Wine prefix for the tests under test/ that run Windows programs for real (Debian's wine64,
// Wine 8; .ci/run installs it): one per test run, shared by every file that asks for it, set to
// report Windows 10 (which Windows Node needs) and kept up by a persistent wineserver so that
// Wine's own services start once. Every Windows process is a Linux process under Wine (its pid in
// /proc, its environment passed on), which is how the tests see a Windows process tree. A file ends
// the processes it started; the run's global teardown (build-dist.mjs) ends the prefix.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

/** Debian puts wine64 and wineserver in /usr/lib/wine (the `wine` package adds the /usr/bin wrappers). */
export function wineTool(names: readonly string[]): string {
  const folders = ['/usr/lib/wine', ...(process.env.PATH ?? '').split(delimiter)];
  for (const folder of folders) for (const name of names) if (existsSync(join(folder, name))) return join(folder, name);
  throw new Error(`${names.join(' or ')} not found: install Wine 8 (Debian: apt-get install --no-install-recommends wine64; .ci/run does)`);
}

export interface WinePrefix {
  /** The prefix folder (drive C: is `<dir>/drive_c`). */
  dir: string;
  /** The environment every Wine process of this prefix runs with (the test's own, plus WINEPREFIX and WINEDEBUG). */
  env: Record<string, string | undefined>;
  /** wine64: runs a Windows program (`[wine, program.exe, ...args]`). */
  wine: string;
  /** The Linux path of a path on drive C: (`C:\ProgramData\x` → `<dir>/drive_c/ProgramData/x`). */
  linuxPathOfC(windows: string): string;
}

/** The variable the run's global setup (build-dist.mjs) sets to its process id, which every test file inherits. */
export const TEST_RUN_ENV = 'PIXELFLEET_TEST_RUN';

/** The run's prefix folder: one per vitest run (without the global setup's variable, per parent process). */
export function runPrefixDir(runPid: string = process.env[TEST_RUN_ENV] ?? String(process.ppid)): string {
  return join(tmpdir(), `pixelfleet-wine-${runPid}`);
}

/** How long a file waits for another to finish making the run's prefix (first start ~7 s, winecfg ~5 s). */
const PREFIX_READY_MS = 180_000;

/**
 * The run's prefix, made by the first file that asks (a lock folder decides which) and waited for
 * by the others: reports Windows 10, with a persistent wineserver.
 */
export async function runWinePrefix(): Promise<WinePrefix> {
  const dir = runPrefixDir();
  const ready = `${dir}.ready`;
  const env = { ...process.env, WINEPREFIX: dir, WINEDEBUG: '-all' };
  const wine = wineTool(['wine64', 'wine']);
  const prefix: WinePrefix = {
    dir,
    env,
    wine,
    linuxPathOfC: (windows) => {
      const m = /^C:\\(.*)$/i.exec(windows);
      if (m === null) throw new RangeError(`not a path on drive C: ${windows}`);
      return join(dir, 'drive_c', ...m[1]!.split('\\').filter((part) => part !== ''));
    },
  };
  let maker = true;
  try {
    mkdirSync(`${dir}.lock`);
  } catch {
    maker = false;
  }
  if (!maker) {
    // No event crosses processes here: the maker's ready file is looked for.
    for (const deadline = Date.now() + PREFIX_READY_MS; !existsSync(ready); await sleep(200)) {
      if (Date.now() > deadline) throw new Error(`the run's Wine prefix ${dir} was not ready within ${PREFIX_READY_MS / 1000} s`);
    }
    return prefix;
  }
  mkdirSync(dir);
  await execa(wineTool(['wineserver']), ['-p'], { env, stdio: 'ignore' }); // it forks into the background
  // Without pipes: the services this first process starts would inherit and hold them open.
  const version = await execa(wine, ['winecfg', '-v', 'win10'], { env, stdio: 'ignore', reject: false, timeout: 150_000 });
  if (version.exitCode !== 0) throw new Error(`winecfg -v win10 failed in ${dir}: ${version.shortMessage}`);
  writeFileSync(ready, '');
  return prefix;
}

/** The run's global teardown: ends every process of its prefix and removes it (nothing when no file made one). */
export async function removeRunPrefix(runPid: string): Promise<void> {
  const dir = runPrefixDir(runPid);
  if (!existsSync(`${dir}.lock`)) return;
  if (existsSync(dir)) await execa(wineTool(['wineserver']), ['-k'], { env: { ...process.env, WINEPREFIX: dir }, reject: false });
  for (const path of [dir, `${dir}.lock`, `${dir}.ready`]) rmSync(path, { recursive: true, force: true });
}
