// Supervises one app process (an Unreal build, or the configured stand-in): starts it, keeps
// its last output lines, tells an exit we asked for (a close) from one we did not (a death),
// and on stop ends its whole process tree, gracefully first and by force after a grace period.
// Startup timeouts belong to the session manager, not here.
// Longer than ~400 lines: one process's life (spawn, output ring and log file, record, stop and
// force) on both platforms; the platform rules live in process-control.ts, the launcher's in app-job.ts.
import { EventEmitter } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { execa } from 'execa';
import type { Logger } from 'pino';
import { systemClock, type Clock, type TimerHandle } from '@pixelfleet/common';
import { processControlFor, type ProcessControl, type TreeEnding } from './process-control';
import { APP_RECORD_ENV, identifyProcess, type AppRecord, type AppRecordStore } from './app-records';
import { appJobFailure, appJobSpawn } from './app-job';
import { LaunchError } from './launch-error';
import type { AppAccount } from './app-accounts';

export const APP_PROCESS_STATES = ['starting', 'running', 'stopping', 'exited'] as const;
export type AppProcessState = (typeof APP_PROCESS_STATES)[number];

/** spawned: the OS started it; stopRequested: stop() was called; exited: it is gone and its output drained. */
export const APP_PROCESS_EVENTS = ['spawned', 'stopRequested', 'exited'] as const;
export type AppProcessEvent = (typeof APP_PROCESS_EVENTS)[number];

/** state → event → next state. An event missing from a state's row changes nothing. */
export const APP_PROCESS_TRANSITIONS: Readonly<Record<AppProcessState, Readonly<Partial<Record<AppProcessEvent, AppProcessState>>>>> = {
  starting: { spawned: 'running', stopRequested: 'stopping', exited: 'exited' },
  running: { stopRequested: 'stopping', exited: 'exited' },
  stopping: { exited: 'exited' },
  exited: {},
};

export function nextAppProcessState(state: AppProcessState, event: AppProcessEvent): AppProcessState | undefined {
  return APP_PROCESS_TRANSITIONS[state][event];
}

/** stop()'s default grace period before forcing, in milliseconds. */
export const DEFAULT_STOP_GRACE_MS = 10_000;
/** Output lines kept for diagnostics. */
export const OUTPUT_RING_LINES = 200;
/** Longer lines are split, so a process writing without newlines cannot grow memory. */
export const MAX_LINE_CHARS = 4_096;
/** The output log file stops growing here (a truncation line is written once). */
export const MAX_OUTPUT_LOG_BYTES = 16 * 1024 * 1024;
/** After the process exits, how long its stdout/stderr may stay open (held by an escaped descendant) before we stop reading. */
export const OUTPUT_DRAIN_MS = 2_000;

export interface OutputLine {
  stream: 'stdout' | 'stderr';
  text: string;
  /** Clock time, ms since the epoch. */
  at: number;
}

export interface AppExit {
  /** Exit code; null when a signal ended it or it never started. (Windows: taskkill /F gives 1.) */
  code: number | null;
  /** The signal that ended it (POSIX), else null. */
  signal: NodeJS.Signals | null;
  /** True only when stop() was called before it exited: a close, not a death. */
  expected: boolean;
  /** True when stop() had to force the tree down after its grace period. */
  forced: boolean;
  /** Why the process could not be started (e.g. ENOENT, or the app-job launcher's line); then code and signal are null. */
  spawnError: string | undefined;
  /** Clock time of the exit, ms since the epoch. */
  at: number;
  /** The last output lines, oldest first. */
  lastLines: OutputLine[];
}

export type AppProcessEvents = {
  exited: [AppExit];
  output: [OutputLine];
};

