import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  APP_PROCESS_EVENTS,
  APP_PROCESS_STATES,
  APP_PROCESS_TRANSITIONS,
  AppProcess,
  MAX_LINE_CHARS,
  OUTPUT_DRAIN_MS,
  OUTPUT_RING_LINES,
  nextAppProcessState,
  type AppExit,
  type AppProcessOptions,
} from './app-process';
import { ManualClock } from '@pixelfleet/common';
import { APP_RECORD_ENV, AppRecordStore } from './app-records';
import { readProcessStat } from './process-identity';
import { windowsProcessControl } from './process-control';

const NODE = process.execPath;
const silent = pino({ level: 'silent' });

/** Gone, or a zombie: a killed orphan stays a zombie until its reaper waits for it, and some containers' PID 1 never does. */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return true;
    throw err;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? false;
  } catch {
    return true;
  }
}

const waitUntilGone = (pid: number) => vi.waitFor(() => expect(isGone(pid)).toBe(true), { timeout: 5_000, interval: 20 });

let dir: string;
let clock: ManualClock;
const started: AppProcess[] = [];
const strays: number[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pixelfleet-app-'));
  clock = new ManualClock();
});

afterEach(async () => {
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const app of started.splice(0)) {
    if (app.state !== 'exited') {
      const done = app.stop({ graceMs: 0 });
      clock.advance(OUTPUT_DRAIN_MS);
      await done;
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

function start(command: string[], extra: Partial<AppProcessOptions> = {}): AppProcess {
  const app = AppProcess.start({ command, args: [], env: process.env, log: silent, clock, ...extra });
  started.push(app);
  return app;
}

/** Resolves once the app has printed a line equal to text. */
function lineFrom(app: AppProcess, text: string): Promise<void> {
  if (app.lastLines.some((l) => l.text === text)) return Promise.resolve();
  return new Promise((resolve) => {
    const onLine = (l: { text: string }) => {
      if (l.text !== text) return;
      app.off('output', onLine);
      resolve();
    };
    app.on('output', onLine);
  });
}

const nodeScript = (code: string, ...args: string[]) => [NODE, '-e', code, '--', ...args];
const LOOP = 'setInterval(() => {}, 1000);';

describe('APP_PROCESS_TRANSITIONS', () => {
  const ALLOWED = new Set(['starting+spawned→running', 'starting+stopRequested→stopping', 'starting+exited→exited', 'running+stopRequested→stopping', 'running+exited→exited', 'stopping+exited→exited']);

  it('has a row for every state and only known events and states', () => {
    expect(Object.keys(APP_PROCESS_TRANSITIONS).sort()).toEqual([...APP_PROCESS_STATES].sort());
    for (const row of Object.values(APP_PROCESS_TRANSITIONS)) {
      for (const [event, to] of Object.entries(row)) {
        expect(APP_PROCESS_EVENTS).toContain(event);
        expect(APP_PROCESS_STATES).toContain(to);
      }
    }
  });

  for (const from of APP_PROCESS_STATES) {
    for (const event of APP_PROCESS_EVENTS) {
      const entry = [...ALLOWED].find((a) => a.startsWith(`${from}+${event}→`));
      it(`${from} + ${event} → ${entry?.split('→')[1] ?? '(no change)'}`, () => {
        expect(nextAppProcessState(from, event)).toBe(entry?.split('→')[1]);
      });
    }
  }

  it('never leaves exited', () => {
    for (const event of APP_PROCESS_EVENTS) expect(nextAppProcessState('exited', event)).toBeUndefined();
  });
});

describe('AppProcess', { timeout: 10_000 }, () => {
  it('reports an exit on its own as unexpected, with its code and last lines', async () => {
    const app = start(nodeScript("console.log('hello'); console.error('oops'); process.exit(3)"));
    expect(app.state).toBe('starting');
    expect(app.pid).toBeGreaterThan(0);
    expect(app.startedAt).toBe(clock.now());
    const event = new Promise<AppExit>((resolve) => app.once('exited', resolve));
    const exit = await app.whenExited();
    expect(exit).toMatchObject({ code: 3, signal: null, expected: false, forced: false, spawnError: undefined });
    expect(exit.lastLines.map((l) => [l.stream, l.text])).toEqual(expect.arrayContaining([['stdout', 'hello'], ['stderr', 'oops']]));
    expect(await event).toBe(exit);
    expect(app.state).toBe('exited');
  });

  it('passes on the arguments and only the given environment', async () => {
    const app = start(nodeScript("console.log(JSON.stringify([process.argv.slice(1), process.env.ONLY, process.env.HOME ?? null]))", '-A=1', 'b c'), {
      env: { ONLY: 'yes', PATH: process.env.PATH },
    });
    const exit = await app.whenExited();
    expect(exit.lastLines.map((l) => l.text)).toEqual([JSON.stringify([['-A=1', 'b c'], 'yes', null])]);
  });

  it('moves to running once spawned', async () => {
    const app = start(nodeScript(`console.log('ready'); ${LOOP}`));
    await lineFrom(app, 'ready');
    expect(app.state).toBe('running');
  });

  it('stops a well-behaved process with SIGTERM and reports the exit as expected', async () => {
    const app = start(nodeScript(`console.log('ready'); ${LOOP}`));
    await lineFrom(app, 'ready');
    const stopping = app.stop({ graceMs: 60_000 });
    expect(app.state).toBe('stopping');
    const exit = await stopping;
    expect(exit).toMatchObject({ code: null, signal: 'SIGTERM', expected: true, forced: false });
    expect(app.state).toBe('exited');
  });

  it('forces a process that ignores SIGTERM once graceMs has passed', async () => {
    const app = start(nodeScript(`process.on('SIGTERM', () => console.log('term ignored')); console.log('ready'); ${LOOP}`));
    await lineFrom(app, 'ready');
    const stopping = app.stop({ graceMs: 5_000 });
    await lineFrom(app, 'term ignored');
    clock.advance(4_999);
    expect(app.state).toBe('stopping');
    clock.advance(1);
    const exit = await stopping;
    expect(exit).toMatchObject({ code: null, signal: 'SIGKILL', expected: true, forced: true });
  });

  it('returns the same promise from every stop() and sends one graceful signal', async () => {
    const app = start(nodeScript(`let n = 0; process.on('SIGTERM', () => console.log('term ' + ++n)); console.log('ready'); ${LOOP}`));
    await lineFrom(app, 'ready');
    const first = app.stop({ graceMs: 1_000 });
    const second = app.stop({ graceMs: 1 });
    expect(second).toBe(first);
    await lineFrom(app, 'term 1');
    clock.advance(1_000);
    const exit = await first;
    expect(exit.forced).toBe(true);
    expect(exit.lastLines.filter((l) => l.text.startsWith('term'))).toHaveLength(1);
  });

  it('refuses a negative or non-finite graceMs without starting to stop', async () => {
    const app = start(nodeScript(`console.log('ready'); ${LOOP}`));
    await lineFrom(app, 'ready');
    for (const graceMs of [-1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => app.stop({ graceMs })).toThrow(RangeError);
    expect(app.state).toBe('running');
  });

  it('treats stop() after an exit on its own as a no-op', async () => {
    const app = start(nodeScript('process.exit(0)'));
    const exit = await app.whenExited();
    const stopped = app.stop({ graceMs: 0 });
    expect(stopped).toBe(app.whenExited());
    expect(await stopped).toBe(exit);
    expect(exit.expected).toBe(false);
    expect(app.state).toBe('exited');
  });

  it('kills the whole process tree on stop', async () => {
    const pidFile = join(dir, 'grandchild.pid');
    const app = start(['sh', '-c', 'sleep 1000 & echo $! > "$0"; echo ready; wait', pidFile]);
    await lineFrom(app, 'ready');
    const grandchild = Number(readFileSync(pidFile, 'utf8'));
    strays.push(grandchild);
    expect(isGone(grandchild)).toBe(false);
    const exit = await app.stop({ graceMs: 60_000 });
    expect(exit.expected).toBe(true);
    await waitUntilGone(grandchild);
  });

  it('kills a descendant that ignores SIGTERM even when the root obeys it', async () => {
    const pidFile = join(dir, 'grandchild.pid');
    const parent = `
      const { spawn } = require('node:child_process');
      const gc = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); console.log('up'); ${LOOP}"], { stdio: ['ignore', 'pipe', 'inherit'] });
      gc.stdout.once('data', () => { require('node:fs').writeFileSync(process.argv[1], String(gc.pid)); console.log('ready'); });
      ${LOOP}`;
    const app = start(nodeScript(parent, pidFile));
    await lineFrom(app, 'ready');
    const grandchild = Number(readFileSync(pidFile, 'utf8'));
    strays.push(grandchild);
    const exit = await app.stop({ graceMs: 60_000 });
    expect(exit).toMatchObject({ signal: 'SIGTERM', expected: true, forced: false });
    await waitUntilGone(grandchild);
  });

  it('clears the process group when the root exits on its own, even while a descendant holds its output open', async () => {
    const pidFile = join(dir, 'grandchild.pid');
    const app = start(['sh', '-c', 'sleep 1000 & echo $! > "$0"; exit 7', pidFile]);
    const exit = await app.whenExited();
    expect(exit).toMatchObject({ code: 7, expected: false });
    const grandchild = Number(readFileSync(pidFile, 'utf8'));
    strays.push(grandchild);
    await waitUntilGone(grandchild);
  });

  it('stops waiting for output after OUTPUT_DRAIN_MS when an escaped descendant holds it open', async () => {
    const pidFile = join(dir, 'escaped.pid');
    // spawn() returns after exec, so the descendant is in its own session before the root exits.
    const root = `
      const gc = require('node:child_process').spawn('sleep', ['1000'], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
      require('node:fs').writeFileSync(process.argv[1], String(gc.pid));
      console.log('bye');
      process.exit(0);`;
    const app = start(nodeScript(root, pidFile));
    await lineFrom(app, 'bye');
    strays.push(Number(readFileSync(pidFile, 'utf8')));
    let exited = false;
    void app.whenExited().then(() => (exited = true));
    await vi.waitFor(() => expect(clock.pending).toBeGreaterThan(0), { timeout: 5_000, interval: 10 });
    expect(exited).toBe(false);
    clock.advance(OUTPUT_DRAIN_MS);
    const exit = await app.whenExited();
    expect(exit).toMatchObject({ code: 0, expected: false });
  });

  it('reports a binary that cannot be started as an exit with spawnError', async () => {
    const app = start([join(dir, 'no-such-app')]);
    expect(app.pid).toBeUndefined();
    const exit = await app.whenExited();
    expect(exit).toMatchObject({ code: null, signal: null, expected: false, forced: false });
    expect(exit.spawnError).toMatch(/ENOENT/);
  });

  it('keeps the last OUTPUT_RING_LINES lines and splits endless lines', async () => {
    const total = OUTPUT_RING_LINES + 50;
    const app = start(nodeScript(`for (let i = 0; i < ${total}; i++) console.log('line ' + i); process.stdout.write('x'.repeat(${MAX_LINE_CHARS * 2 + 5}))`));
    const exit = await app.whenExited();
    expect(exit.lastLines).toHaveLength(OUTPUT_RING_LINES);
    expect(exit.lastLines[0]!.text).toBe(`line ${total - OUTPUT_RING_LINES + 3}`);
    expect(exit.lastLines.slice(-3).map((l) => l.text.length)).toEqual([MAX_LINE_CHARS, MAX_LINE_CHARS, 5]);
  });

  it('appends the output to logPath, stderr marked, complete when the exit is reported', async () => {
    const logPath = join(dir, 'app-output.log');
    const app = start(nodeScript("console.log('out 1'); console.error('err 1'); console.log('out 2')"), { logPath });
    await app.whenExited();
    const text = readFileSync(logPath, 'utf8');
    expect(text.split('\n').filter(Boolean).sort()).toEqual(['[stderr] err 1', 'out 1', 'out 2']);
  });

  it('follows the Windows rules when told the platform is win32: taskkill /T, then /F after graceMs', async () => {
    const ran: string[][] = [];
    const app = start(nodeScript(`console.log('ready'); ${LOOP}`), {
      control: windowsProcessControl((argv) => {
        ran.push([...argv]);
        // A windowless app ignores WM_CLOSE; only /F ends it.
        if (argv.includes('/F')) process.kill(Number(argv[2]), 'SIGKILL');
        return Promise.resolve('');
      }),
    });
    await lineFrom(app, 'ready');
    const pid = String(app.pid);
    const stopping = app.stop({ graceMs: 3_000 });
    expect(ran).toEqual([['taskkill', '/PID', pid, '/T']]);
    clock.advance(3_000);
    const exit = await stopping;
    expect(ran).toEqual([
      ['taskkill', '/PID', pid, '/T'],
      ['taskkill', '/PID', pid, '/F'],
    ]);
    expect(exit).toMatchObject({ expected: true, forced: true });
  });

  it('refuses to start an app as a Windows account without the job launcher, the only one that can log it on', () => {
    expect(() => AppProcess.start({ command: ['node', '-e', ''], args: [], env: {}, log: silent, account: { kind: 'windows', name: 'pixelfleet-app-1' } })).toThrow(
      'a Windows account needs the job launcher, which logs it on',
    );
  });

  it('kills running apps when the agent process itself exits', async () => {
    const pidFile = join(dir, 'app.pid');
    const moduleUrl = new URL('./app-process.ts', import.meta.url).href;
    const agent = `
      import { AppProcess } from ${JSON.stringify(moduleUrl)};
      import { pino } from 'pino';
      const app = AppProcess.start({ command: ['sh', '-c', 'echo $$ > "$0"; echo ready; exec sleep 1000', ${JSON.stringify(pidFile)}], args: [], env: process.env, log: pino({ level: 'silent' }) });
      app.on('output', (l) => { if (l.text === 'ready') process.exit(0); });`;
    const result = await execa(NODE, ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', agent], { cwd: new URL('.', import.meta.url), reject: false, timeout: 8_000 });
    expect(result.exitCode).toBe(0);
    const appPid = Number(readFileSync(pidFile, 'utf8'));
    strays.push(appPid);
    await waitUntilGone(appPid);
  });

  it('records the app before it can outlive the agent: the record names it in its environment, gains its identity once spawned and goes when its exit is seen', async () => {
    const store = new AppRecordStore(dir);
    const app = start(nodeScript(`console.log(process.env.${APP_RECORD_ENV}); ${LOOP}`), { record: { store, sessionId: 'ses_1', uploadId: 'upl_1', buildDir: '/data/builds/upl_1' } });
    const [record] = store.load().records;
    expect(record).toMatchObject({ sessionId: 'ses_1', uploadId: 'upl_1', executable: NODE, buildDir: '/data/builds/upl_1', platform: 'linux', recordedAtMs: clock.now() });
    expect(record!.process).toEqual({
      pid: app.pid,
      pgid: app.pid,
      startTicks: readProcessStat(app.pid!)!.startTicks,
      bootId: expect.any(String) as unknown,
      bootTimeS: expect.any(Number) as unknown,
      exe: realpathSync(NODE),
    });
    await lineFrom(app, record!.id);
    const done = app.stop({ graceMs: 60_000 });
    expect(store.load().records).toHaveLength(1);
    await done;
    expect(store.load().records).toEqual([]);
  });

  it('starts nothing when the record cannot be written (nothing could find the app after a crash)', async () => {
    const store = new AppRecordStore(join(dir, 'not-a-folder'));
    writeFileSync(join(dir, 'not-a-folder'), 'a file where the data dir should be');
    const marker = join(dir, 'ran');
    expect(() => start(nodeScript(`require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x')`), { record: { store, sessionId: 'ses_1', uploadId: '', buildDir: undefined } }))
      .toThrow(expect.objectContaining({ name: 'LaunchError', code: 'CANNOT_RECORD_APP' }) as Error);
    // The same command with a usable store runs (and writes its marker): the refusal above was the record's.
    const ran = start(nodeScript(`require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x')`), { record: { store: new AppRecordStore(dir), sessionId: 'ses_1', uploadId: '', buildDir: undefined } });
    await ran.whenExited();
    expect(readFileSync(marker, 'utf8')).toBe('x');
  });

  describe('under a job launcher (app-job.exe on Windows; here a stand-in with its contract)', () => {
    /** Runs its arguments as one program with its stdio and exits with its code; a program it cannot start is its launch failure (code 243 and its stderr line). */
    function standInLauncher(): string {
      const path = join(dir, 'app-job-stand-in');
      writeFileSync(path, `#!${NODE}
const { spawn } = require('node:child_process');
const [file, ...args] = process.argv.slice(2);
const child = spawn(file, args, { stdio: 'inherit' });
child.on('error', (err) => {
  process.stderr.write('app-job: cannot start the app: ' + err.code + ' (Windows error 2)\\n');
  process.exit(243);
});
child.on('exit', (code) => process.exit(code ?? 1));
`, { mode: 0o755 });
      return path;
    }

    it("runs the app as the launcher's child: the pid is the launcher's, the record the app's, the exit code the app's", async () => {
      const store = new AppRecordStore(dir);
      const ran: string[][] = [];
      const app = start(nodeScript(`process.on('SIGTERM', () => process.exit(5)); console.log(JSON.stringify({ pid: process.pid, ppid: process.ppid, args: process.argv.slice(1) })); ${LOOP}`, 'a b', '-X="c d"'), {
        jobLauncher: standInLauncher(),
        control: windowsProcessControl((argv) => {
          ran.push([...argv]);
          return Promise.resolve('');
        }),
        record: { store, sessionId: 'ses_1', uploadId: 'upl_1', buildDir: '/data/builds/upl_1' },
      });
      const printed = await new Promise<{ pid: number; ppid: number; args: string[] }>((resolve) => app.once('output', (l) => resolve(JSON.parse(l.text) as never)));
      strays.push(printed.pid);
      expect(printed.ppid).toBe(app.pid);
      expect(printed.args).toEqual(['a b', '-X="c d"']);
      expect(store.load().records).toEqual([expect.objectContaining({ executable: NODE, windowsPid: app.pid, platform: 'win32', process: undefined })]);
      process.kill(printed.pid, 'SIGTERM');
      const exit = await app.whenExited();
      expect(exit).toMatchObject({ code: 5, signal: null, expected: false, spawnError: undefined });
      expect(ran).toEqual([]);
      expect(store.load().records).toEqual([]);
    });

    it("reports the launcher's own failure as a spawn error, without a code", async () => {
      const app = start([join(dir, 'no-such-binary')], { jobLauncher: standInLauncher() });
      expect(await app.whenExited()).toMatchObject({ code: null, spawnError: 'app-job: cannot start the app: ENOENT (Windows error 2)', expected: false });
    });

    it("keeps an app's own exit with one of the launcher's codes as the app's", async () => {
      const app = start(nodeScript("console.error('fatal'); process.exit(243)"), { jobLauncher: standInLauncher() });
      expect(await app.whenExited()).toMatchObject({ code: 243, spawnError: undefined });
    });
  });
});
