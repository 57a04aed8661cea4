// Launches a session's app for the session manager: picks the binary (or the configured
// stand-in), builds its command line, prepares the session folder and starts the supervised
// process. Everything up to the spawn is a pure plan, so the Windows form is tested on Linux.
import { mkdir, stat } from 'node:fs/promises';
import { join, posix, win32 } from 'node:path';
import type { Logger } from 'pino';
import type { StartSessionCommand } from '@pixelfleet/proto';
import { AppProcess, type AppRecordTarget } from './app-process';
import type { AppAccount } from './app-accounts';
import { processControlFor, type ProcessControl } from './process-control';
import { APP_JOB_EXE } from './app-job';
import type { Clock } from '@pixelfleet/common';
import { LaunchError } from './launch-error';
import { buildUnrealArgs, loopbackSignallingUrl, toWindowsUnrealArgs, windowsProgramArg } from './unreal-command-line';

export type LaunchSettings = Pick<StartSessionCommand, 'codec' | 'minBitrateBps' | 'maxBitrateBps' | 'resX' | 'resY' | 'fps' | 'launchArgs'>;

/** File in the session folder that receives the app's stdout/stderr. */
export const APP_OUTPUT_LOG = 'app-output.log';

export interface LaunchPlanInput {
  /** launcher.command from the config: replaces the binary and gets the same arguments. Required off Windows. */
  command: readonly string[] | undefined;
  /** The extracted build from the cache (its folder and the manifest its scan recorded); undefined only with a command (a stand-in that needs no build). */
  build: LaunchBuild | undefined;
  /** Used when there is no build; otherwise the build's own project name wins. */
  projectName: string;
  settings: LaunchSettings;
  /** Absolute path of this session's folder (logs go here). */
  sessionDir: string;
  /** Port of the session's loopback signalling server (see listenOnLoopback). */
  signallingPort: number;
  /** The session's signalling secret, the path of the URL the app dials (loopbackSignallingUrl). */
  signallingSecret: string;
  streamerId: string;
  /** Default: process.platform. */
  platform?: NodeJS.Platform;
  /** Windows: the app-job launcher every app runs under (default APP_JOB_EXE, beside the agent's code). */
  jobLauncher?: string;
}

export interface LaunchPlan {
  /** Program and fixed arguments (`[exe]` or launcher.command). */
  command: string[];
  /** The session's arguments, quoted for Unreal when running a real binary on Windows. */
  args: string[];
  /** The binary's folder for a real build (a Blueprint-only base argument is relative to it); undefined: the agent's own. */
  cwd: string | undefined;
  argv0: string | undefined;
  windowsVerbatimArguments: boolean;
  projectName: string;
  /** `-ABSLOG`: `<sessionDir>/<Project>.log`. */
  logPath: string;
  /** The app's captured stdout/stderr: `<sessionDir>/app-output.log`. */
  outputLogPath: string;
  /** The resolved binary, when there is a build. */
  executable: ResolvedExecutable | undefined;
  /** Windows: the app-job launcher the app runs under (app-job.ts); undefined elsewhere. */
  jobLauncher: string | undefined;
}

/** What the launcher needs of a cached build: its folder, and what the archive's scan found in it (build-archive's manifest). */
export interface LaunchBuild {
  dir: string;
  manifest: { platform: 'windows' | 'linux'; projectName: string; executable: string; baseArgs: readonly string[] };
}

/** The binary a build is launched with. */
export interface ResolvedExecutable {
  /** Absolute path of the binary. */
  exe: string;
  /** Arguments before the session flags: `<Project>`, or `../../../<Project>/<Project>.uproject`. */
  baseArgs: string[];
  /** The Unreal project (folder) name. */
  projectName: string;
  platform: 'windows' | 'linux';
}

/**
 * The build's binary, as its manifest names it (the one layout rule: build-archive's, applied when
 * the archive was scanned). It must still be a regular file in the extracted folder.
 * @throws LaunchError EXECUTABLE_NOT_FOUND
 */