export interface AppProcessOptions {
  /** The program and its fixed leading arguments: `[exe]`, or launcher.command such as `['node', 'mock.mjs']`. */
  command: readonly string[];
  /**
   * The account the app runs under; none: the agent's. POSIX: its uid and gid (the agent must be
   * root). Windows: a local account, which the job launcher logs on (it is required then).
   */
  account?: AppAccount;
  /** The session's arguments, after command. */
  args: readonly string[];
  cwd?: string;
  /** The complete environment of the app: nothing is inherited from the agent. */
  env: Readonly<Record<string, string | undefined>>;
  /** A file that receives the app's stdout/stderr lines (appended; capped at MAX_OUTPUT_LOG_BYTES). */
  logPath?: string;
  log: Logger;
  /** Default: the system clock. */
  clock?: Clock;
  /** How the app's tree is spawned and ended; default processControlFor(process.platform) (tests run the Windows rules on Linux with an injected executor). */
  control?: ProcessControl;
  /** Windows: argv[0] as written on the command line (with windowsVerbatimArguments, the quoted program path). */
  argv0?: string;
  /** Windows: pass args to the command line as written (they are already quoted, see toWindowsUnrealArgs). */
  windowsVerbatimArguments?: boolean;
  /** Secrets on the command line (the session's signalling secret): written as `<redacted>` in the log. */
  redact?: readonly string[];
  /**
   * Windows: app-job.exe (app-job.ts), which runs the app in a job object of its own that the OS
   * ends with the launcher. The spawned process, its pid and the one the kill commands name, is
   * then the launcher; the app is its child. Its own failures end as an exit with spawnError.
   */
  jobLauncher?: string;
  /**
   * Records the app in the agent's data dir before it is spawned and removes the record once its
   * exit has been seen, so an agent that crashed finds it on its next start (survivor-sweep.ts).
   */
  record?: AppRecordTarget;
}

export interface AppRecordTarget {
  store: AppRecordStore;
  sessionId: string;
  /** '' for a local build run by launcher.command. */
  uploadId: string;
  /** The cached build's folder, when the app runs one. */
  buildDir: string | undefined;
}

/** Splits a text stream into lines of at most maxChars (CR LF or LF). */
class LineSplitter {
  private pending = '';
  constructor(
    private readonly maxChars: number,
    private readonly emit: (line: string) => void,
  ) {}

  push(chunk: string): void {
    this.pending += chunk;
    for (let nl = this.pending.indexOf('\n'); nl !== -1; nl = this.pending.indexOf('\n')) {
      this.emitLong(this.pending.slice(0, nl).replace(/\r$/, ''));
      this.pending = this.pending.slice(nl + 1);
    }
    while (this.pending.length > this.maxChars) {
      this.emit(this.pending.slice(0, this.maxChars));
      this.pending = this.pending.slice(this.maxChars);
    }
  }

  flush(): void {
    if (this.pending !== '') this.emitLong(this.pending);
    this.pending = '';
  }

  private emitLong(line: string): void {
    for (let i = 0; i < line.length || i === 0; i += this.maxChars) this.emit(line.slice(i, i + this.maxChars));
  }
}

/** Processes still running, ended by force if the agent itself exits (execa's cleanup is off for detached children). */
const live = new Map<AppProcess, { pid: number; control: ProcessControl }>();
let exitHookInstalled = false;

export class AppProcess extends EventEmitter<AppProcessEvents> {
  /** The root process id; undefined when the process could not be spawned. */
  readonly pid: number | undefined;
  /** Clock time of start(), ms since the epoch. */
  readonly startedAt: number;

  /**
   * The app's own process id, when known: the root process's, except under the app-job launcher
   * (Windows), whose child the app is and whose pid the agent never learns.
   */
  get appPid(): number | undefined {
    return this.jobLauncher ? undefined : this.pid;
  }

  private current: AppProcessState = 'starting';
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly control: ProcessControl;
  private readonly ring: OutputLine[] = [];
  private readonly streams: Readable[] = [];
  private readonly splitters: LineSplitter[] = [];
  private outputFile: { stream: WriteStream; bytes: number; truncated: boolean } | undefined;
  /** What the OS reported when the root process ended (before its output drained). */
  private exitStatus: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private forced = false;
  /** The app runs under the app-job launcher (pid is the launcher's). */
  private readonly jobLauncher: boolean;
  private forceTimer: TimerHandle | undefined;
  private drainTimer: TimerHandle | undefined;
  private record: { store: AppRecordStore; id: string } | undefined;
  private resolveExit!: (exit: AppExit) => void;
  private readonly exitPromise = new Promise<AppExit>((resolve) => {
    this.resolveExit = resolve;
  });

