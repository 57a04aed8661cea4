// The one way the agent ends an app's processes, with a POSIX and a Windows implementation:
// AppProcess (a session's stop, the agent's own exit), the session manager (what a finished
// session left under its build folder) and the survivor sweep's Windows rule go through it; the
// survivor sweep's POSIX rule signals the processes it has verified through signalProcess here.
// The Windows commands come from windows-kill-plan.ts and run through an injected executor, so
// their use is tested on Linux; the POSIX implementation signals for real.
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { execa } from 'execa';
import { listProcesses, PROC_ROOT, readProcessExecutable } from './process-identity';
import { APP_JOB_EXE } from './app-job';
import { parseSweepOutput, windowsKillPlan, windowsSweepPlan } from './windows-kill-plan';

/** graceful: ask the tree to close (SIGTERM to the group; `taskkill /T`). forced: end it (SIGKILL; `taskkill /F` on the launcher, whose job ends the tree). */
export type TreeEnding = 'graceful' | 'forced';

/** Runs a command given as argv and resolves with its standard output; a failure rejects (a CommandError when it ran and exited non-zero). */
export type CommandRunner = (argv: readonly string[]) => Promise<string>;

/** A command that ran and failed: its exit code (undefined when it could not start or timed out). */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number | undefined,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}

/** taskkill's exit code when no process has the pid: the tree is already gone. */
export const TASKKILL_NOT_FOUND_EXIT_CODE = 128;

export interface ProcessControl {
  readonly platform: NodeJS.Platform;
  /**
   * Whether an app is spawned detached. POSIX: yes, in a process group of its own, so its tree is
   * signalled as one. Windows: no, so libuv puts it in the agent's kill-on-close job and the OS
   * ends it with the agent however the agent dies.
   */
  readonly spawnDetached: boolean;
  /** Ends the tree rooted at rootPid (see TreeEnding); resolves once asked, rejects when the request failed. */
  endTree(rootPid: number, how: TreeEnding): Promise<void>;
  /** endTree(rootPid, 'forced'), synchronously: for the process 'exit' hook, where nothing asynchronous runs. */
  endTreeNow(rootPid: number): void;
  /**
   * After the root exited: ends what its tree still has running where the platform can find it
   * (POSIX: the rest of its process group; Windows: nothing to do, the app-job launcher's exit
   * closed the app's job object and the OS ended its members).
   */
  endRemains(rootPid: number): void;
  /**
   * Force-stops every process whose executable lies under folder (an absolute path): what an
   * app left behind outside its tree (a CrashReportClient, a helper that detached). Resolves with
   * the pids stopped. Only for a folder no running session uses.
   */
  sweepFolder(folder: string): Promise<number[]>;
}

/**
 * Signals a process or (negative) a process group: 'sent', 'gone' (no such process) or 'denied'
 * (EPERM: another user's). Any other failure throws.
 */
export function signalProcess(target: number, signal: NodeJS.Signals): 'sent' | 'gone' | 'denied' {
  try {
    process.kill(target, signal);
    return 'sent';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return 'gone';
    if (code === 'EPERM') return 'denied';
    throw err;
  }
}

/** Signals an app's process group; one already gone is done, one we may not signal is an error. */
function signalGroup(rootPid: number, signal: NodeJS.Signals): void {
  if (signalProcess(-rootPid, signal) === 'denied') throw new Error(`not permitted to signal process group ${rootPid} (${signal})`);
}

/** Runs argv with execa (no shell, no window, 15 s at most) and resolves with its stdout. */
export async function runWithExeca(argv: readonly string[]): Promise<string> {
  const [file, ...args] = argv;
  if (file === undefined) throw new RangeError('an empty command');
  const result = await execa(file, args, { reject: false, windowsHide: true, timeout: 15_000, stdin: 'ignore' });
  if (result.failed) throw new CommandError(`${argv.join(' ')} failed: ${result.shortMessage}`, result.exitCode);
  return result.stdout;
}

/** POSIX: process groups and signals; the folder sweep reads Linux's /proc (elsewhere it finds nothing). */
export function posixProcessControl(platform: NodeJS.Platform = process.platform, procRoot = PROC_ROOT): ProcessControl {
  return {
    platform,
    spawnDetached: true,
    async endTree(rootPid, how) {
      signalGroup(rootPid, how === 'graceful' ? 'SIGTERM' : 'SIGKILL');
      return Promise.resolve();
    },
    endTreeNow(rootPid) {
      signalGroup(rootPid, 'SIGKILL');
    },
    endRemains(rootPid) {
      // The group id cannot be reused while any member (even a zombie) remains.
      signalGroup(rootPid, 'SIGKILL');
    },
    sweepFolder(folder) {
      let prefix: string;
      try {
        // /proc/<pid>/exe names the resolved file, so the folder is compared resolved too.
        prefix = realpathSync(folder) + sep;
      } catch (err) {
        // A folder already deleted: what still runs from it shows its old path.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        prefix = resolve(folder) + sep;
      }
      let found;
      try {
        found = listProcesses(procRoot);
      } catch (err) {
        // No /proc (not Linux): nothing to find.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Promise.resolve([]);
        throw err;
      }
      const stopped: number[] = [];
      for (const { pid } of found) {
        if (pid === process.pid) continue;
        const exe = readProcessExecutable(pid, procRoot);
        if (exe === undefined || !exe.startsWith(prefix)) continue;
        // One process we may not signal (another user's) does not spare the others.
        if (signalProcess(pid, 'SIGKILL') === 'sent') stopped.push(pid);
      }
      return Promise.resolve(stopped);
    },
  };
}

/**
 * Windows: taskkill for the tree, the app-job launcher's `--sweep` for the folder sweep, each run
 * by `run` (default execa). appJob: the launcher's path (default APP_JOB_EXE, beside the agent's code).
 */
export function windowsProcessControl(run: CommandRunner = runWithExeca, appJob: string = APP_JOB_EXE): ProcessControl {
  return {
    platform: 'win32',
    spawnDetached: false,
    async endTree(rootPid, how) {
      try {
        await run(windowsKillPlan(rootPid)[how]);
      } catch (err) {
        // The tree ended between the decision and the command (an app exiting as it is stopped): done.
        if (err instanceof CommandError && err.exitCode === TASKKILL_NOT_FOUND_EXIT_CODE) return;
        throw err;
      }
    },
    endTreeNow(rootPid) {
      const [file, ...args] = windowsKillPlan(rootPid).forced;
      spawnSync(file!, args, { windowsHide: true, timeout: 5_000, stdio: 'ignore' });
    },
    endRemains() {
      // The job object did it (see the interface).
    },
    async sweepFolder(folder) {
      return parseSweepOutput(await run(windowsSweepPlan(appJob, folder)));
    },
  };
}

/** The implementation for a platform: Windows rules on win32, POSIX rules everywhere else. */
export function processControlFor(platform: NodeJS.Platform = process.platform, run: CommandRunner = runWithExeca): ProcessControl {
  return platform === 'win32' ? windowsProcessControl(run) : posixProcessControl(platform);
}