async function executableOf(build: LaunchBuild): Promise<ResolvedExecutable> {
  const exe = join(build.dir, ...build.manifest.executable.split('/'));
  const file = await stat(exe).catch(() => undefined);
  if (file === undefined || !file.isFile()) throw new LaunchError('EXECUTABLE_NOT_FOUND', `the build's binary ${build.manifest.executable} is missing from its folder`);
  return { exe, baseArgs: [...build.manifest.baseArgs], projectName: build.manifest.projectName, platform: build.manifest.platform };
}

/**
 * The app-job launcher, which must be a file: on Windows no app runs outside a job of its own.
 * @throws LaunchError NO_APP_JOB
 */
async function jobLauncherAt(path: string): Promise<string> {
  const file = await stat(path).catch(() => undefined);
  if (file === undefined || !file.isFile()) throw new LaunchError('NO_APP_JOB', `the app-job launcher is missing (${path}): extract the whole agent zip into the install folder (from sources: npm run build:app-job)`);
  return path;
}

/**
 * Decides what to run. With a build, its binary must be there even when a command replaces it, so
 * a stand-in exercises the same checks. A Windows build runs only on Windows and a Linux build only
 * on Linux, unless launcher.command stands in for the binary. On Windows every app, a stand-in
 * too, runs under the app-job launcher, which must be there.
 * @throws LaunchError
 */
export async function planLaunch(input: LaunchPlanInput): Promise<LaunchPlan> {
  const platform = input.platform ?? process.platform;
  const executable = input.build === undefined ? undefined : await executableOf(input.build);
  if (input.command === undefined) {
    if (executable === undefined) throw new LaunchError('NO_LAUNCH_COMMAND', 'no build and no launcher.command: nothing to run');
    const runsHere = executable.platform === 'windows' ? platform === 'win32' : platform === 'linux';
    if (!runsHere) {
      throw new LaunchError('NO_LAUNCH_COMMAND', `a ${executable.platform === 'windows' ? 'Windows' : 'Linux'} build cannot run on ${platform}; set launcher.command to run a stand-in`);
    }
  }
  if (input.command?.length === 0) throw new LaunchError('NO_LAUNCH_COMMAND', 'launcher.command is empty');
  const jobLauncher = platform === 'win32' ? await jobLauncherAt(input.jobLauncher ?? APP_JOB_EXE) : undefined;
  const projectName = executable?.projectName ?? input.projectName;
  const path = platform === 'win32' ? win32 : posix;
  const logPath = path.join(input.sessionDir, `${projectName}.log`);
  const args = buildUnrealArgs({
    projectName,
    ...(executable ? { baseArgs: executable.baseArgs } : {}),
    signallingUrl: loopbackSignallingUrl(input.signallingPort, input.signallingSecret),
    streamerId: input.streamerId,
    ...input.settings,
    logPath,
  });
  const outputLogPath = path.join(input.sessionDir, APP_OUTPUT_LOG);
  if (input.command !== undefined) {
    return { command: [...input.command], args, cwd: undefined, argv0: undefined, windowsVerbatimArguments: false, projectName, logPath, outputLogPath, executable, jobLauncher };
  }
  const exe = executable!.exe;
  if (executable!.platform === 'linux') {
    return { command: [exe], args, cwd: path.dirname(exe), argv0: undefined, windowsVerbatimArguments: false, projectName, logPath, outputLogPath, executable, jobLauncher };
  }
  return {
    command: [exe],
    args: toWindowsUnrealArgs(args),
    cwd: path.dirname(exe),
    argv0: windowsProgramArg(exe),
    windowsVerbatimArguments: true,
    projectName,
    logPath,
    outputLogPath,
    executable,
    jobLauncher,
  };
}

