// On start, before the first Hello: the apps a previous run of this agent left behind (it was
// killed or crashed, so its exit hook never ran). Each record is checked against the process
// that now has its pid (same boot, same start time, same binary), and only a process proven to
// be that app — or one whose environment carries the record's id — is stopped, with its whole
// tree: SIGTERM to its process group, a grace on the injected clock, then SIGKILL. A pid that
// now belongs to another process is never signalled. Then the record is removed.
//
// Survivors are stopped, not re-adopted: the app's signalling ran to a loopback port of the dead
// agent, its relay (the viewer's WebRTC leg, DTLS keys) lived in that agent's memory, and its
// stdout/stderr pipes are broken. The control plane has ended or will end the session when the
// Hello does not list it; a GPU freed at once is worth more than a session that cannot stream.
import type { Logger } from 'pino';
import { systemClock, type Clock } from '@pixelfleet/common';
import { APP_RECORD_ENV, type AppRecord, type AppRecordStore } from './app-records';
import { isProcessGone, listProcesses, PROC_ROOT, processHasEnv, readBootIdentity, readProcessExecutable, readProcessStat } from './process-identity';
import { processControlFor, signalProcess, type ProcessControl } from './process-control';

/** How long survivors get to stop after SIGTERM before SIGKILL, in milliseconds (default 5 s). */
export const DEFAULT_SURVIVOR_GRACE_MS = 5_000;
/** How often the sweep looks whether the processes it signalled are gone, in milliseconds. */
export const SURVIVOR_POLL_MS = 50;
/** After SIGKILL, how long to wait for the kernel to take the processes down before giving up on them. */
export const SURVIVOR_KILL_WAIT_MS = 5_000;

/**
 * What was found for one record:
 * - stopped: the app (or what it started) was running and ended after SIGTERM;
 * - forced: it ignored SIGTERM for the grace period and was killed;
 * - gone: nothing of it runs any more;
 * - pidReused: its pid now names another process (other start time or binary), left alone;
 * - previousBoot: recorded before the machine rebooted;
 * - unverifiable: no way to prove who the pid is (no /proc), left alone;
 * - windowsSwept: Windows, where the app's job object ended it with the agent; leftovers under its build folder were force-stopped.
 */
export type SurvivorVerdict = 'stopped' | 'forced' | 'gone' | 'pidReused' | 'previousBoot' | 'unverifiable' | 'windowsSwept';

export interface SurvivorOutcome {
  recordId: string;
  sessionId: string | undefined;
  uploadId: string | undefined;
  pid: number | undefined;
  verdict: SurvivorVerdict;
  /** The processes signalled (the verified root, its group, anything carrying the record's id); Windows: those the build folder's sweep stopped. */
  signalled: number[];
  /** Processes still there after SIGKILL and SURVIVOR_KILL_WAIT_MS (uninterruptible sleep): logged as an error. */
  stuck: number[];
}

export interface SurvivorSweepOptions {
  store: AppRecordStore;
  log: Logger;
  /** Default systemClock. */
  clock?: Clock;
  /** Default DEFAULT_SURVIVOR_GRACE_MS. */
  graceMs?: number;
  /** Whose rules apply, and on Windows what runs the folder sweep; default processControlFor(process.platform). */
  control?: ProcessControl;
  /** Default /proc. */
  procRoot?: string;
}

/** Signals one verified process or (negative) its group; gone or not ours to signal is left to the wait that follows. */
function signal(target: number, sig: NodeJS.Signals): void {
  signalProcess(target, sig);
}

function delay(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/** Waits until every pid is gone or timeoutMs has passed on the clock; returns those still there. */
async function waitGone(pids: readonly number[], clock: Clock, timeoutMs: number, procRoot: string): Promise<number[]> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    const left = pids.filter((pid) => !isProcessGone(pid, procRoot));
    if (left.length === 0 || clock.now() >= deadline) return left;
    await delay(clock, Math.min(SURVIVOR_POLL_MS, deadline - clock.now()));
  }
}

/**
 * Finds, verifies and stops every app a previous run left behind, then removes its record.
 * Resolves with one outcome per record (every one is also logged). Never throws for one bad
 * record: the next is still handled.
 */
