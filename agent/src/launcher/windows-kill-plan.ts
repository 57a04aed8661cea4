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

/** The last line `app-job.exe --sweep` prints, always: the proof that it ran. */
const SWEEP_SUMMARY = /^swept (\d+) of (\d+) processes$/;

/**
 * Force-stops every process whose executable lies under buildDir, through the app-job launcher's
 * `--sweep` (a toolhelp snapshot and each process's image path: no PowerShell, which may be
 * missing or, under Wine, a stub that prints nothing): leftovers no job ended (an app whose
 * launcher died before it was in its job; one started without the launcher) and that
 * `taskkill /T` cannot reach from a dead root. Only safe when no other session runs from the
 * same build. appJob: the launcher's path (APP_JOB_EXE).
 */
export function windowsSweepPlan(appJob: string, buildDir: string): string[] {
  if (!/^[A-Za-z]:\\|^\\\\/.test(buildDir) || /[\u0000-\u001f"]/.test(buildDir)) {
    throw new RangeError(`not an absolute Windows path: ${JSON.stringify(buildDir)}`);
  }
  return [appJob, '--sweep', buildDir];
}

/**
 * The pids a sweep stopped, from what it printed.
 * @throws Error when its summary line is missing: a tool that printed nothing did not sweep, and
 * "nothing found" would hide what still runs.
 */
export function parseSweepOutput(printed: string): number[] {
  const lines = printed.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '');
  const summary = SWEEP_SUMMARY.exec(lines.at(-1) ?? '');
  if (summary === null) throw new Error(`app-job.exe --sweep did not answer (no "swept N of M processes" line; it printed ${JSON.stringify(printed.slice(0, 200))})`);
  const stopped = lines.slice(0, -1).map((line) => /^stopped (\d+)$/.exec(line)?.[1]).filter((pid) => pid !== undefined).map(Number);
  if (stopped.length !== Number(summary[1])) throw new Error(`app-job.exe --sweep printed ${stopped.length} stopped processes but counted ${summary[1]}`);
  return stopped;
}
