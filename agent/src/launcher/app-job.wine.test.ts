// The app-job launcher for real, under Wine 8 (Debian wine64; .ci/run installs it and mingw-w64):
// built here from its C source with job-probe.c, a stand-in app that starts a grandchild the way
// CrashReportClient would. Each Windows process is a Linux process under Wine, so SIGKILL is the
// agent (or the launcher) dying, and /proc shows which processes are left.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { APP_JOB_EXIT_CODES, appJobFailure, appJobSpawn } from './app-job';
import { compileWindowsProgram, buildAppJob } from './app-job-build';
import { isProcessGone, listProcesses, processHasEnv } from './process-identity';
import { foreignOwned, ownerListingCommand, parseOwnerListing } from '../service/folder-owners';
import { windowsProcessControl } from './process-control';
import { toWindowsUnrealArgs, windowsProgramArg } from './unreal-command-line';
import { parseListOutput, windowsKillPlan, windowsListPlan } from './windows-kill-plan';

const PROBE_SOURCE = fileURLToPath(new URL('../../native/app-job/test/job-probe.c', import.meta.url));
/** Every process a test starts carries this variable (Wine passes the environment on to the Linux processes), with a value of its own. */
const MARK = 'PIXELFLEET_WINE_TEST';

/** Debian puts wine64 and wineserver in /usr/lib/wine (the `wine` package adds the /usr/bin wrappers). */
function wineTool(names: readonly string[]): string {
  const folders = ['/usr/lib/wine', ...(process.env.PATH ?? '').split(delimiter)];
  for (const folder of folders) for (const name of names) if (existsSync(join(folder, name))) return join(folder, name);
  throw new Error(`${names.join(' or ')} not found: install Wine 8 (Debian: apt-get install --no-install-recommends wine64; .ci/run does)`);
}

let dir: string;
/** A folder with a space in its name, as C:\Program Files would be. */
let bin: string;
let wine: string;
let wineserver: string;
let wineEnv: Record<string, string | undefined>;
const running: { child: ChildProcess; mark: string }[] = [];
let marks = 0;

/**
 * How long a run may take to print an awaited line: about half a second on an idle machine, a few
 * seconds on a loaded one. Under the tree tests' own timeout, so the line's error is what a hang reports.
 */
const LINE_WAIT_MS = 20_000;
/** The timeout of a test that awaits lines and then the end of a process tree (allGone: 15 s). */
const TREE_TEST_MS = LINE_WAIT_MS + 20_000;

/** The Windows path Wine gives a Linux path (drive Z: is the root). */
const windowsPath = (path: string) => `Z:${path.replaceAll('/', '\\')}`;

interface WineRun {
  child: ChildProcess;
  mark: string;
  lines: string[];
  /**
   * Resolves with the first stdout or stderr line for which test is true; rejects after
   * LINE_WAIT_MS with the lines so far and the run's processes, so that a hang under Wine says
   * where it stood instead of running into the test's timeout.
   */
  line(test: (text: string) => boolean): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a Windows program under Wine with stdout and stderr read as lines; extraEnv reaches every process it starts. */
function runWine(args: readonly string[], extraEnv: Record<string, string> = {}): WineRun {
  const mark = `m${process.pid}-${++marks}`;
  const child = spawn(wine, args, { cwd: bin, env: { ...wineEnv, ...extraEnv, [MARK]: mark }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push({ child, mark });
  const lines: string[] = [];
  const waiters: { test: (text: string) => boolean; resolve: (text: string) => void }[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (text) => {
      lines.push(text);
      for (const w of waiters.splice(0)) {
        if (w.test(text)) w.resolve(text);
        else waiters.push(w);
      }
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return {
    child,
    mark,
    lines,
    exited,
    line: (test) => {
      const seen = lines.find(test);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const left = processesOf(mark);
          reject(new Error(`no such line after ${LINE_WAIT_MS} ms; lines: ${JSON.stringify(lines)}; processes: ${JSON.stringify(kinds(left))}; exit: ${child.exitCode ?? child.signalCode ?? 'running'}`));
        }, LINE_WAIT_MS);
        waiters.push({
          test,
          resolve: (text) => {
            clearTimeout(timer);
            resolve(text);
          },
        });
      });
    },
  };
}

/** The Linux processes of one run's Windows programs (not Wine's own services), by pid, with their command lines. */
function processesOf(mark: string): Map<number, string> {
  const found = new Map<number, string>();
  for (const p of listProcesses()) {
    if (!processHasEnv(p.pid, MARK, mark)) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    } catch {
      continue;
    }
    if (/job-probe\.exe|app-job\.exe/.test(cmdline)) found.set(p.pid, cmdline);
  }
  return found;
}

