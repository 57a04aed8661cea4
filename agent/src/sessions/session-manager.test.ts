// SessionManager on the injected clock: the times it reports (session events, the Hello's
// startedAtMs) and its sessions' startup timeout come from the clock it was given, not Date.now();
// its build commands and inventory, handed to the build cache; and the sweep of a build's folder
// after its last session, with real processes.
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentSessionEvent, StartSessionCommand } from '@pixelfleet/proto';
import { ManualClock } from '@pixelfleet/common';
import { BuildCache } from '../build-cache/build-cache';
import { AppAccounts } from '../launcher/app-accounts';
import { posixProcessControl, type ProcessControl } from '../launcher/process-control';
import { isProcessGone } from '../launcher/process-identity';
import { SessionManager } from './session-manager';

const COMMAND: StartSessionCommand = {
  kind: 'startSession', sessionId: 'session_1_1', projectId: 'prj_1', uploadId: 'upl_1', streamingId: 'streamer_1', playerId: 'player_1_1', codec: 'H264',
  minBitrateBps: 1_000_000, maxBitrateBps: 8_000_000, resX: 1280, resY: 720, fps: 30, launchArgs: [], maxRunTimeMinutes: 0, startupTimeoutSeconds: 20, warm: false,
};

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('SessionManager on the injected clock', () => {
  it('stamps events and running sessions with the clock, and times the startup out on it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-sessions-'));
    dirs.push(dir);
    const T0 = Date.parse('2026-05-01T00:00:00Z');
    const clock = new ManualClock(T0);
    const events: AgentSessionEvent[] = [];
    const uploaded: string[] = [];
    const manager = new SessionManager({
      slots: 1,
      dataDir: dir,
      // An app that never dials its signalling.
      launcherCommand: [process.execPath, '-e', 'setInterval(() => undefined, 60000)'],
      appEnv: {},
      ice: { iceServers: [], hostAddresses: ['127.0.0.1'] },
      report: (e) => events.push(e),
      signal: () => undefined,
      spoolLogs: (logs) => {
        uploaded.push(logs.sessionId);
        return Promise.resolve();
      },
      log: pino({ level: 'silent' }),
      clock,
    });
    const started = manager.handlers.startSession(COMMAND);
    started.catch(() => undefined);
    await vi.waitFor(() => expect(events.map((e) => e.kind)).toEqual(['appStarted']), { timeout: 10_000, interval: 10 });
    expect(events[0]).toEqual({ sessionId: 'session_1_1', kind: 'appStarted', occurredAtMs: T0, exitCode: 0, message: '', streamingId: '' });
    expect(manager.runningSessions()).toEqual([{ sessionId: 'session_1_1', projectId: 'prj_1', startedAtMs: T0 }]);

    clock.advance(20_000);
    await expect(started).rejects.toMatchObject({ code: 'STARTUP_TIMEOUT' });
    await vi.waitFor(
      () => {
        clock.advance(1_000); // the stop grace and the output drain run on the same clock
        expect(uploaded).toEqual(['session_1_1']);
      },
      { timeout: 10_000, interval: 20 },
    );
    const stoppedAt = events.at(-1)?.occurredAtMs ?? 0;
    expect(stoppedAt >= T0 + 20_000 && stoppedAt <= clock.now()).toBe(true); // clock time, not the wall clock
    expect(manager.runningSessions()).toEqual([]);
  });
});

