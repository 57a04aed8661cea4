// Issue 12, row 1: an agent killed with SIGKILL leaves its app running (the mock app in the mode
// where it outlives its signalling socket and re-dials, as a real build does). The restarted
// agent process (the bundle as it ships, `node dist/agent.cjs run`) stops that app and its
// children before its Hello reaches the control plane, and the Hello lists no session; a record
// whose pid now belongs to another process is not signalled.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FleetEvent } from '@pixelfleet/control-plane';
import { startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { AGENT_BUNDLE, cleanEnv, startCli, type CliProcess } from '../support/cli-process';
import { mockAppCommand } from '../support/mock-app';
import { FakePlayer } from '../support/fake-player';
import { workerCommands } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Gone, or a zombie: an orphan killed while its parent is dead waits for a reaper some containers' PID 1 never is. */
function isGone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return true;
  }
}

function killQuietly(target: number): void {
  try {
    process.kill(target, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** /proc/<pid>/stat field 22 (start time in clock ticks since boot). */
function startTicksOf(pid: number): string {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;
}

function bootIdentity(): { bootId: string; bootTimeS: number } {
  return {
    bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    bootTimeS: Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))![1]),
  };
}

interface StoredRecord {
  id: string;
  sessionId: string;
  process?: { pid: number; pgid: number; startTicks: string };
}

const recordsIn = (agentData: string): StoredRecord[] => {
  const dir = join(agentData, 'apps');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  return names.map((n) => JSON.parse(readFileSync(join(dir, n), 'utf8')) as StoredRecord);
};

describe('an agent killed with SIGKILL does not leave its apps to the next run', () => {
  it('the restarted agent stops the surviving app and its helper before its Hello, which lists 0 sessions; a reused pid is left alone', { timeout: 90_000 }, async () => {
    const t: TestControlPlane = await startTestControlPlane();
    cleanups.push(() => t.destroy());
    const owner = await t.cp.accounts.createUser(`crash${Date.now()}@example.com`);
    const projectId = (await t.cp.accounts.createProject(owner.userId, 'Crash', 'europe')).projectId;
    await t.cp.registerLocalBuild(projectId);
    const agentData = mkdtempSync(join(tmpdir(), 'pf-agent-crash-'));
    cleanups.push(() => rmSync(agentData, { recursive: true, force: true }));

    const agentEnv = cleanEnv({
      PIXELFLEET_AGENT_CONTROL_PLANE: t.started.grpcAddress,
      PIXELFLEET_AGENT_JOIN_TOKEN: TEST_JOIN_TOKEN,
      PIXELFLEET_AGENT_REGION: 'europe',
      PIXELFLEET_AGENT_SLOTS: '1',
      PIXELFLEET_AGENT_DATA_DIR: agentData,
      PIXELFLEET_AGENT_HOSTNAME: 'gpu-crash',
      PIXELFLEET_AGENT_ICE__HOST_ADDRESSES: JSON.stringify(['127.0.0.1']),
      PIXELFLEET_AGENT_LAUNCHER__COMMAND: JSON.stringify(mockAppCommand('-MockReconnectSignalling', '-MockHelperProcess')),
    });
    const runAgent = (): CliProcess => {
      const agent = startCli(AGENT_BUNDLE, ['run'], agentEnv);
      cleanups.push(() => {
        if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGKILL');
      });
      return agent;
    };

    const first = runAgent();
    await first.output(/connected to the control plane/);

    // A viewer's session is placed on the worker and its app identifies.
    const player = await FakePlayer.connect(`${t.started.publicUrls.share.replace(/^http/, 'ws')}/${projectId}/signalling`);
    cleanups.push(() => player.socket.terminate());
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    const appLog = join(agentData, 'sessions', sessionId, 'PixelfleetApp.log');
    const logText = () => {
      try {
        return readFileSync(appLog, 'utf8');
      } catch {
        return '';
      }
    };
    await vi.waitFor(() => expect(logText()).toContain('Streamer identified as'), { timeout: 30_000, interval: 50 });
    const [record] = recordsIn(agentData);
    expect(record).toMatchObject({ sessionId, process: { pid: expect.any(Number) as unknown } });
    const appPid = record!.process!.pid;
    const helperPid = Number(/Started helper process (\d+)/.exec(logText())![1]);
    cleanups.push(() => {
      killQuietly(-appPid);
      killQuietly(helperPid);
    });

    // The start was acknowledged: otherwise the control plane would still be waiting for it and
    // resend it to the restarted agent (which would launch the session again, rather than lose it).
    const workerId = t.cp.sessions.get(sessionId).assignedWorker!;
    const start = () => workerCommands(t.cp, workerId, 'startSession').find((c) => c.payload.includes(sessionId));
    await vi.waitFor(() => expect(start()?.phase).toBe('SUCCEEDED'), { timeout: 10_000, interval: 50 });
    // SIGKILL: no exit hook runs. The app outlives its signalling socket and keeps re-dialling.
    first.child.kill('SIGKILL');
    await first.exited;
    await vi.waitFor(() => expect(logText()).toContain('reconnecting in 1000 ms'), { timeout: 10_000, interval: 50 });
    expect(isGone(appPid)).toBe(false);
    expect(isGone(helperPid)).toBe(false);

    // Another process now holds a pid a record names (the kernel reuses pids): a forged record
    // with that pid but another start time. It must not be signalled, nor its group.
    const bystander = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    await new Promise((resolve) => bystander.once('spawn', resolve));
    const bystanderPid = bystander.pid!;
    cleanups.push(() => killQuietly(-bystanderPid));
    const forgedId = randomUUID();
    writeFileSync(join(agentData, 'apps', `${forgedId}.json`), JSON.stringify({
      version: 1,
      id: forgedId,
      sessionId: 'ses_forged',
      uploadId: '',
      executable: '/usr/bin/sleep',
      platform: 'linux',
      recordedAtMs: Date.now(),
      process: { pid: bystanderPid, pgid: bystanderPid, startTicks: String(BigInt(startTicksOf(bystanderPid)) + 7n), ...bootIdentity() },
    }));

    // What the processes looked like at the moment the control plane accepted the new Hello.
    const atHello = new Promise<{ event: FleetEvent; appGone: boolean; helperGone: boolean; bystanderGone: boolean }>((resolve) => {
      const stop = t.cp.events.follow(0, (e) => {
        if (e.type !== 'worker.connected') return;
        stop();
        resolve({ event: e, appGone: isGone(appPid), helperGone: isGone(helperPid), bystanderGone: isGone(bystanderPid) });
      });
    });
    const second = runAgent();
    const seen = await atHello;
    expect(seen).toMatchObject({ appGone: true, helperGone: true, bystanderGone: false });
    expect(seen.event.data).toMatchObject({ runningSessions: 0 });

    await second.output(/connected to the control plane/);
    expect(second.stdout()).toMatch(new RegExp(`"sessionId":"${sessionId}".*"verdict":"stopped".*"msg":"stopped an app left running by a previous run of the agent"`));
    expect(second.stdout()).toMatch(/"sessionId":"ses_forged".*"verdict":"pidReused"/);
    expect(recordsIn(agentData)).toEqual([]);
    expect(isGone(bystanderPid)).toBe(false);
    // The control plane ends the session the Hello did not list.
    await vi.waitFor(() => expect(t.cp.sessions.get(sessionId).status).toBe('Terminated'), { timeout: 10_000 });
    expect(t.cp.sessions.get(sessionId).endReason).toBe('worker lost the session');

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
