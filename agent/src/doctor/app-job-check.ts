// Doctor's "app job" line on Windows: that this host's job objects hold an app's whole tree. It
// starts a throwaway tree under the launcher (app-job.exe → a copy of app-job.exe, nesting a job
// of its own → a copy of PING.EXE, as an app and the helper it starts), waits until both copies
// run (`app-job.exe --list` on their folder: ping's own output may be buffered until it exits),
// force-stops the launcher as a session's stop does, then sweeps that folder: what the sweep
// finds outlived its launcher. A policy that forbids nested jobs, or a job the service may not
// create, shows here instead of as apps that outlive their sessions.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runWithExeca, type CommandRunner } from '../launcher/process-control';
import { parseListOutput, parseSweepOutput, windowsKillPlan, windowsListPlan, windowsSweepPlan } from '../launcher/windows-kill-plan';
import type { DoctorLine } from './doctor-line';

/** How long the tree may take to start (a loaded host, or Wine's first start). */
const TREE_START_MS = 15_000;
/** How often the tree's folder is listed while it starts: no process event reaches a non-parent. */
const TREE_POLL_MS = 200;

export interface AppJobCheckOptions {
  /** Where PING.EXE is taken from (default `C:\Windows\System32`; doctor passes `%SystemRoot%\System32`). */
  system32?: string;
  /** Runs taskkill and the sweep (default execa). */
  run?: CommandRunner;
  /** How long the tree may take to start (default TREE_START_MS). */
  startTimeoutMs?: number;
  /** The tree's temp folder as the launcher names it (default: as it is; tests on Linux map it to a Windows path). */
  asWindowsPath?: (path: string) => string;
}

/** Runs the check with the launcher at appJob (a Windows path); only meaningful on Windows. */
export async function checkAppJob(appJob: string, options: AppJobCheckOptions = {}): Promise<DoctorLine> {
  const run = options.run ?? runWithExeca;
  const system32 = options.system32 ?? 'C:\\Windows\\System32';
  const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-doctor-'));
  const treeFolder = (options.asWindowsPath ?? ((path: string) => path))(dir);
  const fail = (detail: string): DoctorLine => ({ check: 'app job', verdict: 'fail', detail });
  let child: ChildProcess | undefined;
  try {
    const inner = join(dir, 'inner-app-job.exe');
    const ping = join(dir, 'ping.exe');
    copyFileSync(appJob, inner);
    copyFileSync(join(system32, 'PING.EXE'), ping);
    child = spawn(appJob, [inner, ping, '-n', '60', '127.0.0.1'], { stdio: 'ignore', windowsHide: true });
    const launched = child;
    const exited = new Promise<void>((resolve) => launched.once('close', () => resolve()));
    const startTimeoutMs = options.startTimeoutMs ?? TREE_START_MS;
    let running: number[] = [];
    for (const deadline = Date.now() + startTimeoutMs; running.length < 2 && child.exitCode === null && Date.now() < deadline; ) {
      await sleep(TREE_POLL_MS);
      running = parseListOutput(await run(windowsListPlan(appJob, treeFolder)));
    }
    if (running.length < 2 || child.pid === undefined) {
      child.kill();
      await run(windowsSweepPlan(appJob, treeFolder)).catch(() => '');
      return fail(`a test tree under ${appJob} did not start within ${startTimeoutMs / 1000} s (${running.length} of its 2 processes ran; launcher exit ${child.exitCode ?? 'none'})`);
    }
    await run(windowsKillPlan(child.pid).forced);
    await exited;
    const outlived = parseSweepOutput(await run(windowsSweepPlan(appJob, treeFolder)));
    if (outlived.length > 0) {
      return fail(`${outlived.length} process(es) of a test tree outlived its launcher (now stopped): job objects do not hold here, so apps would outlive their sessions`);
    }
    return { check: 'app job', verdict: 'ok', detail: 'a test tree (launcher, nested launcher, ping) ended with its launcher' };
  } catch (err) {
    return fail(`the test tree could not be run: ${(err as Error).message}`);
  } finally {
    // A check that failed half-way leaves no tree behind (ending the launcher ends its job).
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill();
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}