describe('SessionManager with appAccounts (Linux, as root)', () => {
  /** A fresh data folder made traversable-only, as the agent's start does. */
  function accountsDir(): string {
    if (process.platform !== 'linux' || process.getuid?.() !== 0) throw new Error('this test starts apps under other uids: run it on Linux as root (CI does)');
    const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-sessions-'));
    dirs.push(dir);
    return dir;
  }

  /** One slot; the app is a node one-liner; spooled logs are recorded by session id. */
  function managerWithAccounts(dir: string, accounts: AppAccounts, appScript: string, extra: { clock?: ManualClock } = {}) {
    const spooled: string[] = [];
    const manager = new SessionManager({
      slots: 1,
      dataDir: dir,
      launcherCommand: [process.execPath, '-e', appScript],
      appEnv: { PATH: process.env.PATH ?? '' },
      ice: { iceServers: [], hostAddresses: ['127.0.0.1'] },
      report: () => undefined,
      signal: () => undefined,
      spoolLogs: (logs) => {
        spooled.push(logs.sessionId);
        return Promise.resolve();
      },
      log: pino({ level: 'silent' }),
      ...(extra.clock ? { clock: extra.clock } : {}),
      appAccounts: accounts,
    });
    return { manager, spooled };
  }

  it('starts the app under an account of its own, with its session folder as HOME, and takes the account back once the session is over', async () => {
    const dir = accountsDir();
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    const accounts = new AppAccounts(dir, { firstId: 64_200, count: 1 });
    await accounts.protectDataDir();
    // An app that says who it runs as, in its HOME, and never dials its signalling.
    const { manager, spooled } = managerWithAccounts(dir, accounts, 'require("fs").writeFileSync(process.env.HOME + "/whoami", String(process.getuid())); setInterval(() => undefined, 60000)', { clock });
    const started = manager.handlers.startSession({ ...COMMAND, uploadId: '' });
    started.catch(() => undefined);
    const sessionDir = join(dir, 'sessions', COMMAND.sessionId);
    await vi.waitFor(() => expect(readFileSync(join(sessionDir, 'whoami'), 'utf8')).toBe('64200'), { timeout: 10_000, interval: 20 });
    expect(accounts.inUse).toBe(1);

    clock.advance(20_000); // the startup timeout: the app is stopped
    await expect(started).rejects.toMatchObject({ code: 'STARTUP_TIMEOUT' });
    await vi.waitFor(
      () => {
        clock.advance(1_000);
        expect(spooled).toEqual([COMMAND.sessionId]);
        expect(accounts.inUse).toBe(0);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(statSync(sessionDir)).toMatchObject({ uid: 0, gid: 0 });
  });

  it('honours a stop that arrives while the app account is being granted: nothing is launched and the account comes back', async () => {
    const dir = accountsDir();
    let grantEntered!: () => void;
    const entered = new Promise<void>((resolve) => (grantEntered = resolve));
    let finishGrant!: () => void;
    const held = new Promise<void>((resolve) => (finishGrant = resolve));
    // The grant first ends what runs under the uid: held here until the stop has come.
    const accounts = new AppAccounts(dir, { firstId: 64_210, count: 1 }, async () => {
      grantEntered();
      await held;
      return 0;
    });
    await accounts.protectDataDir();
    const { manager } = managerWithAccounts(dir, accounts, 'require("fs").writeFileSync(process.env.HOME + "/launched", "yes"); setInterval(() => undefined, 60000)');
    const started = manager.handlers.startSession({ ...COMMAND, uploadId: '' });
    started.catch(() => undefined);
    await entered;
    await manager.handlers.stopSession({ kind: 'stopSession', sessionId: COMMAND.sessionId, reason: 'viewer left', graceMs: 1_000 });
    finishGrant();
    await expect(started).rejects.toMatchObject({ code: 'STOPPED' });
    await vi.waitFor(() => expect(accounts.inUse).toBe(0), { timeout: 10_000, interval: 20 });
    expect(existsSync(join(dir, 'sessions', COMMAND.sessionId, 'launched'))).toBe(false);
  });
});

describe('SessionManager build commands', () => {
  function manager(dataDir: string, builds?: BuildCache): SessionManager {
    return new SessionManager({
      slots: 1,
      dataDir,
      launcherCommand: undefined,
      appEnv: {},
      ice: { iceServers: [], hostAddresses: ['127.0.0.1'] },
      report: () => undefined,
      signal: () => undefined,
      spoolLogs: () => Promise.resolve(),
      log: pino({ level: 'silent' }),
      ...(builds ? { builds } : {}),
    });
  }

  it('hands DeleteBuild to the build cache and reports its builds in the Hello inventory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-sessions-'));
    dirs.push(dir);
    // A build a previous run prepared: its folder and index record.
    const buildsDir = join(dir, 'builds');
    mkdirSync(join(buildsDir, 'upl_1'), { recursive: true });
    const manifest = { platform: 'linux', projectName: 'Game', executable: 'Game/Binaries/Linux/Game-Linux-Shipping', baseArgs: ['Game'], fileCount: 3, totalBytes: 10 };
    writeFileSync(join(buildsDir, 'index.json'), JSON.stringify({ version: 1, builds: [{ uploadId: 'upl_1', projectId: 'prj_1', sha256: 'a'.repeat(64), archiveBytes: 9, manifest, preparedAtMs: 1 }] }));
    const cache = new BuildCache({ dir: buildsDir, maxBytes: 1_000, clock: new ManualClock(), log: pino({ level: 'silent' }) });
    const sessions = manager(dir, cache);
    expect(sessions.cachedBuilds()).toEqual([{ uploadId: 'upl_1', sha256: 'a'.repeat(64), ready: true }]);
    await sessions.handlers.deleteBuild({ kind: 'deleteBuild', uploadId: 'upl_1' });
    expect(sessions.cachedBuilds()).toEqual([]);
    expect(existsSync(join(buildsDir, 'upl_1'))).toBe(false);
    await cache.close();
  });

  it('refuses PrepareBuild UNSUPPORTED without a build cache', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-sessions-'));
    dirs.push(dir);
    const sessions = manager(dir);
    await expect(
      sessions.handlers.prepareBuild({ kind: 'prepareBuild', uploadId: 'upl_1', projectId: 'prj_1', downloadUrl: 'http://127.0.0.1:9/x', sizeBytes: 1, sha256: 'a'.repeat(64) }, () => undefined),
    ).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    expect(sessions.cachedBuilds()).toEqual([]);
  });
});