export interface LaunchSessionInput extends LaunchPlanInput {
  sessionId: string;
  /** The app's complete environment (see appEnvironment); nothing else is inherited. */
  env: Readonly<Record<string, string | undefined>>;
  /** The uid and gid the app runs under (app-accounts.ts; its session folder is then its HOME); none: the agent's. */
  account?: AppAccount;
  log: Logger;
  clock?: Clock;
  /** Records the app in the agent's data dir before it is spawned (see app-records.ts); the build folder is filled in here. */
  record?: Omit<AppRecordTarget, 'buildDir'>;
  /** How the app's tree is spawned and ended; default processControlFor(platform). Its platform is the one the plan follows. */
  control?: ProcessControl;
}

export interface LaunchedSession {
  process: AppProcess;
  /** The engine log path passed as -ABSLOG (a Shipping build may never write it). */
  logPath: string;
  /** The captured stdout/stderr file. */
  outputLogPath: string;
  plan: LaunchPlan;
}

/**
 * Creates the session folder and starts the app. The process may still fail to spawn; that
 * arrives as its `exited` event with spawnError.
 * @throws LaunchError when nothing can be launched.
 */
export async function launchSession(input: LaunchSessionInput): Promise<LaunchedSession> {
  const control = input.control ?? processControlFor(input.platform ?? process.platform);
  const plan = await planLaunch({ ...input, platform: control.platform });
  await mkdir(input.sessionDir, { recursive: true });
  const log = input.log.child({ sessionId: input.sessionId });
  const app = AppProcess.start({
    command: plan.command,
    args: plan.args,
    ...(plan.cwd === undefined ? {} : { cwd: plan.cwd }),
    env: input.account ? { ...input.env, ...(await accountHome(input.account, input.sessionDir)) } : input.env,
    ...(input.account ? { account: input.account } : {}),
    logPath: plan.outputLogPath,
    log,
    ...(input.clock ? { clock: input.clock } : {}),
    control,
    ...(plan.argv0 === undefined ? {} : { argv0: plan.argv0 }),
    windowsVerbatimArguments: plan.windowsVerbatimArguments,
    redact: [input.signallingSecret],
    ...(plan.jobLauncher === undefined ? {} : { jobLauncher: plan.jobLauncher }),
    ...(input.record ? { record: { ...input.record, buildDir: input.build?.dir } } : {}),
  });
  return { process: app, logPath: plan.logPath, outputLogPath: plan.outputLogPath, plan };
}

/** Under the session folder, the folders a Windows app under its own account takes as its profile, app data and temp. */
export const WINDOWS_APP_HOME_FOLDERS: Readonly<Record<string, readonly string[]>> = {
  USERPROFILE: ['home'],
  APPDATA: ['home', 'AppData', 'Roaming'],
  LOCALAPPDATA: ['home', 'AppData', 'Local'],
  TEMP: ['temp'],
  TMP: ['temp'],
};

/**
 * Where an app under an account of its own keeps its files: the agent's home, profile and temp
 * folders are out of its reach (and shared with nobody), so they point into its session folder,
 * made here. POSIX: HOME is the session folder. Windows: the variables of WINDOWS_APP_HOME_FOLDERS
 * (an S4U logon loads no profile of its own).
 */
async function accountHome(account: AppAccount, sessionDir: string): Promise<Record<string, string>> {
  if (account.kind === 'posix') return { HOME: sessionDir };
  const env: Record<string, string> = {};
  for (const [name, segments] of Object.entries(WINDOWS_APP_HOME_FOLDERS)) {
    const folder = join(sessionDir, ...segments);
    await mkdir(folder, { recursive: true });
    env[name] = folder;
  }
  return env;
}

/**
 * The app's environment from the agent's: everything except PIXELFLEET_* variables (the join
 * token and other agent settings must not reach customer code). Windows names are
 * case-insensitive, so the prefix is matched in any case.
 */
export function appEnvironment(agentEnv: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(agentEnv)) {
    if (value !== undefined && !key.toUpperCase().startsWith('PIXELFLEET_')) env[key] = value;
  }
  return env;
}