function killAll(mark: string): void {
  for (const pid of processesOf(mark).keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** What each process of a run is, from its command line, sorted. */
function kinds(processes: Map<number, string>): string[] {
  return [...processes.values()]
    .map((c) => (/app-job\.exe/.test(c) ? 'launcher' : / as-agent/.test(c) ? 'agent' : / tree /.test(c) ? 'app' : / watch /.test(c) ? 'grandchild' : c))
    .sort();
}

/** The grandchild's pid, from the processes of a run: the probe in `watch` mode. */
function grandchildOf(mark: string): number {
  const [pid] = [...processesOf(mark)].find(([, cmdline]) => / watch \d+ /.test(cmdline)) ?? [];
  if (pid === undefined) throw new Error(`no grandchild among ${JSON.stringify([...processesOf(mark)])}`);
  return pid;
}

/** Starts a run whose app is `job-probe.exe tree` and waits until the grandchild is up; tree: the run's processes then. */
async function treeRun(args: readonly string[], extraEnv: Record<string, string> = {}): Promise<{ run: WineRun; tree: Map<number, string> }> {
  const run = runWine(args, extraEnv);
  await run.line((t) => t.startsWith('watching'));
  return { run, tree: processesOf(run.mark) };
}

/** Resolves once every process of tree is gone (the kernel's view: gone or a zombie). */
const allGone = (tree: Map<number, string>) =>
  vi.waitFor(() => expect([...tree.keys()].filter((pid) => !isProcessGone(pid))).toEqual([]), { timeout: 15_000, interval: 50 });

beforeAll(async () => {
  wine = wineTool(['wine64', 'wine']);
  wineserver = wineTool(['wineserver']);
  dir = mkdtempSync(join(tmpdir(), 'pixelfleet-wine-'));
  bin = join(dir, 'agent bin');
  mkdirSync(bin);
  await Promise.all([buildAppJob(join(bin, 'app-job.exe')), compileWindowsProgram(PROBE_SOURCE, join(bin, 'job-probe.exe'), ['-municode'])]);
  wineEnv = { ...process.env, WINEPREFIX: join(dir, 'prefix'), WINEDEBUG: '-all' };
  // A persistent server keeps Wine's own services up between the tests: they start once, with
  // the prefix's first start here (about 7 s).
  mkdirSync(wineEnv.WINEPREFIX!);
  await execa(wineserver, ['-p'], { env: wineEnv, stdio: 'ignore' }); // it forks into the background
  // Without pipes: the services this first process starts would inherit and hold them open.
  const first = await execa(wine, ['job-probe.exe', 'exit', '7'], { cwd: bin, env: wineEnv, stdio: 'ignore', reject: false, timeout: 150_000 });
  expect(first.exitCode).toBe(7);
}, 180_000);

afterEach(() => {
  for (const { child, mark } of running.splice(0)) {
    child.kill('SIGKILL');
    killAll(mark);
  }
});

afterAll(async () => {
  if (wineserver !== undefined && dir !== undefined) await execa(wineserver, ['-k'], { env: wineEnv, reject: false });
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}, 30_000);

describe('app-job.exe under Wine', () => {
  it("gives the app the agent's verbatim command line after its own name, and exits with the app's code", async () => {
    const probe = windowsPath(join(bin, 'job-probe.exe'));
    const direct = {
      file: probe,
      args: toWindowsUnrealArgs(['cmdline', 'CityDemo', '-PixelStreamingURL=ws://127.0.0.1:50123', '-ABSLOG=C:\\Pixel Fleet\\sessions\\ses_1\\CityDemo.log']),
      argv0: windowsProgramArg(probe),
      windowsVerbatimArguments: true,
    };
    const spawned = appJobSpawn(windowsPath(join(bin, 'app-job.exe')), direct);
    // job-probe as-agent starts JOB_PROBE_COMMAND_LINE as it is, as libuv does with windowsVerbatimArguments.
    const run = runWine(['job-probe.exe', 'as-agent'], { JOB_PROBE_COMMAND_LINE: [spawned.argv0, ...spawned.args].join(' ') });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(run.lines).toContain(`"${probe}" cmdline CityDemo -PixelStreamingURL=ws://127.0.0.1:50123 -ABSLOG="C:\\Pixel Fleet\\sessions\\ses_1\\CityDemo.log"`);

    const exit = runWine(['job-probe.exe', 'as-agent'], { JOB_PROBE_COMMAND_LINE: `${spawned.argv0} ${direct.argv0} exit 42` });
    expect(await exit.exited).toEqual({ code: 42, signal: null });
  });

  it('fails with its own code and one stderr line when it cannot start the app, or is given none', async () => {
    const missing = runWine(['app-job.exe', 'no-such-app.exe', '-x']);
    const { code } = await missing.exited;
    expect(code).toBe(APP_JOB_EXIT_CODES.launch);
    expect(appJobFailure(code, missing.lines.map((text) => ({ stream: 'stderr', text })))).toMatch(/^app-job: cannot start the app: .+ \(Windows error 2\)$/);

    const usage = runWine(['app-job.exe']);
    expect((await usage.exited).code).toBe(APP_JOB_EXIT_CODES.usage);
    expect(usage.lines).toContain('app-job: no app command line given (usage: app-job.exe [--account <name>] <app command line>)');
  });

  it('never starts the app as the agent when it cannot log its account on (Wine has no S4U logon: the path a missing right or a non-LocalSystem service takes)', async () => {
    const probe = windowsPath(join(bin, 'job-probe.exe'));
    const spawned = appJobSpawn(windowsPath(join(bin, 'app-job.exe')), { file: probe, args: ['cmdline'], argv0: windowsProgramArg(probe), windowsVerbatimArguments: true }, 'pixelfleet-app-1');
    expect(spawned.args.slice(0, 2)).toEqual(['--account', 'pixelfleet-app-1']);
    const run = runWine(['job-probe.exe', 'as-agent'], { JOB_PROBE_COMMAND_LINE: [spawned.argv0, ...spawned.args].join(' ') });
    const { code } = await run.exited;
    expect(code).toBe(APP_JOB_EXIT_CODES.logon);
    // The probe prints its command line first thing: no line of it means it never ran.
    expect(run.lines.some((line) => line.includes('cmdline'))).toBe(false);
    expect(appJobFailure(code, run.lines.map((text) => ({ stream: 'stderr', text })))).toMatch(/^app-job: cannot (log|find)[^:]*: .+ \(Windows error \d+\)$/);
  });

  it.each([
    { args: ['--account'], line: 'app-job: an account option needs a name' },
    { args: ['--account', 'pixelfleet/app', 'job-probe.exe'], line: "app-job: an account name is 1 to 20 letters, digits, '-', '_' or '.'" },
    { args: ['--account', 'a'.repeat(21), 'job-probe.exe'], line: "app-job: an account name is 1 to 20 letters, digits, '-', '_' or '.'" },
    { args: ['--account', 'pixelfleet-app-1'], line: 'app-job: no app command line given (usage: app-job.exe [--account <name>] <app command line>)' },
    { args: ['--prepare-account', 'pixelfleet-app-1', 'extra'], line: 'app-job: nothing may follow the account name of --prepare-account or --remove-account' },
  ])('refuses $args with a usage line', async ({ args, line }) => {
    const run = runWine(['app-job.exe', ...args]);
    expect((await run.exited).code).toBe(APP_JOB_EXIT_CODES.usage);
    expect(run.lines).toEqual([line]);
  });

  it.each<{ who: string; args: string[]; env: Record<string, string>; kinds: string[] }>([
    { who: 'the agent is killed', args: ['job-probe.exe', 'as-agent'], env: { JOB_PROBE_COMMAND_LINE: 'app-job.exe job-probe.exe tree 60' }, kinds: ['agent', 'app', 'grandchild', 'launcher'] },
    { who: 'the launcher itself is killed', args: ['app-job.exe', 'job-probe.exe', 'tree', '60'], env: {}, kinds: ['app', 'grandchild', 'launcher'] },
  ])("ends the app's whole tree when $who: the app's grandchild is in the job and cannot break away", async ({ args, env, kinds: expected }) => {
    const { run, tree } = await treeRun(args, env);
    expect(run.lines).toEqual(expect.arrayContaining(['breakaway refused 5', 'watching, in a job: yes']));
    expect(kinds(tree)).toEqual(expected);
    const grandchild = grandchildOf(run.mark);

    run.child.kill('SIGKILL');
    await allGone(tree);
    expect(isProcessGone(grandchild)).toBe(true);
  }, TREE_TEST_MS);

  it("ends the app's whole tree when the agent force-stops the launcher (the agent's taskkill /F, no /T: the job ends the tree)", async () => {
    const { run, tree } = await treeRun(['app-job.exe', 'job-probe.exe', 'tree', '60']);
    const launcherPid = Number(/^parent (\d+)$/.exec(await run.line((t) => t.startsWith('parent ')))?.[1]);
    const forced = windowsKillPlan(launcherPid).forced;
    const taskkill = await execa(wine, forced, { env: wineEnv, reject: false, stdin: 'ignore' });
    expect(taskkill.exitCode).toBe(0);
    await allGone(tree);
  }, TREE_TEST_MS);

  it("--sweep force-stops what runs from one folder, spares another folder's, and says how many (the agent's ProcessControl on its output)", async () => {
    // Two copies of the probe, each started outside any job, as a leftover would be: one from a
    // build folder with a space in its name, one from a sibling whose name extends it.
    const build = join(dir, 'builds', 'upl 1');
    const sibling = join(dir, 'builds', 'upl 1x');
    for (const folder of [build, sibling]) {
      mkdirSync(folder, { recursive: true });
      copyFileSync(join(bin, 'job-probe.exe'), join(folder, 'job-probe.exe'));
    }
    const swept = await treeRun([windowsPath(join(build, 'job-probe.exe')), 'tree', '60']);
    const spared = await treeRun([windowsPath(join(sibling, 'job-probe.exe')), 'tree', '60']);
    // What the agent runs, through its own parser: execa under Wine instead of on Windows.
    const ran: (readonly string[])[] = [];
    const control = windowsProcessControl(async (argv) => {
      ran.push(argv);
      const r = await execa(wine, argv, { cwd: bin, env: wineEnv, stdin: 'ignore', reject: false });
      if (r.exitCode !== 0) throw new Error(`${argv.join(' ')}: exit ${r.exitCode}: ${r.stderr}`);
      return r.stdout;
    }, windowsPath(join(bin, 'app-job.exe')));
    // --list finds them without stopping them.
    const listed = await execa(wine, windowsListPlan(windowsPath(join(bin, 'app-job.exe')), windowsPath(build)), { cwd: bin, env: wineEnv, stdin: 'ignore' });
    expect(parseListOutput(listed.stdout)).toHaveLength(2);
    expect([...swept.tree.keys()].filter((pid) => isProcessGone(pid))).toEqual([]);
    const stopped = await control.sweepFolder(windowsPath(build));
    expect(ran).toEqual([[windowsPath(join(bin, 'app-job.exe')), '--sweep', windowsPath(build)]]);
    // The probe and its grandchild: two Windows processes, whatever their Linux pids.
    expect(stopped).toHaveLength(2);
    await allGone(swept.tree);
    expect([...spared.tree.keys()].filter((pid) => isProcessGone(pid))).toEqual([]);
    // A second sweep finds nothing and still answers.
    expect(await control.sweepFolder(windowsPath(build))).toEqual([]);
  }, TREE_TEST_MS);

  it("--owners lists the installer, each parent alone and each root with everything in it, without entering a link; the install's own parser reads it", async () => {
    const root = join(dir, 'owners', 'state dir');
    mkdirSync(join(root, 'data', 'deep'), { recursive: true });
    writeFileSync(join(root, 'data', 'deep', 'worker.json'), '{}');
    writeFileSync(join(root, 'agent.json'), '{}');
    // A link to a folder full of files: listed as itself, never walked (a junction a user planted
    // would otherwise make the listing read, and judge, a folder outside the install).
    symlinkSync(bin, join(root, 'elsewhere'));
    const argv = ownerListingCommand(windowsPath(join(bin, 'app-job.exe')), [windowsPath(root)], [windowsPath(join(dir, 'owners'))]);
    const r = await execa(wine, argv, { cwd: bin, env: wineEnv, stdin: 'ignore', reject: false });
    expect(r.exitCode).toBe(0);
    const listing = parseOwnerListing(r.stdout);
    expect(listing.installerSid).toMatch(/^S-1-5-21-/);
    expect(listing.entries.map((e) => e.path).sort()).toEqual(
      [join(dir, 'owners'), root, join(root, 'agent.json'), join(root, 'data'), join(root, 'data', 'deep'), join(root, 'data', 'deep', 'worker.json'), join(root, 'elsewhere')].map(windowsPath).sort(),
    );
    // Wine makes the installer the owner of everything: all trusted, as an administrator's own folders are.
    expect(foreignOwned(listing)).toEqual([]);

    const missing = await execa(wine, ownerListingCommand(windowsPath(join(bin, 'app-job.exe')), [windowsPath(join(dir, 'no such folder'))], []), { cwd: bin, env: wineEnv, stdin: 'ignore', reject: false });
    expect(missing.exitCode).toBe(APP_JOB_EXIT_CODES.owners);
    expect(missing.stderr).toContain('app-job: cannot read the owner of the path above');
  }, TREE_TEST_MS);

  describe('control: the same kills without the launcher leave the grandchild running (what the tests above would catch)', () => {
    it("the agent's own job (libuv's: silent breakaway) ends the app but not the app's child", async () => {
      const { run } = await treeRun(['job-probe.exe', 'as-agent'], { JOB_PROBE_COMMAND_LINE: 'job-probe.exe tree 60' });
      expect(run.lines).toContain('watching, in a job: no');
      const grandchild = grandchildOf(run.mark);
      run.child.kill('SIGKILL');
      // The grandchild says so once the app (its parent) is gone: killed with the agent's job.
      await run.line((t) => t === 'parent gone');
      expect(isProcessGone(grandchild)).toBe(false);
    }, TREE_TEST_MS);

    it("killing the app's parent leaves its child", async () => {
      const { run } = await treeRun(['job-probe.exe', 'tree', '60']);
      const grandchild = grandchildOf(run.mark);
      run.child.kill('SIGKILL');
      await run.line((t) => t === 'parent gone');
      expect(isProcessGone(grandchild)).toBe(false);
    }, TREE_TEST_MS);
  });
});