  /**
   * Spawns the process. POSIX: in its own process group (detached), so the tree can be
   * signalled as one. With options.record, the record is on disk before the spawn.
   * Throws RangeError for unusable options and LaunchError CANNOT_RECORD_APP when the record
   * cannot be written (then nothing is started); a binary that cannot be started (ENOENT,
   * EACCES) ends as an `exited` event with spawnError.
   */
  static start(options: AppProcessOptions): AppProcess {
    return new AppProcess(options);
  }

  private constructor(options: AppProcessOptions) {
    super();
    const [file, ...fixedArgs] = options.command;
    if (file === undefined) throw new RangeError('command must name a program');
    this.log = options.log;
    this.clock = options.clock ?? systemClock;
    this.control = options.control ?? processControlFor(process.platform);
    this.startedAt = this.clock.now();
    const args = [...fixedArgs, ...options.args];
    const direct = { file, args, argv0: options.argv0, windowsVerbatimArguments: options.windowsVerbatimArguments ?? false };
    const account = options.account;
    if (account?.kind === 'windows' && options.jobLauncher === undefined) throw new RangeError('a Windows account needs the job launcher, which logs it on');
    const spawn = options.jobLauncher === undefined ? direct : appJobSpawn(options.jobLauncher, direct, account?.kind === 'windows' ? account.name : undefined);
    this.jobLauncher = options.jobLauncher !== undefined;

    // Written before the spawn: from the moment the process exists it can outlive us, and its
    // environment names this record, so even a crash between the spawn and the second write below
    // leaves it findable.
    let pending: AppRecord | undefined;
    if (options.record) {
      const { store, sessionId, uploadId, buildDir } = options.record;
      pending = { id: store.newId(), sessionId, uploadId, executable: file, buildDir, platform: this.control.platform, recordedAtMs: this.startedAt, process: undefined, windowsPid: undefined };
      try {
        store.save(pending);
      } catch (err) {
        throw new LaunchError('CANNOT_RECORD_APP', `cannot record the app in ${store.dir}: ${(err as Error).message}`);
      }
      this.record = { store, id: pending.id };
    }

    const subprocess = execa(spawn.file, spawn.args, {
      cwd: options.cwd,
      env: { ...options.env, ...(pending ? { [APP_RECORD_ENV]: pending.id } : {}) },
      extendEnv: false,
      reject: false,
      cleanup: true,
      // POSIX: its own process group, so the tree is signalled as one (and found again by the
      // survivor sweep). Windows: not detached, so libuv assigns it to its job object, created
      // with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: the OS ends it when the agent dies, however it
      // dies. That job lets the children of what it runs break away silently, so what runs in it
      // is the job launcher, whose own job (no breakaway) holds the app and everything it starts.
      detached: this.control.spawnDetached,
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      forceKillAfterDelay: false,
      windowsHide: true,
      windowsVerbatimArguments: spawn.windowsVerbatimArguments,
      ...(spawn.argv0 === undefined ? {} : { argv0: spawn.argv0 }),
      ...(account?.kind === 'posix' ? { uid: account.uid, gid: account.gid } : {}),
    });
    this.pid = subprocess.pid;
    if (pending) this.completeRecord(pending);

    if (options.logPath !== undefined) {
      const stream = createWriteStream(options.logPath, { flags: 'a' });
      stream.on('error', (err) => {
        this.log.warn({ err: err.message, logPath: options.logPath }, 'cannot write the app output log');
        this.outputFile = undefined;
      });
      this.outputFile = { stream, bytes: 0, truncated: false };
    }
    this.readLines(subprocess.stdout, 'stdout');
    this.readLines(subprocess.stderr, 'stderr');

    if (this.pid !== undefined) {
      live.set(this, { pid: this.pid, control: this.control });
      if (!exitHookInstalled) {
        exitHookInstalled = true;
        process.once('exit', () => {
          for (const { pid, control } of live.values()) {
            try {
              control.endTreeNow(pid);
            } catch {
              // Exiting anyway: one app we cannot signal must not spare the others.
            }
          }
        });
      }
    }
    subprocess.once('spawn', () => {
      this.transition('spawned');
      const command = [file, ...args].map((arg) => redactIn(arg, options.redact ?? []));
      this.log.info({ appPid: this.pid, command, ...(this.jobLauncher ? { jobLauncher: spawn.file } : {}) }, 'app started');
    });
    subprocess.once('exit', (code, signal) => this.onRootExit(code, signal));
    void subprocess.then(
      (result) => this.finish(result),
      (err: unknown) => this.finish({ failed: true, message: err instanceof Error ? err.message : String(err) }),
    );
  }