describe('SessionManager: what a session leaves running from its build folder', { timeout: 30_000 }, () => {
  const strays: number[] = [];
  afterEach(() => {
    for (const pid of strays.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone: what the tests check.
      }
    }
  });

  /**
   * A Linux build whose binary, as a real Unreal app's crash reporter does, starts a helper from
   * its own folder that leaves the app's process group (so stopping the app's tree misses it), and
   * appends the helper's pid to `<binaries>/helpers`. The app itself never dials its signalling.
   */
  function writeBuild(buildsDir: string, uploadId: string): { binaries: string; record: object } {
    const binaries = join(buildsDir, uploadId, 'Game', 'Binaries', 'Linux');
    mkdirSync(binaries, { recursive: true });
    copyFileSync(realpathSync('/bin/sleep'), join(binaries, 'CrashReportClient'));
    const exe = join(binaries, 'Game-Linux-Shipping');
    writeFileSync(exe, '#!/bin/sh\nhere=$(dirname "$0")\nsetsid "$here/CrashReportClient" 300 &\necho $! >> "$here/helpers"\nexec sleep 300\n');
    chmodSync(exe, 0o755);
    const manifest = { platform: 'linux', projectName: 'Game', executable: 'Game/Binaries/Linux/Game-Linux-Shipping', baseArgs: ['Game'], fileCount: 2, totalBytes: 10 };
    return { binaries, record: { uploadId, projectId: 'prj_1', sha256: 'a'.repeat(64), archiveBytes: 9, manifest, preparedAtMs: 1 } };
  }

  function helpersOf(binaries: string): number[] {
    const path = join(binaries, 'helpers');
    if (!existsSync(path)) return [];
    const pids = readFileSync(path, 'utf8').split('\n').filter(Boolean).map(Number);
    for (const pid of pids) if (!strays.includes(pid)) strays.push(pid);
    return pids;
  }

  function setUp(control: ProcessControl = posixProcessControl('linux')) {
    const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-sessions-'));
    dirs.push(dir);
    const buildsDir = join(dir, 'builds');
    const one = writeBuild(buildsDir, 'upl_1');
    const two = writeBuild(buildsDir, 'upl_2');
    writeFileSync(join(buildsDir, 'index.json'), JSON.stringify({ version: 1, builds: [one.record, two.record] }));
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    const events: AgentSessionEvent[] = [];
    const finished: string[] = [];
    /** Whether the session's build folder was still there when its logs were spooled. */
    const buildThereAtSpool = new Map<string, boolean>();
    const builds = new BuildCache({ dir: buildsDir, maxBytes: 1_000_000, clock, log: pino({ level: 'silent' }) });
    const manager = new SessionManager({
      slots: 2,
      dataDir: dir,
      launcherCommand: undefined,
      appEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      ice: { iceServers: [], hostAddresses: ['127.0.0.1'] },
      report: (e) => events.push(e),
      signal: () => undefined,
      spoolLogs: (logs) => {
        finished.push(logs.sessionId);
        buildThereAtSpool.set(logs.sessionId, logs.savedDir !== undefined && existsSync(join(logs.savedDir, '..')));
        return Promise.resolve();
      },
      log: pino({ level: 'silent' }),
      clock,
      builds,
      processControl: control,
    });
    const start = (sessionId: string, uploadId: string, overrides: Partial<StartSessionCommand> = {}) => {
      const started = manager.handlers.startSession({ ...COMMAND, sessionId, uploadId, startupTimeoutSeconds: 600, ...overrides });
      started.catch(() => undefined);
      return started;
    };
    /** Stops a session and waits until its app has exited (its end reported) and, unless told otherwise, its logs are spooled (which follows the sweep). */
    const stop = async (sessionId: string, until: 'spooled' | 'exited' = 'spooled') => {
      const stopping = manager.handlers.stopSession({ kind: 'stopSession', sessionId, reason: 'viewer left', graceMs: 1_000 });
      await vi.waitFor(
        () => {
          clock.advance(500); // the stop grace and the output drain run on the clock
          if (until === 'spooled') expect(finished).toContain(sessionId);
          else expect(events.some((e) => e.sessionId === sessionId && (e.kind === 'appStopped' || e.kind === 'appExited'))).toBe(true);
        },
        { timeout: 10_000, interval: 20 },
      );
      await stopping;
    };
    const appStarted = (sessionId: string) => events.some((e) => e.sessionId === sessionId && e.kind === 'appStarted');
    return { one, two, builds, manager, clock, events, finished, buildThereAtSpool, start, stop, appStarted };
  }

  it("ends the helpers a session's app left running from its build folder once the app has exited", async () => {
    const { one, builds, start, stop } = setUp();
    void start('ses_1', 'upl_1');
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const [helper] = helpersOf(one.binaries);
    await stop('ses_1');
    // Stopping the app's tree did not reach it (another process group): the sweep did.
    await vi.waitFor(() => expect(isProcessGone(helper!)).toBe(true), { timeout: 5_000, interval: 20 });
    await builds.close();
  });

  it('sweeps only after the last session of a build: while another session runs it, its app and helpers are spared', async () => {
    const { one, builds, start, stop } = setUp();
    void start('ses_1', 'upl_1');
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    void start('ses_2', 'upl_1');
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(2), { timeout: 10_000, interval: 20 });
    const [first, second] = helpersOf(one.binaries);

    await stop('ses_1');
    expect(isProcessGone(first!)).toBe(false);
    expect(isProcessGone(second!)).toBe(false);

    await stop('ses_2');
    await vi.waitFor(() => expect([isProcessGone(first!), isProcessGone(second!)]).toEqual([true, true]), { timeout: 5_000, interval: 20 });
    await builds.close();
  });

  it("starts a session of the build only after the build folder's sweep: the sweep would end its app", async () => {
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const posix = posixProcessControl('linux');
    const swept: string[] = [];
    const gated: ProcessControl = {
      ...posix,
      sweepFolder: async (folder) => {
        swept.push(folder);
        await gate;
        return posix.sweepFolder(folder);
      },
    };
    const { one, two, builds, start, stop, appStarted } = setUp(gated);
    void start('ses_1', 'upl_1');
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    await stop('ses_1', 'exited');
    await vi.waitFor(() => expect(swept).toHaveLength(1), { timeout: 5_000, interval: 20 });
    expect(swept).toEqual([join(dirs.at(-1)!, 'builds', 'upl_1')]);

    // ses_3 runs upl_1, whose sweep is held; ses_4, asked for after it, runs another build.
    const third = start('ses_3', 'upl_1');
    void start('ses_4', 'upl_2');
    await vi.waitFor(() => expect(helpersOf(two.binaries)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(appStarted('ses_3')).toBe(false);
    expect(helpersOf(one.binaries)).toHaveLength(1);

    openGate();
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(2), { timeout: 10_000, interval: 20 });
    const [old, fresh] = helpersOf(one.binaries);
    await vi.waitFor(() => expect(isProcessGone(old!)).toBe(true), { timeout: 5_000, interval: 20 });
    expect(isProcessGone(fresh!)).toBe(false);
    expect(appStarted('ses_3')).toBe(true);
    void third;
    await builds.close();
  });

  it('does not launch a session stopped while it waited for the sweep', async () => {
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const posix = posixProcessControl('linux');
    const gated: ProcessControl = { ...posix, sweepFolder: async (folder) => (await gate, posix.sweepFolder(folder)) };
    const { one, builds, manager, start, stop, appStarted } = setUp(gated);
    void start('ses_1', 'upl_1');
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    await stop('ses_1', 'exited');

    const waiting = start('ses_2', 'upl_1');
    await manager.handlers.stopSession({ kind: 'stopSession', sessionId: 'ses_2', reason: 'viewer left', graceMs: 1_000 });
    openGate();
    await expect(waiting).rejects.toMatchObject({ code: 'STOPPED' });
    expect(appStarted('ses_2')).toBe(false);
    expect(helpersOf(one.binaries)).toHaveLength(1);
    expect(manager.runningSessions()).toEqual([]);
    await builds.close();
  });

  it('ends the start of a session stopped after its app launched, before it connected (STOPPED), and reports the app stopped', async () => {
    const { one, builds, events, start, stop } = setUp();
    const started = start('ses_1', 'upl_1');
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    await stop('ses_1');
    await expect(started).rejects.toMatchObject({ code: 'STOPPED' });
    expect(events.filter((e) => e.sessionId === 'ses_1').map((e) => e.kind)).toEqual(['appStarted', 'appStopped']);
    await builds.close();
  });

  it('keeps the build of a start that timed out until its app has exited, been swept and its logs spooled', async () => {
    const { one, builds, manager, clock, finished, buildThereAtSpool, start } = setUp();
    const started = start('ses_1', 'upl_1', { startupTimeoutSeconds: 20 });
    await vi.waitFor(() => expect(helpersOf(one.binaries)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const [helper] = helpersOf(one.binaries);
    // A DeleteBuild while the session holds the build waits for its release.
    await manager.handlers.deleteBuild({ kind: 'deleteBuild', uploadId: 'upl_1' });
    clock.advance(20_000);
    await expect(started).rejects.toMatchObject({ code: 'STARTUP_TIMEOUT' });
    await vi.waitFor(
      () => {
        clock.advance(500); // the stop grace and the output drain run on the clock
        expect(finished).toContain('ses_1');
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(buildThereAtSpool.get('ses_1')).toBe(true);
    expect(isProcessGone(helper!)).toBe(true);
    await vi.waitFor(() => expect(existsSync(join(one.binaries, '..', '..', '..'))).toBe(false), { timeout: 5_000, interval: 20 });
    await builds.close();
  });

  it('sweeps the build folder after a start that launched nothing, when no other session runs the build', async () => {
    const { one, builds, start } = setUp();
    // Left by an earlier session whose sweep another session's run put off.
    const leftover = spawn(join(one.binaries, 'CrashReportClient'), ['300'], { detached: true, stdio: 'ignore' });
    await new Promise((resolve) => leftover.once('spawn', resolve));
    strays.push(leftover.pid!);
    await expect(start('ses_1', 'upl_1', { codec: 'VP8' })).rejects.toMatchObject({ code: 'UNSUPPORTED_CODEC' });
    await vi.waitFor(() => expect(isProcessGone(leftover.pid!)).toBe(true), { timeout: 5_000, interval: 20 });
    await builds.close();
  });
});