export async function stopSurvivors(options: SurvivorSweepOptions): Promise<SurvivorOutcome[]> {
  const { store, log } = options;
  const clock = options.clock ?? systemClock;
  const graceMs = options.graceMs ?? DEFAULT_SURVIVOR_GRACE_MS;
  const control = options.control ?? processControlFor(process.platform);
  const platform = control.platform;
  const procRoot = options.procRoot ?? PROC_ROOT;
  const { records, unreadable } = store.load();
  for (const bad of unreadable) log.warn({ recordId: bad.id, problem: bad.problem }, 'unreadable app record: looking for its processes by id only');
  const outcomes: SurvivorOutcome[] = [];
  const all: (AppRecord | { id: string })[] = [...records, ...unreadable.map((u) => ({ id: u.id }))];
  for (const record of all) {
    try {
      const outcome = platform === 'win32'
        ? await sweepWindows(record, control)
        : platform === 'linux'
          ? await sweepLinux(record, clock, graceMs, procRoot)
          : unverifiable(record);
      outcomes.push(outcome);
      const fields = { recordId: outcome.recordId, sessionId: outcome.sessionId, uploadId: outcome.uploadId, appPid: outcome.pid, verdict: outcome.verdict, signalled: outcome.signalled };
      if (outcome.stuck.length > 0) log.error({ ...fields, stuck: outcome.stuck }, 'app left by a previous run did not die after SIGKILL');
      else if (outcome.verdict === 'stopped' || outcome.verdict === 'forced' || (outcome.verdict === 'windowsSwept' && outcome.signalled.length > 0)) {
        log.warn(fields, 'stopped an app left running by a previous run of the agent');
      }
      else log.info(fields, 'app record from a previous run: nothing to stop');
      store.remove(record.id);
    } catch (err) {
      log.error({ recordId: record.id, err: (err as Error).message }, 'cannot handle an app record from a previous run; it is kept');
    }
  }
  return outcomes;
}

function outcomeOf(record: AppRecord | { id: string }, verdict: SurvivorVerdict, signalled: number[] = [], stuck: number[] = []): SurvivorOutcome {
  const full = 'sessionId' in record ? record : undefined;
  return {
    recordId: record.id,
    sessionId: full?.sessionId,
    uploadId: full?.uploadId,
    pid: full?.process?.pid ?? full?.windowsPid,
    verdict,
    signalled,
    stuck,
  };
}

function unverifiable(record: AppRecord | { id: string }): SurvivorOutcome {
  return outcomeOf(record, 'unverifiable');
}

/** Why the recorded pid is not (or no longer) the app; undefined when it is. */
function mismatch(record: AppRecord, procRoot: string): 'gone' | 'pidReused' | 'previousBoot' | 'unverifiable' | undefined {
  const proc = record.process;
  if (proc === undefined) return 'gone';
  if (proc.startTicks === undefined) return 'unverifiable';
  const boot = readBootIdentity(procRoot);
  const sameBoot = proc.bootId !== undefined && boot.bootId !== undefined ? proc.bootId === boot.bootId : proc.bootTimeS === boot.bootTimeS;
  if (!sameBoot) return 'previousBoot';
  const stat = readProcessStat(proc.pid, procRoot);
  if (stat === undefined || stat.state === 'Z') return 'gone';
  if (stat.startTicks !== proc.startTicks) return 'pidReused';
  const exe = readProcessExecutable(proc.pid, procRoot);
  if (exe !== undefined && proc.exe !== undefined && exe !== proc.exe) return 'pidReused';
  return undefined;
}

async function sweepLinux(record: AppRecord | { id: string }, clock: Clock, graceMs: number, procRoot: string): Promise<SurvivorOutcome> {
  const full = 'sessionId' in record ? record : undefined;
  const notThere = full === undefined ? 'gone' : mismatch(full, procRoot);
  if (notThere === 'previousBoot') return outcomeOf(record, notThere);
  // The verified root leads its own group; anything still carrying the record id is the app's
  // too (a child that left the group, or an app spawned just before a crash whose record had
  // no pid yet). Nothing else is ever signalled.
  const group = notThere === undefined ? full!.process!.pgid : undefined;
  const members = () => {
    const found = new Set<number>();
    for (const p of listProcesses(procRoot)) {
      if ((group !== undefined && p.pgid === group) || processHasEnv(p.pid, APP_RECORD_ENV, record.id, procRoot)) found.add(p.pid);
    }
    if (group !== undefined && !isProcessGone(full!.process!.pid, procRoot)) found.add(full!.process!.pid);
    return [...found];
  };
  const targets = members();
  if (targets.length === 0) return outcomeOf(record, notThere ?? 'gone');
  if (group !== undefined) signal(-group, 'SIGTERM');
  for (const pid of targets) signal(pid, 'SIGTERM');
  const left = await waitGone(targets, clock, graceMs, procRoot);
  if (left.length === 0) return outcomeOf(record, 'stopped', targets);
  if (group !== undefined) signal(-group, 'SIGKILL');
  const again = [...new Set([...left, ...members()])];
  for (const pid of again) signal(pid, 'SIGKILL');
  const stuck = await waitGone(again, clock, SURVIVOR_KILL_WAIT_MS, procRoot);
  return outcomeOf(record, 'forced', [...new Set([...targets, ...again])], stuck);
}

async function sweepWindows(record: AppRecord | { id: string }, control: ProcessControl): Promise<SurvivorOutcome> {
  // The app ran in the app-job launcher's job object (kill on close, no breakaway); libuv's job
  // ended the launcher with the dead agent, and the launcher's job the whole app tree. What can
  // still be there: an app the launcher was killed before it could put in its job, or one a
  // previous agent started without the launcher. Before any session runs, everything running
  // from the build's folder is a leftover.
  const buildDir = 'sessionId' in record ? record.buildDir : undefined;
  if (buildDir === undefined) return outcomeOf(record, 'gone');
  return outcomeOf(record, 'windowsSwept', await control.sweepFolder(buildDir));
}
