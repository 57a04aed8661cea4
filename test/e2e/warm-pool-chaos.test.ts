// Issue 26's chaos row with the real processes: `pixelfleet serve` or the agent is killed with SIGKILL
// while a project's warm pool loads or is ready, and started again. Counted is what runs: the apps in
// /proc, the agent's launch lines, and the sessions and pool `pixelfleet admin` shows.
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adminJson, callApi, killAll, sessionRecord, sessionStatuses, type FleetProcess, type ServeProcess } from '../support/fleet-processes';
import { processTree, stillRunning, type ProcessEntry } from '../support/process-tree';
import { appLogOf, restartAgent, restartServe, serveMockAppBuild, startStreamingFleet, type StreamingFleet } from '../support/streaming-fleet';
import { WeriftViewer } from '../support/werift-viewer';

/** The mock app's load before it dials its signalling (a real one takes 5–60 s: short here, yet a launch shows). */
const APP_START_SECONDS = 2;
const POOL = 2;
const POLL = { timeout: 30_000, interval: 100 };

let build: Awaited<ReturnType<typeof serveMockAppBuild>>;
let gateDir: string;
/** While this file is missing, loaded apps wait to identify (-MockSignallingGate): a kill lands while they load, whatever the machine's speed. */
let gate: string;
const dirs: string[] = [];

beforeAll(async () => {
  gateDir = mkdtempSync(join(tmpdir(), 'pf-warm-gate-'));
  gate = join(gateDir, 'open');
  // -MockReconnectSignalling: the app outlives its agent, so a crashed agent leaves it running;
  // -MockHelperProcess: a child in its group, as a real build's crash reporter, that must go with it.
  build = await serveMockAppBuild({ appArgs: [`-MockStartupSeconds=${APP_START_SECONDS}`, `-MockSignallingGate=${gate}`, '-MockReconnectSignalling', '-MockHelperProcess'] });
});

afterAll(async () => {
  await build.close();
  rmSync(gateDir, { recursive: true, force: true });
});

const holdApps = () => rmSync(gate, { force: true });
const releaseApps = () => writeFileSync(gate, '');

afterEach(async () => {
  await killAll();
  // The agent was killed, not stopped, and its apps outlive it (-MockReconnectSignalling): end them by pid.
  for (const d of dirs.splice(0)) {
    for (const pid of processesOf(d)) killQuietly(pid);
    rmSync(d, { recursive: true, force: true });
  }
});

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const pidsInProc = () => readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number);

/** Processes run from `dir` or naming it: an app and its helper run in their build's folder, under the agent's data dir, and an app's command line names its session folder. */
function processesOf(dir: string): number[] {
  return pidsInProc().filter((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/cwd`).startsWith(`${dir}/`) || readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${dir}/`);
    } catch {
      return false;
    }
  });
}

interface AppProcess {
  pid: number;
  sessionId: string;
}

/**
 * The app processes running for the agent whose data dir is `agentDir`, from /proc: the mock app's
 * node process, naming its session by the folder of its -ABSLOG. Not listed: a zombie (exited, not
 * yet reaped: no command line), and a child the app is forking (its helper, which shows the app's
 * command line until it execs).
 */
function appProcesses(agentDir: string): AppProcess[] {
  const logFlag = new RegExp(`\\0-ABSLOG=${agentDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/sessions/([^/]+)/`);
  const found: (AppProcess & { ppid: number })[] = [];
  for (const pid of pidsInProc()) {
    let cmdline: string;
    let stat: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone while we looked
    }
    const m = logFlag.exec(cmdline);
    // Field 4 of stat, after the command in parentheses, is the parent.
    if (m !== null && cmdline.includes('mock-unreal.mjs')) found.push({ pid, sessionId: m[1]!, ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) });
  }
  const pids = new Set(found.map((a) => a.pid));
  return found.filter((a) => !pids.has(a.ppid)).map(({ pid, sessionId }) => ({ pid, sessionId }));
}

/** The session ids of the apps running, one entry per process, sorted: a session launched twice shows twice. */
const runningAppSessions = (agentDir: string) => appProcesses(agentDir).map((a) => a.sessionId).sort();

/** The sessions an agent process launched an app for, in its output's order, one entry per launch. */
function launchesIn(agent: FleetProcess): string[] {
  const launches: string[] = [];
  for (const line of agent.text().split('\n')) {
    if (!line.includes('"msg":"app launched"')) continue;
    launches.push((JSON.parse(line) as { sessionId: string }).sessionId);
  }
  return launches;
}

