// The two ProcessControl implementations: POSIX for real (process groups, and the build folder's
// sweep over /proc with real processes running copies of a binary), Windows through an injected
// executor (the taskkill and PowerShell commands it runs, and the ids PowerShell prints).
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isProcessGone } from './process-identity';
import { CommandError, posixProcessControl, TASKKILL_NOT_FOUND_EXIT_CODE, windowsProcessControl } from './process-control';
import { windowsKillPlan, windowsSweepPlan } from './windows-kill-plan';

/** A real binary to copy into build folders: coreutils' sleep (its /proc/<pid>/exe is the copy). */
const SLEEP = realpathSync('/bin/sleep');

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone: what most tests check.
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-process-control-'));
  dirs.push(dir);
  return dir;
}

/** Starts `program args` in a process group of its own (as an app, or a helper that left the app's group). */
async function startDetached(program: string, ...args: string[]): Promise<ChildProcess> {
  const child = spawn(program, args, { detached: true, stdio: 'ignore' });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  return child;
}

/** A copy of sleep at folder/relative, as a build's own binary would be. */
function binaryIn(folder: string, relative: string): string {
  const path = join(folder, relative);
  mkdirSync(join(path, '..'), { recursive: true });
  copyFileSync(SLEEP, path);
  return path;
}

async function waitGone(pid: number): Promise<void> {
  await vi.waitFor(() => expect(isProcessGone(pid)).toBe(true), { timeout: 5_000, interval: 20 });
}

describe('posixProcessControl', () => {
  const control = posixProcessControl('linux');

  it('spawns apps detached and ends a whole group, asked (SIGTERM) or forced (SIGKILL)', async () => {
    expect(control.spawnDetached).toBe(true);
    const asked = await startDetached('sh', '-c', 'sleep 300 & sleep 300 & wait');
    await control.endTree(asked.pid!, 'graceful');
    await waitGone(asked.pid!);

    // A root that handles SIGTERM and carries on survives the ask (it says so after the signal:
    // SIGTERM, not SIGKILL, was sent), not the force. It signals only once its trap is set.
    const stubborn = spawn('sh', ['-c', "trap 'echo asked' TERM; echo ready; while :; do sleep 1; done"], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(stubborn);
    const lines: string[] = [];
    stubborn.stdout.setEncoding('utf8').on('data', (text: string) => lines.push(...text.split('\n').filter(Boolean)));
    await vi.waitFor(() => expect(lines).toContain('ready'), { timeout: 5_000, interval: 10 });
    await control.endTree(stubborn.pid!, 'graceful');
    await vi.waitFor(() => expect(lines).toContain('asked'), { timeout: 5_000, interval: 10 });
    expect(isProcessGone(stubborn.pid!)).toBe(false);
    control.endTreeNow(stubborn.pid!);
    await waitGone(stubborn.pid!);
  });

  it('takes a group that is already gone as done', async () => {
    const gone = await startDetached('true');
    await new Promise((resolve) => gone.once('exit', resolve));
    await expect(control.endTree(gone.pid!, 'forced')).resolves.toBeUndefined();
    expect(() => control.endRemains(gone.pid!)).not.toThrow();
  });

  it('sweeps exactly the processes whose executable lies under the folder, whatever their group', async () => {
    const root = tempDir();
    const build = join(root, 'upl_1');
    const crashReporter = await startDetached(binaryIn(build, 'Engine/Binaries/Linux/CrashReportClient'), '300');
    const helper = await startDetached(binaryIn(build, 'Game/Binaries/Linux/Helper'), '300');
    // A sibling folder whose name starts with the swept one's, and the same binary outside any build.
    const sibling = await startDetached(binaryIn(join(root, 'upl_10'), 'Game/Binaries/Linux/Helper'), '300');
    const elsewhere = await startDetached(SLEEP, '300');

    const stopped = await control.sweepFolder(build);
    expect(stopped.sort()).toEqual([crashReporter.pid!, helper.pid!].sort());
    await waitGone(crashReporter.pid!);
    await waitGone(helper.pid!);
    expect(isProcessGone(sibling.pid!)).toBe(false);
    expect(isProcessGone(elsewhere.pid!)).toBe(false);
  });

  it('compares resolved paths: a folder named through a symbolic link is swept too', async () => {
    const root = tempDir();
    const build = join(root, 'builds', 'upl_1');
    const leftover = await startDetached(binaryIn(build, 'Game/Binaries/Linux/Game-Linux-Shipping'), '300');
    symlinkSync(join(root, 'builds'), join(root, 'linked'));
    expect(await control.sweepFolder(join(root, 'linked', 'upl_1'))).toEqual([leftover.pid!]);
    await waitGone(leftover.pid!);
  });

  it('finds nothing in a folder that does not exist', async () => {
    expect(await control.sweepFolder(join(tempDir(), 'no-such-build'))).toEqual([]);
  });
});

describe('windowsProcessControl (its commands, through an injected executor)', () => {
  it('does not spawn detached, so the app is in the agent kill-on-close job', () => {
    expect(windowsProcessControl(() => Promise.resolve('')).spawnDetached).toBe(false);
  });

  it('ends a tree with taskkill: /T to ask, /F on the launcher to force', async () => {
    const ran: (readonly string[])[] = [];
    const control = windowsProcessControl((argv) => {
      ran.push(argv);
      return Promise.resolve('SUCCESS: sent termination signal');
    });
    await control.endTree(4242, 'graceful');
    await control.endTree(4242, 'forced');
    expect(ran).toEqual([windowsKillPlan(4242).graceful, windowsKillPlan(4242).forced]);
    control.endRemains(4242);
    expect(ran).toHaveLength(2); // the app's job object ended what its launcher left
  });

  it("sweeps the build folder with the launcher's --sweep and returns the ids it printed", async () => {
    const ran: (readonly string[])[] = [];
    const control = windowsProcessControl((argv) => {
      ran.push(argv);
      return Promise.resolve('stopped 5120\r\nstopped 5124\r\nswept 2 of 40 processes\r\n');
    }, 'C:\\pf\\app-job.exe');
    expect(await control.sweepFolder('C:\\ProgramData\\Pixelfleet\\agent\\builds\\upl_1')).toEqual([5120, 5124]);
    expect(ran).toEqual([windowsSweepPlan('C:\\pf\\app-job.exe', 'C:\\ProgramData\\Pixelfleet\\agent\\builds\\upl_1')]);
    expect(await windowsProcessControl(() => Promise.resolve('swept 0 of 40 processes\r\n')).sweepFolder('C:\\b\\upl_1')).toEqual([]);
  });

  it('fails a sweep whose tool printed nothing (a stub), instead of reporting an empty folder', async () => {
    await expect(windowsProcessControl(() => Promise.resolve('')).sweepFolder('C:\\b\\upl_1')).rejects.toThrow('app-job.exe --sweep did not answer');
  });

  it('passes on a failed command', async () => {
    const control = windowsProcessControl(() => Promise.reject(new CommandError('taskkill /PID 4242 /F failed: Access is denied', 1)));
    await expect(control.endTree(4242, 'forced')).rejects.toThrow('Access is denied');
    await expect(control.sweepFolder('C:\\b\\upl_1')).rejects.toThrow('Access is denied');
  });

  it("takes taskkill's 'not found' as a tree already ended", async () => {
    const control = windowsProcessControl(() => Promise.reject(new CommandError('taskkill /PID 4242 /F failed: exit code 128', TASKKILL_NOT_FOUND_EXIT_CODE)));
    await expect(control.endTree(4242, 'forced')).resolves.toBeUndefined();
  });
});
