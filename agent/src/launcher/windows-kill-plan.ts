// The commands that end an app's process tree on Windows, as argv arrays (pure, so they are
// tested on Linux). execa's kill() ends only the one process there and forceKillAfterDelay is a
// no-op. The pid is the app-job launcher's (app-job.ts): the app is its child, and ending the
// launcher closes the app's job, whose kill-on-close ends every process in it.

export interface WindowsKillPlan {
  /**
   * Asks every process in the tree to close (`taskkill /T`: WM_CLOSE to each one's windows, found
   * by parent pid; agent-notes.md §4); a windowless app may ignore it.
   */
  graceful: string[];
  /**
   * Terminates the launcher, and with it, through its job, the whole tree: no `/T`, whose walk by
   * parent pid misses a child whose parent already exited, and which Wine 8's taskkill refuses.
   */
  forced: string[];
}

export function windowsKillPlan(pid: number): WindowsKillPlan {
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new RangeError(`not a process id: ${pid}`);
  return {
    graceful: ['taskkill', '/PID', String(pid), '/T'],
    forced: ['taskkill', '/PID', String(pid), '/F'],
  };
}

/**
 * Force-stops every process whose executable lies under buildDir, through the app-job launcher's
 * `--sweep` (a toolhelp snapshot and each process's image path: no PowerShell, which may be
 * missing or, under Wine, a stub that prints nothing): leftovers no job ended (an app whose
 * launcher died before it was in its job; one started without the launcher) and that
 * `taskkill /T` cannot reach from a dead root. Only safe when no other session runs from the
 * same build. appJob: the launcher's path (APP_JOB_EXE).
 */
export function windowsSweepPlan(appJob: string, buildDir: string): string[] {
  return [appJob, '--sweep', absoluteWindowsFolder(buildDir)];
}

/** Lists, without stopping them, the processes whose executable lies under folder (`app-job.exe --list`). */
export function windowsListPlan(appJob: string, folder: string): string[] {
  return [appJob, '--list', absoluteWindowsFolder(folder)];
}

function absoluteWindowsFolder(folder: string): string {
  if (!/^[A-Za-z]:\\|^\\\\/.test(folder) || /[\u0000-\u001f"]/.test(folder)) {
    throw new RangeError(`not an absolute Windows path: ${JSON.stringify(folder)}`);
  }
  return folder;
}

/**
 * The pids a scan printed (`stopped <pid>` lines, then `swept N of M processes`; `--list`:
 * `running <pid>`, then `found N of M processes`).
 * @throws Error when its summary line is missing: a tool that printed nothing did not look, and
 * "nothing found" would hide what still runs.
 */
function parseScan(printed: string, option: '--sweep' | '--list', item: string, summaryVerb: string): number[] {
  const lines = printed.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '');
  const summary = new RegExp(`^${summaryVerb} (\\d+) of (\\d+) processes$`).exec(lines.at(-1) ?? '');
  if (summary === null) throw new Error(`app-job.exe ${option} did not answer (no "${summaryVerb} N of M processes" line; it printed ${JSON.stringify(printed.slice(0, 200))})`);
  const pids = lines.slice(0, -1).map((line) => new RegExp(`^${item} (\\d+)$`).exec(line)?.[1]).filter((pid) => pid !== undefined).map(Number);
  if (pids.length !== Number(summary[1])) throw new Error(`app-job.exe ${option} printed ${pids.length} ${item} processes but counted ${summary[1]}`);
  return pids;
}

/** The pids `app-job.exe --sweep` stopped; throws when it did not answer (parseScan). */
export const parseSweepOutput = (printed: string): number[] => parseScan(printed, '--sweep', 'stopped', 'swept');

/** The pids `app-job.exe --list` found; throws when it did not answer (parseScan). */
export const parseListOutput = (printed: string): number[] => parseScan(printed, '--list', 'running', 'found');