interface PoolFigures {
  wanted: number;
  ready: number;
  starting: number;
  ending: number;
  claims: number;
  misses: number;
}

/** The project's warm pool as `pixelfleet admin project stats` shows it. */
async function poolOf(cp: ServeProcess, projectId: string): Promise<PoolFigures> {
  const { warmPool } = (await adminJson(cp.grpcAddress, ['project', 'stats', '--project', projectId])) as { warmPool?: PoolFigures };
  if (warmPool === undefined) throw new Error('the project shows no warm pool');
  return warmPool;
}

/**
 * The sessions the control plane has not ended, sorted (`pixelfleet admin sessions`, fleet-wide: a
 * project's list may leave its unclaimed warm instances out). The test knows its viewers' sessions;
 * every other one is a warm instance.
 */
async function liveSessions(cp: ServeProcess): Promise<string[]> {
  return [...(await sessionStatuses(cp.grpcAddress))].filter(([, status]) => status !== 'Terminated').map(([id]) => id).sort();
}

/** A fleet in a temp folder of its own whose project asks for a pool of POOL. */
async function fleetWithPool(slots: number): Promise<StreamingFleet & { dir: string; agentDir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-warm-chaos-'));
  dirs.push(dir);
  const fleet = await startStreamingFleet({ dir, buildUrl: build.buildUrl, slots });
  const { userId, apiKey, projectId } = fleet.account;
  const patched = await callApi(fleet.cp.httpOrigin, 'PATCH', `/projects/${projectId}/settings`, { userId, apiKey, warmPoolMinIdle: POOL });
  expect(patched.status).toBe(200);
  return { ...fleet, dir, agentDir: join(dir, 'agent') };
}

const identified = (dir: string, sessionId: string) => appLogOf(dir, sessionId).includes('Streamer identified as');
/** Loaded and held at the gate: its StartSession is still in flight at the agent (it finishes when the app identifies). */
const heldAtGate = (dir: string, sessionId: string) => appLogOf(dir, sessionId).includes(`Waiting for ${gate} before connecting to signalling`);

/** How many times the agent process has been welcomed by a control plane (once per link it made). */
const welcomes = (agent: FleetProcess) => agent.text().split('"msg":"connected to the control plane"').length - 1;

describe('a control plane killed with SIGKILL with a warm pool', () => {
  for (const moment of ['loading', 'ready'] as const) {
    it(`${moment === 'loading' ? 'while its apps load (they identify while it is down)' : 'once its apps are ready'}: takes up the same instances from the agent, launches none twice, leaves no app without a session; a viewer claims one and the pool refills`, { timeout: 120_000 }, async () => {
      if (moment === 'loading') holdApps();
      else releaseApps();
      const f = await fleetWithPool(POOL + 1);
      const projectId = f.account.projectId;
      if (moment === 'loading') {
        await expect.poll(() => runningAppSessions(f.agentDir).filter((id) => heldAtGate(f.dir, id)).length, POLL).toBe(POOL);
      } else {
        await expect.poll(() => poolOf(f.cp, projectId), POLL).toMatchObject({ ready: POOL, starting: 0 });
      }
      const launched = runningAppSessions(f.agentDir);
      expect(launched).toHaveLength(POOL);
      expect(await liveSessions(f.cp)).toEqual(launched);
      expect(launched.filter((id) => identified(f.dir, id))).toEqual(moment === 'loading' ? [] : launched);

      await f.cp.kill();
      // The apps finish loading and identify to their agent while no control plane hears of it.
      releaseApps();
      await expect.poll(() => launched.filter((id) => identified(f.dir, id)), POLL).toEqual(launched);
      const cp = await restartServe(f.dir, f.cp);

      // The agent re-dials and says its apps are up: the pool is the same two instances, ready. (Killed
      // while they loaded, their StartSessions were unanswered: sent again, the agent's journal answers.)
      await expect.poll(() => welcomes(f.agent), POLL).toBeGreaterThanOrEqual(2);
      await expect.poll(() => poolOf(cp, projectId), POLL).toMatchObject({ wanted: POOL, ready: POOL, starting: 0, ending: 0 });
      expect(await liveSessions(cp)).toEqual(launched);
      expect(runningAppSessions(f.agentDir)).toEqual(launched);

      // A viewer on the share page is served by one of them, and video flows.
      const viewer = await WeriftViewer.join(f.wsUrl);
      expect(launched).toContain(viewer.sessionId);
      await viewer.until(() => viewer.rtpPackets > 30, 30_000);
      expect((await sessionStatuses(cp.grpcAddress)).get(viewer.sessionId)).toBe('Running');

      // The pool refills to two with one new launch, in the third slot.
      await expect.poll(() => poolOf(cp, projectId), POLL).toMatchObject({ ready: POOL, starting: 0, claims: 1 });
      const live = await liveSessions(cp);
      const [replacement, ...more] = live.filter((id) => !launched.includes(id));
      expect(more).toEqual([]);
      expect(replacement).toBeDefined();
      const all = [...launched, replacement!].sort();
      expect(live).toEqual(all);
      // Every launch the agent made, each once, and every app running is a session the control plane holds, one process each.
      expect(launchesIn(f.agent).sort()).toEqual(all);
      expect(runningAppSessions(f.agentDir)).toEqual(all);

      await viewer.close();
    });
  }
});

