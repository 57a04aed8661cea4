// The sweep against real processes: survivors spawned detached (their own process group, as the
// agent spawns apps) with the record id in their environment, records written by the real
// store, /proc read for real. Only the Windows branch runs a recorded command instead.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { APP_RECORD_ENV, AppRecordStore, identifyProcess, type AppRecord } from './app-records';
import { isProcessGone, listProcesses, readBootIdentity } from './process-identity';
import { stopSurvivors, SURVIVOR_POLL_MS } from './survivor-sweep';
import { windowsSweepPlan } from './windows-kill-plan';
import { windowsProcessControl } from './process-control';

const silent = pino({ level: 'silent' });
let dataDir: string;
let store: AppRecordStore;
const strays: number[] = [];

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'pf-sweep-'));
  store = new AppRecordStore(dataDir);
});

afterEach(() => {
  for (const pid of strays.splice(0)) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** Starts `sh -c script` detached (its own group), optionally carrying a record id; resolves once it runs. */
async function survivor(script: string, recordId?: string): Promise<number> {
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, ...(recordId ? { [APP_RECORD_ENV]: recordId } : {}) } });
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  strays.push(child.pid!);
  return child.pid!;
}

/** Members of a process group (waits until the shell has started them). */
async function groupOf(pgid: number, count: number): Promise<number[]> {
  let members: number[] = [];
  await vi.waitFor(() => {
    members = listProcesses().filter((p) => p.pgid === pgid).map((p) => p.pid);
    expect(members.length).toBeGreaterThanOrEqual(count);
  });
  return members;
}

function recordFor(pid: number | undefined, extra: Partial<AppRecord> = {}): AppRecord {
  const r: AppRecord = {
    id: store.newId(),
    sessionId: 'ses_survivor',
    uploadId: 'upl_1',
    executable: 'sh',
    buildDir: undefined,
    platform: 'linux',
    recordedAtMs: 0,
    process: pid === undefined ? undefined : identifyProcess(pid, 'linux'),
    windowsPid: undefined,
    ...extra,
  };
  store.save(r);
  return r;
}

