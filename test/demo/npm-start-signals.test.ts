// `npm start` as systemd, a container stop or `kill` would end it: SIGTERM to npm's own process
// (not its process group, as Ctrl-C would) must end the whole tree, the demo, its control plane
// and its agent, as SIGINT does.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { cleanEnv, REPO_ROOT } from '../support/cli-process';
import { processTree, stillRunning, type ProcessEntry } from '../support/process-tree';

const dataDir = mkdtempSync(join(tmpdir(), 'pf-npm-start-'));
const leftovers: ProcessEntry[] = [];
afterAll(() => {
  for (const p of stillRunning(leftovers)) process.kill(p.pid, 'SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function startThenSignal(signal: 'SIGTERM' | 'SIGINT') {
  const npm = spawn('npm', ['start'], {
    cwd: REPO_ROOT,
    env: cleanEnv({ PIXELFLEET_DEMO_DATA_DIR: dataDir, PIXELFLEET_HTTP__PORT: '0', PIXELFLEET_GRPC__PORT: '0' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (d: Buffer) => (output += d.toString()));
  npm.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((r) => npm.on('exit', (code) => r(code)));
  await new Promise<void>((ready, fail) => {
    const check = () => {
      if (output.includes('Pixelfleet demo is running')) ready();
    };
    npm.stdout.on('data', check);
    npm.on('exit', () => fail(new Error(`npm start exited early:\n${output}`)));
  });
  const tree = processTree(npm.pid!);
  leftovers.push(...tree);
  // npm, the demo (node) and the agent at least.
  expect(tree.some((p) => p.command.includes('test/demo/start.ts'))).toBe(true);
  expect(tree.some((p) => p.command.includes('pixelfleet-agent'))).toBe(true);
  npm.kill(signal);
  const code = await exited;
  await vi.waitFor(() => expect(stillRunning(tree).map((p) => p.command)).toEqual([]), { timeout: 10_000, interval: 100 });
  return { code, output };
}

describe('npm start', () => {
  it('ends its whole process tree on SIGTERM to npm, and exits 0', { timeout: 120_000 }, async () => {
    const { code, output } = await startThenSignal('SIGTERM');
    expect(code, output).toBe(0);
    // The console is for a person: the state folder it was given, readable lines, no raw JSON logs.
    expect(output).toContain(`Pixelfleet demo is running (state in ${dataDir};`);
    expect(output).toContain(`${join(dataDir, 'agent', 'sessions')}/<sessionId>/`);
    expect(output).not.toContain('.data/demo');
    // The dashboard, and the one-time link of the demo user's invitation (no password yet).
    expect(output).toMatch(/The dashboard: +http:\/\/127\.0\.0\.1:\d+\/dashboard\n/);
    expect(output).toMatch(/\n {4}http:\/\/127\.0\.0\.1:\d+\/dashboard\/set-password#token=pfi_[A-Za-z0-9_-]+\n/);
    expect(output.split('\n').filter((line) => line.startsWith('{"level"'))).toEqual([]);
  });

  it('ends its whole process tree on SIGINT to npm alone, and exits 0', { timeout: 120_000 }, async () => {
    const { code, output } = await startThenSignal('SIGINT');
    expect(code, output).toBe(0);
  });
});