  get state(): AppProcessState {
    return this.current;
  }

  /** The last output lines (up to OUTPUT_RING_LINES), oldest first. */
  get lastLines(): OutputLine[] {
    return [...this.ring];
  }

  /** Resolves once the process has exited and its output is drained; never rejects. */
  whenExited(): Promise<AppExit> {
    return this.exitPromise;
  }

  /**
   * Ends the process tree: POSIX SIGTERM to the process group, Windows `taskkill /T`; after
   * graceMs (default DEFAULT_STOP_GRACE_MS) SIGKILL to the group / `taskkill /F` on the launcher.
   * Under the job launcher, `/T` reaches the app as the launcher's child (the launcher itself has
   * no window to close and exits with the app); `/F` ends the launcher, and its job ends the
   * whole tree (a child whose parent had already exited included).
   * Idempotent: every call returns the same promise, resolved when the process has exited.
   * After the process exited on its own this is a no-op (the exit stays unexpected).
   * @throws RangeError for a negative or non-finite graceMs.
   */
  stop(options: { graceMs?: number } = {}): Promise<AppExit> {
    const graceMs = options.graceMs ?? DEFAULT_STOP_GRACE_MS;
    if (!Number.isFinite(graceMs) || graceMs < 0) throw new RangeError(`graceMs must be a finite number of milliseconds >= 0, not ${graceMs}`);
    if (this.exitStatus !== undefined || !this.transition('stopRequested')) return this.exitPromise;
    this.log.info({ appPid: this.pid, graceMs }, 'stopping app');
    this.endTree('graceful');
    this.forceTimer = this.clock.setTimeout(() => {
      if (this.exitStatus !== undefined || this.current === 'exited') return;
      this.forced = true;
      this.log.warn({ appPid: this.pid, graceMs }, 'app did not stop within the grace period; forcing');
      this.endTree('forced');
    }, graceMs);
    return this.exitPromise;
  }

  /** Adds the spawned process's identity to its record (spawn returns once the binary is exec'd, so /proc already shows it). */
  private completeRecord(pending: AppRecord): void {
    const store = this.record!.store;
    try {
      if (this.pid === undefined) {
        store.remove(pending.id);
        this.record = undefined;
      } else if (this.control.platform === 'win32') {
        store.save({ ...pending, windowsPid: this.pid });
      } else {
        store.save({ ...pending, process: identifyProcess(this.pid, this.control.platform) });
      }
    } catch (err) {
      // The launching record stays: the sweep still finds the app by the record id in its environment.
      this.log.error({ appPid: this.pid, err: (err as Error).message }, 'cannot complete the app record');
    }
  }

  /** The exit has been seen: the app no longer needs finding after a crash. */
  private dropRecord(): void {
    const record = this.record;
    this.record = undefined;
    if (!record) return;
    try {
      record.store.remove(record.id);
    } catch (err) {
      this.log.warn({ appPid: this.pid, err: (err as Error).message }, 'cannot remove the app record');
    }
  }

  private transition(event: AppProcessEvent): boolean {
    const next = nextAppProcessState(this.current, event);
    if (next === undefined) return false;
    this.current = next;
    return true;
  }