/** Drives a sweep on a manual clock: time moves one poll at a time while the real processes get a moment to react. */
async function drive<T>(work: Promise<T>, clock: ManualClock): Promise<T> {
  let done = false;
  void work.finally(() => {
    done = true;
  });
  while (!done) {
    clock.advance(SURVIVOR_POLL_MS);
    // A real moment for the kernel to deliver the signals the sweep sent at this step.
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return work;
}

describe('stopSurvivors (Linux)', { timeout: 20_000 }, () => {
  it('stops a verified survivor and every process of its group with SIGTERM, then removes its record', async () => {
    const id = store.newId();
    const root = await survivor('sleep 300 & sleep 300 & wait', id);
    const members = await groupOf(root, 3);
    const r = recordFor(root, { id });

    const outcomes = await stopSurvivors({ store, log: silent });
    expect(outcomes).toEqual([expect.objectContaining({ recordId: r.id, sessionId: 'ses_survivor', uploadId: 'upl_1', pid: root, verdict: 'stopped', stuck: [] })]);
    expect(outcomes[0]!.signalled.sort()).toEqual(members.sort());
    for (const pid of members) expect(isProcessGone(pid)).toBe(true);
    expect(store.load().records).toEqual([]);
  });

  it('kills a survivor that ignores SIGTERM once the grace has passed on the injected clock', async () => {
    const clock = new ManualClock();
    const root = await survivor('trap "" TERM; sleep 300 & wait');
    const members = await groupOf(root, 2);
    recordFor(root);

    const sweep = stopSurvivors({ store, log: silent, clock, graceMs: 2_000 });
    // SIGTERM went out and is ignored: nothing dies before the grace is over.
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const pid of members) expect(isProcessGone(pid)).toBe(false);
    const [outcome] = await drive(sweep, clock);
    expect(outcome).toMatchObject({ verdict: 'forced', stuck: [] });
    for (const pid of members) expect(isProcessGone(pid)).toBe(true);
    expect(store.load().records).toEqual([]);
  });

  it('never signals a pid that now belongs to another process: same pid, another start time', async () => {
    const other = await survivor('exec sleep 300');
    const real = identifyProcess(other, 'linux');
    const forged = recordFor(other, { process: { ...real, startTicks: String(BigInt(real.startTicks!) - 1n) } });

    const outcomes = await stopSurvivors({ store, log: silent });
    expect(outcomes).toEqual([expect.objectContaining({ recordId: forged.id, verdict: 'pidReused', signalled: [] })]);
    expect(isProcessGone(other)).toBe(false);
    expect(store.load().records).toEqual([]);
  });

  it('never signals a pid that runs another binary, nor one recorded in a previous boot', async () => {
    const other = await survivor('exec sleep 300');
    const real = identifyProcess(other, 'linux');
    recordFor(other, { process: { ...real, exe: '/opt/game/Binaries/Linux/Game' } });
    recordFor(other, { process: { ...real, bootId: 'another-boot', bootTimeS: 1 } });

    const outcomes = await stopSurvivors({ store, log: silent });
    expect(outcomes.map((o) => o.verdict).sort()).toEqual(['pidReused', 'previousBoot']);
    expect(isProcessGone(other)).toBe(false);
    expect(store.load().records).toEqual([]);
  });

  it('removes the record of an app that is gone without signalling anything', async () => {
    const child = spawn('true');
    await new Promise((resolve) => child.once('exit', resolve));
    const r = recordFor(undefined, { process: { pid: child.pid!, pgid: child.pid!, startTicks: '1', ...readBootIdentity(), exe: undefined } });
    expect(await stopSurvivors({ store, log: silent })).toEqual([expect.objectContaining({ recordId: r.id, verdict: 'gone', signalled: [] })]);
    expect(store.load().records).toEqual([]);
  });

  it('finds an app whose record has no pid yet (the agent died between the spawn and the second write) by the id in its environment', async () => {
    const r = recordFor(undefined);
    const root = await survivor('sleep 300 & wait', r.id);
    const bystander = await survivor('exec sleep 300');

    const [outcome] = await stopSurvivors({ store, log: silent });
    expect(outcome).toMatchObject({ recordId: r.id, verdict: 'stopped' });
    expect(outcome!.signalled).toContain(root);
    expect(isProcessGone(root)).toBe(true);
    expect(isProcessGone(bystander)).toBe(false);
  });

  it('looks for the processes of an unreadable record by the id its file name carries', async () => {
    const id = store.newId();
    const root = await survivor('sleep 300 & wait', id);
    mkdirSync(store.dir, { recursive: true });
    writeFileSync(join(store.dir, `${id}.json`), '{"version":1,"id":"');

    const [outcome] = await stopSurvivors({ store, log: silent });
    expect(outcome).toMatchObject({ recordId: id, sessionId: undefined, verdict: 'stopped' });
    expect(isProcessGone(root)).toBe(true);
    expect(store.load()).toEqual({ records: [], unreadable: [] });
  });
});

describe('stopSurvivors (Windows rules)', () => {
  it("force-stops whatever still runs from the recorded build's folder, and only records with a build", async () => {
    const ran: (readonly string[])[] = [];
    const withBuild = recordFor(undefined, { platform: 'win32', windowsPid: 1234, buildDir: 'C:\\pixelfleet\\builds\\upl_1' });
    recordFor(undefined, { platform: 'win32', windowsPid: 1235 });
    // app-job.exe --sweep prints the id of each process it stopped, then its summary.
    const control = windowsProcessControl((argv) => { ran.push(argv); return Promise.resolve('stopped 5120\r\nstopped 5124\r\nswept 2 of 40 processes\r\n'); }, 'C:\\pf\\app-job.exe');
    const outcomes = await stopSurvivors({ store, log: silent, control });
    expect(ran).toEqual([windowsSweepPlan('C:\\pf\\app-job.exe', 'C:\\pixelfleet\\builds\\upl_1')]);
    expect(outcomes.find((o) => o.recordId === withBuild.id)).toMatchObject({ verdict: 'windowsSwept', pid: 1234, signalled: [5120, 5124] });
    expect(outcomes.map((o) => o.verdict).sort()).toEqual(['gone', 'windowsSwept']);
    expect(store.load().records).toEqual([]);
  });
});