describe('an agent killed with SIGKILL with a warm pool', () => {
  const title = {
    // Its StartSessions are answered once the apps identify: unanswered, the control plane keeps them and sends them again.
    loading: 'while its apps load: the restarted agent stops them and their helpers before its Hello, then, sent their StartSession again, launches each instance once more',
    ready: 'once its apps are ready: the restarted agent stops them and their helpers before its Hello, the control plane ends their instances, and the pool refills on it with fresh ones',
  } as const;
  for (const moment of ['loading', 'ready'] as const) {
    it(`${title[moment]}; never more apps than slots`, { timeout: 120_000 }, async () => {
      const slots = POOL;
      if (moment === 'loading') holdApps();
      else releaseApps();
      const f = await fleetWithPool(slots);
      const projectId = f.account.projectId;
      // Sampled all along: never more apps at once than the agent's slots.
      let mostAppsAtOnce = 0;
      const sampler = setInterval(() => (mostAppsAtOnce = Math.max(mostAppsAtOnce, appProcesses(f.agentDir).length)), 100);
      try {
        if (moment === 'loading') {
          await expect.poll(() => runningAppSessions(f.agentDir).filter((id) => heldAtGate(f.dir, id)).length, POLL).toBe(POOL);
        } else {
          await expect.poll(() => poolOf(f.cp, projectId), POLL).toMatchObject({ ready: POOL, starting: 0 });
        }
        const old = await liveSessions(f.cp);
        expect(old).toHaveLength(POOL);
        expect(runningAppSessions(f.agentDir)).toEqual(old);
        expect(old.filter((id) => identified(f.dir, id))).toEqual(moment === 'loading' ? [] : old);
        // Each app and its helper, as seen now (pid and start time: a reused pid is not mistaken for them).
        const trees: ProcessEntry[] = appProcesses(f.agentDir).flatMap((a) => processTree(a.pid));
        expect(trees.length).toBe(2 * POOL);

        await f.agent.kill();
        // As a crash leaves them: the apps and their helpers run on without their agent.
        expect(stillRunning(trees)).toEqual(trees);

        const agent = await restartAgent(f.dir, f.cp, { slots });
        // Connected means its Hello went: the sweep ran before it.
        expect(stillRunning(trees)).toEqual([]);
        for (const id of old) expect(agent.text()).toMatch(new RegExp(`"sessionId":"${id}".*"verdict":"stopped".*"msg":"stopped an app left running by a previous run of the agent"`));
        releaseApps();

        await expect.poll(() => poolOf(f.cp, projectId), POLL).toMatchObject({ wanted: POOL, ready: POOL, starting: 0, ending: 0 });
        const live = await liveSessions(f.cp);
        if (moment === 'loading') {
          expect(live).toEqual(old);
        } else {
          for (const id of old) expect(await sessionRecord(f.cp.grpcAddress, id)).toEqual({ status: 'Terminated', endReason: 'worker lost the session' });
          expect(live).toHaveLength(POOL);
          expect(live.filter((id) => old.includes(id))).toEqual([]);
        }
        // The restarted agent launched each live instance once, and runs nothing else.
        expect(launchesIn(agent).sort()).toEqual(live);
        expect(runningAppSessions(f.agentDir)).toEqual(live);

        // Neither side went past the slots: the agent refused no start (it would with NO_FREE_SLOT), and /proc never showed more apps.
        expect(f.cp.text()).not.toContain('NO_FREE_SLOT');
        expect(agent.text()).not.toContain('NO_FREE_SLOT');
        expect(mostAppsAtOnce).toBeLessThanOrEqual(slots);
      } finally {
        clearInterval(sampler);
      }
    });
  }
});