  private endTree(how: TreeEnding): void {
    const pid = this.pid;
    if (pid === undefined) return;
    let asked: Promise<void>;
    try {
      asked = this.control.endTree(pid, how);
    } catch (err) {
      asked = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    asked.catch((err: unknown) => {
      const fields = { appPid: pid, how, err: (err as Error).message };
      // Windows: taskkill without /F fails on a windowless app ("can only be terminated forcefully"): expected.
      if (how === 'graceful' && this.control.platform === 'win32') this.log.debug(fields, 'kill command failed');
      else this.log.warn(fields, 'cannot end the app process tree');
    });
  }

  private readLines(stream: Readable | null | undefined, name: OutputLine['stream']): void {
    if (!stream) return;
    this.streams.push(stream);
    const splitter = new LineSplitter(MAX_LINE_CHARS, (text) => this.onLine(name, text));
    this.splitters.push(splitter);
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => splitter.push(chunk));
    stream.once('end', () => splitter.flush());
    stream.on('error', (err) => this.log.debug({ stream: name, err: err.message }, 'app output stream error'));
  }

  private onLine(stream: OutputLine['stream'], text: string): void {
    const line: OutputLine = { stream, text, at: this.clock.now() };
    this.ring.push(line);
    if (this.ring.length > OUTPUT_RING_LINES) this.ring.shift();
    this.log.debug({ appPid: this.pid, stream, text }, 'app output');
    const file = this.outputFile;
    if (file && !file.truncated) {
      const record = `${stream === 'stderr' ? '[stderr] ' : ''}${text}\n`;
      file.bytes += Buffer.byteLength(record);
      if (file.bytes > MAX_OUTPUT_LOG_BYTES) {
        file.truncated = true;
        file.stream.write(`[output truncated after ${MAX_OUTPUT_LOG_BYTES} bytes]\n`);
      } else file.stream.write(record);
    }
    this.emit('output', line);
  }

  private onRootExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitStatus !== undefined) return;
    this.exitStatus = { code, signal };
    this.forceTimer?.cancel();
    live.delete(this);
    // The root is gone; whatever is left of its tree is an orphan of this session.
    if (this.pid !== undefined) {
      try {
        this.control.endRemains(this.pid);
      } catch (err) {
        this.log.warn({ appPid: this.pid, err: (err as Error).message }, 'cannot end what the app left running');
      }
    }
    // A descendant outside the group may still hold stdout/stderr open; do not wait for it forever.
    this.drainTimer = this.clock.setTimeout(() => {
      for (const s of this.streams) s.destroy();
      void this.finish(undefined);
    }, OUTPUT_DRAIN_MS);
  }

  private async finish(result: { exitCode?: number; signal?: NodeJS.Signals; failed: boolean; message?: string; originalMessage?: string } | undefined): Promise<void> {
    const expected = this.current === 'stopping';
    if (!this.transition('exited')) return;
    this.forceTimer?.cancel();
    this.drainTimer?.cancel();
    live.delete(this);
    this.dropRecord();
    for (const s of this.splitters) s.flush();
    const status = this.exitStatus;
    const code = status ? status.code : (result?.exitCode ?? null);
    // The launcher started, but could not start the app (or keep it in its job): a failed spawn.
    const launcherFailure = this.jobLauncher ? appJobFailure(code, this.ring) : undefined;
    const exit: AppExit = {
      code: launcherFailure === undefined ? code : null,
      signal: status ? status.signal : (result?.signal ?? null),
      expected,
      forced: this.forced,
      spawnError: launcherFailure ?? (status === undefined && result?.failed ? (result.originalMessage ?? result.message ?? 'the process could not be started') : undefined),
      at: this.clock.now(),
      lastLines: [...this.ring],
    };
    const file = this.outputFile;
    this.outputFile = undefined;
    if (file) {
      file.stream.end();
      await finished(file.stream).catch(() => undefined);
    }
    const fields = { appPid: this.pid, code: exit.code, signal: exit.signal, forced: exit.forced, spawnError: exit.spawnError };
    if (expected) this.log.info(fields, 'app stopped');
    else this.log.warn(fields, 'app exited on its own');
    this.resolveExit(exit);
    this.emit('exited', exit);
  }
}

/** arg with every secret in it written as `<redacted>`. */
function redactIn(arg: string, secrets: readonly string[]): string {
  return secrets.reduce((text, secret) => (secret === '' ? text : text.split(secret).join('<redacted>')), arg);
}
