// Windows: every app runs under app-job.exe (agent/native/app-job/app-job.c), which puts it in a
// job object of its own with kill-on-job-close and no breakaway, so the OS ends the whole app tree
// when the launcher dies, and the launcher dies with the agent (libuv's job). This file is the
// agent's side of that contract: where the launcher is, how the app's command line travels
// through it, and how its own failures are told from the app's exit.
import { fileURLToPath } from 'node:url';
import { windowsProgramArg } from './unreal-command-line';

/** The launcher's source; npm run build:app-job compiles it with mingw-w64. */
export const APP_JOB_SOURCE = fileURLToPath(new URL('../../native/app-job/app-job.c', import.meta.url));
/** Where the agent finds the built launcher: next to its source (not committed; packaged with the Windows agent). */
export const APP_JOB_EXE = fileURLToPath(new URL('../../native/app-job/app-job.exe', import.meta.url));

/**
 * The launcher's own exit codes (its APP_JOB_EXIT_* defines; a test compares the two). They fit
 * in a byte, as Wine passes only the low 8 bits on; each comes with one stderr line starting
 * APP_JOB_STDERR_PREFIX, which tells it from an app that exits with the same number.
 */
export const APP_JOB_EXIT_CODES = {
  /** No app command line after the launcher's own name. */
  usage: 240,
  /** CreateJobObjectW failed. */
  createJob: 241,
  /** Kill-on-job-close could not be set on the job. */
  limitJob: 242,
  /** CreateProcessW failed (no such program, access denied, bad format…). */
  launch: 243,
  /** The app could not be put in the job (it is terminated). */
  assign: 244,
  /** The app's main thread could not be resumed (the job is terminated). */
  resume: 245,
  /** Waiting for the app or reading its exit code failed (the job is terminated). */
  wait: 246,
  /** --account: the account could not be logged on, or given its own desktop (the app never started). */
  logon: 247,
  /** --prepare-account / --remove-account failed. */
  account: 248,
  /** --sweep could not list the processes. */
  sweep: 249,
  /** --owners could not read an owner or a folder (the listing is incomplete, so it is a failure). */
  owners: 250,
} as const;

/** app-job.exe's option that runs the app as a local account (windows-app-accounts.ts). */
export const APP_JOB_ACCOUNT_OPTION = '--account';

export const APP_JOB_STDERR_PREFIX = 'app-job: ';

/** What Node's spawn gets: the program, its arguments, and how the Windows command line is made of them. */
export interface WindowsSpawn {
  file: string;
  args: string[];
  /** The command line's first token; undefined: the file, quoted by libuv as needed. */
  argv0: string | undefined;
  /** True: the arguments are joined as written (already quoted, see toWindowsUnrealArgs); false: libuv quotes each. */
  windowsVerbatimArguments: boolean;
}

/**
 * The spawn that runs `app` under the launcher. The launcher passes everything after its own
 * name to CreateProcessW unchanged, so the app's command line is the one Node would have made
 * for it: verbatim, its quoted program path and its arguments as written; otherwise each token
 * quoted by libuv's rules, which the app's C runtime reads back into the same arguments.
 * CreateProcessW takes the program from that first token (no application name), searching
 * PATH for a bare name as spawn would. With `account`, the launcher runs the app as that local
 * account (`--account <name>` before the app's command line).
 * @throws LaunchError INVALID_SETTINGS for a path holding a double quote.
 */
export function appJobSpawn(launcher: string, app: WindowsSpawn, account?: string): WindowsSpawn {
  // The name is one token either way: windows-app-accounts.ts makes it of letters, digits and '-'.
  const asAccount = account === undefined ? [] : [APP_JOB_ACCOUNT_OPTION, account];
  if (app.windowsVerbatimArguments) {
    return {
      file: launcher,
      args: [...asAccount, app.argv0 ?? windowsProgramArg(app.file), ...app.args],
      argv0: windowsProgramArg(launcher),
      windowsVerbatimArguments: true,
    };
  }
  return { file: launcher, args: [...asAccount, app.argv0 ?? app.file, ...app.args], argv0: undefined, windowsVerbatimArguments: false };
}

/**
 * The launcher's own failure, from an exit: its stderr line (`app-job: cannot start the app: …`)
 * when the code is one of APP_JOB_EXIT_CODES and the last stderr line is the launcher's; undefined
 * for the app's own exit.
 */
export function appJobFailure(code: number | null, lastLines: readonly { stream: 'stdout' | 'stderr'; text: string }[]): string | undefined {
  if (code === null || !(Object.values(APP_JOB_EXIT_CODES) as number[]).includes(code)) return undefined;
  const last = lastLines.findLast((l) => l.stream === 'stderr');
  return last?.text.startsWith(APP_JOB_STDERR_PREFIX) ? last.text : undefined;
}
