// A Wine prefix for the tests that run Windows programs for real (Debian's wine64, Wine 8; .ci/run
// installs it): set to report Windows 10, which Windows Node 22 needs to run there, and kept up
// by a persistent wineserver so that Wine's own services start once. Every Windows process is a
// Linux process under Wine (its pid in /proc, its environment passed on), which is how the tests
// see a Windows process tree.
import { existsSync, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
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
  /** Ends every process of the prefix (wineserver -k). */
  stop(): Promise<void>;
}

/**
 * Creates a prefix in dir (which must not exist yet) that reports Windows 10, with a persistent
 * wineserver; its first start takes about 7 s, winecfg about 5 s more.
 */
export async function createWinePrefix(dir: string): Promise<WinePrefix> {
  const wine = wineTool(['wine64', 'wine']);
  const wineserver = wineTool(['wineserver']);
  mkdirSync(dir);
  const env = { ...process.env, WINEPREFIX: dir, WINEDEBUG: '-all' };
  await execa(wineserver, ['-p'], { env, stdio: 'ignore' }); // it forks into the background
  // Without pipes: the services this first process starts would inherit and hold them open.
  const version = await execa(wine, ['winecfg', '-v', 'win10'], { env, stdio: 'ignore', reject: false, timeout: 150_000 });
  if (version.exitCode !== 0) throw new Error(`winecfg -v win10 failed in ${dir}: ${version.shortMessage}`);
  return {
    dir,
    env,
    wine,
    linuxPathOfC: (windows) => {
      const m = /^C:\\(.*)$/i.exec(windows);
      if (m === null) throw new RangeError(`not a path on drive C: ${windows}`);
      return join(dir, 'drive_c', ...m[1]!.split('\\').filter((part) => part !== ''));
    },
    async stop() {
      await execa(wineserver, ['-k'], { env, reject: false });
    },
  };
}
