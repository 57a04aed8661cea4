// Log collection on real files in a temp build folder, with mtimes set around the session's start:
// what this run wrote is taken, what an earlier run or a concurrent session of the same build
// wrote is not, names stay unique and acceptable to the control plane, and no log is no entry.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectSessionLogs, CRASH_CONTEXT_FILE, MAX_SESSION_LOG_FILES, MTIME_TOLERANCE_MS, safeLogFileName, type SessionLogSources } from './collect-logs';

const START = Date.parse('2026-06-01T12:00:00Z');
let root: string;
let sessionDir: string;
let savedDir: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pf-collect-'));
  sessionDir = join(root, 'sessions', 'ses_1');
  savedDir = join(root, 'builds', 'upl_1', 'Game', 'Saved');
  mkdirSync(sessionDir, { recursive: true });
  mkdirSync(join(savedDir, 'Logs'), { recursive: true });
  mkdirSync(join(savedDir, 'Crashes'), { recursive: true });
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Writes a file and sets its mtime to `at` (ms). */
function file(path: string, content: string, at: number): string {
  writeFileSync(path, content);
  utimesSync(path, at / 1000, at / 1000);
  return path;
}

/** A crash folder with a context naming `pid` and `commandLine`, all files and the folder at `at`. */
function crash(name: string, at: number, context?: { pid: number; commandLine: string }): string {
  const dir = join(savedDir, 'Crashes', name);
  mkdirSync(dir);
  if (context) {
    file(join(dir, CRASH_CONTEXT_FILE), `<FGenericCrashContext><RuntimeProperties><ProcessId>${context.pid}</ProcessId><CommandLine>${context.commandLine.replace(/&/g, '&amp;')}</CommandLine></RuntimeProperties></FGenericCrashContext>`, at);
  }
  file(join(dir, 'UEMinidump.dmp'), 'MDMP', at);
  utimesSync(dir, at / 1000, at / 1000);
  return dir;
}

function sources(over: Partial<SessionLogSources> = {}): SessionLogSources {
  return { sessionId: 'ses_1', startedAtMs: START, absLogPath: join(sessionDir, 'Game.log'), outputLogPath: join(sessionDir, 'app-output.log'), savedDir, pid: 4242, ...over };
}

