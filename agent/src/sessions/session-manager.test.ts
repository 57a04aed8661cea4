// SessionManager on the injected clock: the times it reports (session events, the Hello's
// startedAtMs) and its sessions' startup timeout come from the clock it was given, not Date.now();
// and its build commands and inventory, handed to the build cache.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentSessionEvent, StartSessionCommand } from '@pixelfleet/proto';
import { ManualClock } from '@pixelfleet/signaling';
import { BuildCache } from '../build-cache/build-cache';
import { SessionManager } from './session-manager';

const COMMAND: StartSessionCommand = {
  kind: 'startSession', sessionId: 'session_1_1', projectId: 'prj_1', uploadId: 'upl_1', streamingId: 'streamer_1', playerId: 'player_1_1', codec: 'H264',
  minBitrateBps: 1_000_000, maxBitrateBps: 8_000_000, resX: 1280, resY: 720, fps: 30, launchArgs: [], maxRunTimeMinutes: 0, startupTimeoutSeconds: 20,
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
