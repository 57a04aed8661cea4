// The app job check's verdicts, with a stand-in launcher (a POSIX script that stays up like the
// test tree's launcher) and the Windows commands answered by an injected runner: the check itself
// runs for real under Wine in test/e2e/windows-agent.test.ts.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAppJob } from './app-job-check';

let dir: string;
let launcher: string;
let system32: string;
/** The launcher's name for the tree's folder, as on Windows. */
const asWindowsPath = (path: string) => `C:\\Temp\\${path.split('/').at(-1)}`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-app-job-check-'));
  launcher = join(dir, 'app-job');
  writeFileSync(launcher, '#!/bin/sh\nexec sleep 60\n');
  chmodSync(launcher, 0o755);
  system32 = join(dir, 'System32');
  mkdirSync(system32);
  writeFileSync(join(system32, 'PING.EXE'), 'MZ');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Answers --list with `listed`, taskkill by killing the stand-in, --sweep with `swept`; records what ran. */
function runner(listed: string, swept: string) {
  const ran: string[] = [];
  return {
    ran,
    run: (argv: readonly string[]) => {
      ran.push(argv[0] === 'taskkill' ? 'taskkill' : argv[1]!);
      if (argv[1] === '--list') return Promise.resolve(listed);
      if (argv[1] === '--sweep') return Promise.resolve(swept);
      process.kill(Number(argv[2]), 'SIGKILL');
      return Promise.resolve('SUCCESS');
    },
  };
}

describe('checkAppJob', () => {
  it('is ok when nothing of the tree outlives its force-stopped launcher', async () => {
    const r = runner('running 40\r\nrunning 44\r\nfound 2 of 9 processes\r\n', 'swept 0 of 7 processes\r\n');
    expect(await checkAppJob(launcher, { run: r.run, system32, asWindowsPath })).toEqual({ check: 'app job', verdict: 'ok', detail: 'a test tree (launcher, nested launcher, ping) ended with its launcher' });
    expect(r.ran).toEqual(['--list', 'taskkill', '--sweep']);
  });

  it('fails when the sweep finds what outlived the launcher: apps would outlive their sessions', async () => {
    const r = runner('running 40\r\nrunning 44\r\nfound 2 of 9 processes\r\n', 'stopped 44\r\nswept 1 of 8 processes\r\n');
    expect(await checkAppJob(launcher, { run: r.run, system32, asWindowsPath })).toEqual({
      check: 'app job',
      verdict: 'fail',
      detail: '1 process(es) of a test tree outlived its launcher (now stopped): job objects do not hold here, so apps would outlive their sessions',
    });
  });

  it('fails, and cleans up, when the tree never runs', async () => {
    const r = runner('found 0 of 9 processes\r\n', 'swept 0 of 9 processes\r\n');
    const line = await checkAppJob(launcher, { run: r.run, system32, asWindowsPath, startTimeoutMs: 500 });
    expect(line).toEqual({ check: 'app job', verdict: 'fail', detail: `a test tree under ${launcher} did not start within 0.5 s (0 of its 2 processes ran; launcher exit none)` });
    expect(r.ran.at(-1)).toBe('--sweep');
  });

  it('fails with the reason when a tool does not answer', async () => {
    const r = runner('', 'swept 0 of 9 processes\r\n');
    const line = await checkAppJob(launcher, { run: r.run, system32, asWindowsPath });
    expect(line.verdict).toBe('fail');
    expect(line.detail).toContain('app-job.exe --list did not answer');
  });
});