describe('collectSessionLogs', () => {
  it('takes the -ABSLOG file, this run\'s crash folders, the output and Saved/Logs files written since the start, in that order', async () => {
    file(join(sessionDir, 'Game.log'), 'engine log', START + 5_000);
    file(join(sessionDir, 'app-output.log'), 'stdout', START + 5_000);
    file(join(savedDir, 'Logs', 'Plugin.log'), 'plugin', START + 1_000);
    file(join(savedDir, 'Logs', 'Game-backup-2026.05.31.log'), 'an older run', START - 3_600_000);
    file(join(savedDir, 'Logs', 'notes.txt'), 'not a .log', START + 1_000);
    crash('UECC-Linux-OLD_0000', START - 86_400_000);
    const ours = crash('UECC-Linux-OURS_0000', START + 4_000, { pid: 4242, commandLine: `Game -ABSLOG=${join(sessionDir, 'Game.log')}` });

    const { logs, skipped } = await collectSessionLogs(sources());

    expect(skipped).toEqual([]);
    expect(logs).toEqual([
      { kind: 'file', fileName: 'Game.log', path: join(sessionDir, 'Game.log'), size: 10, owned: true },
      { kind: 'crash', fileName: 'Crash-UECC-Linux-OURS_0000.zip', dir: ours },
      { kind: 'file', fileName: 'app-output.log', path: join(sessionDir, 'app-output.log'), size: 6, owned: true },
      { kind: 'file', fileName: 'Plugin.log', path: join(savedDir, 'Logs', 'Plugin.log'), size: 6, owned: false },
    ]);
  });

  it('claims a crash folder by its context (process id or our -ABSLOG), leaves a concurrent session\'s, and judges one without a context by its mtime', async () => {
    const absLog = join(sessionDir, 'Game.log');
    const byPid = crash('A_byPid', START + 1_000, { pid: 4242, commandLine: 'Game -ABSLOG=/elsewhere/Game.log' });
    const byCommandLine = crash('B_byCommandLine', START + 2_000, { pid: 1, commandLine: `Game -PixelStreamingID=x -ABSLOG=${absLog} -Unattended` });
    crash('C_concurrentSession', START + 3_000, { pid: 777, commandLine: 'Game -ABSLOG=/data/sessions/ses_2/Game.log' });
    const noContext = crash('D_noContext', START + 4_000);
    // Within the tolerance of a coarse file system timestamp: still this run's.
    const rounded = crash('E_rounded', START - MTIME_TOLERANCE_MS + 1);
    crash('F_tooOld', START - MTIME_TOLERANCE_MS - 1);

    const { logs } = await collectSessionLogs(sources());

    expect(logs.map((l) => (l.kind === 'crash' ? l.dir : l.fileName))).toEqual([rounded, byPid, byCommandLine, noContext]);
  });

  it("under the Windows app-job launcher (the app's pid unknown) a crash folder is ours by our -ABSLOG however it is spelled, theirs by another, else judged by its mtime", async () => {
    const absLog = 'C:\\Pixelfleet\\data\\sessions\\ses_1\\Game.log';
    // The engine's copy of its command line: forward slashes, another case, quoted.
    const ours = crash('A_ours', START + 1_000, { pid: 9100, commandLine: 'Game.exe "-ABSLOG=c:/pixelfleet/data/sessions/ses_1/game.log" -Unattended' });
    crash('B_theirs', START + 2_000, { pid: 9200, commandLine: 'Game.exe -ABSLOG=C:\\Pixelfleet\\data\\sessions\\ses_2\\Game.log' });
    const noAbsLog = crash('C_noAbsLog', START + 3_000, { pid: 9300, commandLine: 'Game.exe -Unattended' });
    crash('D_oldNoAbsLog', START - 86_400_000, { pid: 9400, commandLine: 'Game.exe -Unattended' });

    const { logs } = await collectSessionLogs(sources({ pid: undefined, absLogPath: absLog }));

    expect(logs.filter((l) => l.kind === 'crash').map((l) => (l.kind === 'crash' ? l.dir : ''))).toEqual([ours, noAbsLog]);
  });

  it('a crash folder counts by its newest file: an old folder the crash reporter wrote into during the run is taken', async () => {
    const dir = crash('UECC-Linux-REUSED_0000', START - 86_400_000);
    file(join(dir, 'Game.log'), 'copied at the crash', START + 2_000);
    utimesSync(dir, (START - 86_400_000) / 1000, (START - 86_400_000) / 1000);
    expect((await collectSessionLogs(sources())).logs).toEqual([{ kind: 'crash', fileName: 'Crash-UECC-Linux-REUSED_0000.zip', dir }]);
  });

  it('no log at all (a Shipping build without logging, an app that never started) is an empty list, not an error', async () => {
    expect(await collectSessionLogs(sources())).toEqual({ logs: [], skipped: [] });
    file(join(sessionDir, 'Game.log'), '', START + 1_000); // opened, never written
    expect(await collectSessionLogs(sources({ savedDir: join(root, 'no-such-build', 'Saved') }))).toEqual({ logs: [], skipped: [] });
    expect(await collectSessionLogs(sources({ absLogPath: undefined, outputLogPath: undefined, savedDir: undefined }))).toEqual({ logs: [], skipped: [] });
  });

  it('keeps names unique and acceptable to the control plane, and stops at the files a session may keep', async () => {
    file(join(sessionDir, 'Game.log'), 'engine', START + 1_000);
    file(join(savedDir, 'Logs', 'Game.log'), 'a second Game.log', START + 1_000);
    for (let i = 0; i < MAX_SESSION_LOG_FILES; i++) file(join(savedDir, 'Logs', `extra ${i}.log`), 'x', START + 2_000 + i);
    crash('UECC{weird}name', START + 1_000);

    const { logs, skipped } = await collectSessionLogs(sources());

    expect(logs).toHaveLength(MAX_SESSION_LOG_FILES);
    expect(logs.map((l) => l.fileName)).toEqual(['Game.log', 'Crash-UECC_weird_name.zip', 'Saved-Game.log', 'extra 0.log', 'extra 1.log', 'extra 2.log', 'extra 3.log', 'extra 4.log']);
    expect(skipped).toEqual([5, 6, 7].map((i) => join(savedDir, 'Logs', `extra ${i}.log`)));
  });

  it('safeLogFileName maps anything to a name the control plane accepts', () => {
    expect(safeLogFileName('Game.log')).toBe('Game.log');
    expect(safeLogFileName('.hidden/..\\x:y.log')).toBe('x.hidden_.._x_y.log');
    expect(safeLogFileName('é'.repeat(300))).toHaveLength(200);
  });
});
