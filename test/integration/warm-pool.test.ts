// Warm pools on a real control plane with real agents whose session runtime is scripted (the test
// says when an app identifies, crashes or fails to launch): the pool filled to the project's
// minimum and kept out of every customer's count and list, a claim served by a ready instance and
// refilled at once, one instance never claimed twice, another project's viewer stopping an idle
// instance, a new live build replacing idle instances but not a claimed one, a crash-looping build
// no longer warmed (its event, its admin line), the maximum age, `admin sessions` marking the
// instances no viewer has claimed, a restart that launches nothing twice, and slots never exceeded
// under random arrivals and departures.
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '@pixelfleet/agent';
import { runAdminCli } from '@pixelfleet/control-plane';
import { ManualClock } from '@pixelfleet/common';
import type { ControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { fleetEvents, liveSessionCount, seedBuild, seedLiveBuild, sessionRecord, setLiveUpload, setProjectSettings, snapshotData } from '../support/seed';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface World {
  t: TestControlPlane;
  cp: ControlPlaneWithDb;
  owner: string;
  projectId: string;
}

async function world(options: { clock?: ManualClock; dataDir?: string; grpcPort?: number } = {}): Promise<World> {
  // On a fake clock that jumps minutes, a lease of an hour: the agents' heartbeats come on real time.
  const overrides = options.clock === undefined ? {} : { overrides: { workers: { heartbeatIntervalSeconds: 10, leaseSeconds: 3600, lostGraceSeconds: 120 } } };
  const t = await startTestControlPlane({ ...options, ...overrides });
  if (options.dataDir === undefined) cleanups.push(() => t.destroy());
  const owner = (await t.cp.accounts.createUser(`o${Date.now()}${Math.random()}@example.com`)).userId;
  const project = await t.cp.accounts.createProject(owner, 'Warm', 'europe');
  seedLiveBuild(t.cp, project.projectId);
  return { t, cp: t.cp, owner, projectId: project.projectId };
}

/** A second project of the same region, with its own live build. */
async function otherProject(w: World): Promise<string> {
  const project = await w.cp.accounts.createProject(w.owner, 'Other', 'europe');
  seedLiveBuild(w.cp, project.projectId, 'upl_other');
  return project.projectId;
}

async function worker(w: World, slots: number): Promise<{ agent: Agent; script: ScriptedSessions; uploads: Map<string, string> }> {
  const script = new ScriptedSessions();
  const uploads = new Map<string, string>();
  const handlers: typeof script.handlers = {
    ...script.handlers,
    startSession: (c) => {
      uploads.set(c.sessionId, c.uploadId);
      return script.handlers.startSession(c);
    },
  };
  const { agent } = await startTestAgent({ grpcAddress: w.t.started.grpcAddress, slots, handlers, inventory: script.inventory, onSignal: script.onSignal });
  script.agent = agent;
  cleanups.push(() => agent.close());
  await linkReaches(agent, 'connected');
  return { agent, script, uploads };
}

/** Gives the project a pool (as the settings API does: stored, then the pools told). */
function warmPool(w: World, projectId: string, settings: { warmPoolMinIdle: number; warmInstanceMaxAgeMinutes?: number; warmPoolQueueWaitTargetSeconds?: number }): void {
  setProjectSettings(w.cp, projectId, settings);
  w.cp.sessions.warmPoolSettingsChanged(projectId);
}

const project = (w: World, projectId = w.projectId) => w.cp.accounts.requireProject(projectId);
const claim = (w: World, projectId = w.projectId) => w.cp.sessions.claimWarm(project(w, projectId));
const join = (w: World, projectId = w.projectId) => (claim(w, projectId) ?? w.cp.sessions.create(project(w, projectId))).session;
const status = (w: World, id: string) => w.cp.sessions.get(id).status;
const idle = (w: World, projectId = w.projectId) => w.cp.sessions.warm.ofProject(projectId).map((i) => i.sessionId);

describe('a project with a warm pool', () => {
  it('keeps its minimum launched, out of the live counts and the session lists; a viewer claims a ready one and it is replaced at once', async () => {
    const w = await world();
    const { script, agent } = await worker(w, 3);
    warmPool(w, w.projectId, { warmPoolMinIdle: 2 });
    await expect.poll(() => script.started.length).toBe(2);
    const [older, younger] = script.started as [string, string];
    expect(idle(w)).toEqual([older, younger]);
    // No customer's session yet: nothing live, nothing queued, nothing listed, no snapshot.
    expect(w.cp.sessions.counts(w.projectId)).toEqual({ liveUser: 0, queueUser: 0 });
    expect(liveSessionCount(w.cp, w.projectId)).toBe(0);
    expect(w.cp.sessions.list({ projectId: w.projectId, limit: 10 })).toEqual([]);
    expect(snapshotData(w.cp, older)).toEqual([]);
    expect(sessionRecord(w.cp, older)).toMatchObject({ status: 'Starting', pooled: true, assignedWorker: agent.workerId, uploadId: 'upl_live' });

    // The younger one is ready first: it is the one a viewer gets.
    script.report(younger, 'appIdentified', { streamingId: 'streamer_y' });
    await expect.poll(() => w.cp.sessions.warm.countByState()).toEqual({ starting: 1, ready: 1, ending: 0 });
    const claimedAt = Date.now();
    const served = claim(w);
    expect(served?.session.sessionId).toBe(younger);
    expect(served?.viewerToken).toMatch(/^pfv/);
    expect(w.cp.sessions.viewerTokenMatches(younger, served!.viewerToken)).toBe(true);
    const record = sessionRecord(w.cp, younger)!;
    expect(record.pooled).toBeUndefined();
    expect(record.claimedAt).toBeGreaterThanOrEqual(claimedAt);
    expect(record.createdAt).toBe(record.claimedAt);
    expect(record.placedAt).toBe(record.claimedAt);
    expect(w.cp.sessions.counts(w.projectId)).toEqual({ liveUser: 1, queueUser: 0 });
    expect(liveSessionCount(w.cp, w.projectId)).toBe(1);
    expect(w.cp.sessions.list({ projectId: w.projectId, limit: 10 }).map((s) => s.sessionId)).toEqual([younger]);
    // Its history says it queued for no time and was assigned at once.
    expect(snapshotData(w.cp, younger).map((d) => [d.status, d.assignedWorker])).toEqual([
      ['Enqueued', undefined],
      ['Starting', agent.workerId],
    ]);
    // The pool is refilled at once (the third slot).
    await expect.poll(() => script.started.length).toBe(3);
    expect(idle(w)).toEqual([older, script.started[2]]);
    // The viewer connects as to any session.
    script.report(younger, 'viewerConnected');
    await expect.poll(() => status(w, younger)).toBe('Running');
    expect(snapshotData(w.cp, younger).map((d) => d.status)).toEqual(['Enqueued', 'Starting', 'Running']);
    expect(w.cp.sessions.warmPoolOf(project(w))).toMatchObject({ wanted: 2, starting: 2, ready: 0, claims: 1, misses: 0 });
  });

  it('never gives one instance to two viewers who arrive together; the second waits in line for a launch', async () => {
    const w = await world();
    const { script } = await worker(w, 2);
    warmPool(w, w.projectId, { warmPoolMinIdle: 1 });
    await expect.poll(() => script.started.length).toBe(1);
    const [instance] = script.started as [string];
    script.report(instance, 'appIdentified');
    await expect.poll(() => w.cp.sessions.warm.countByState().ready).toBe(1);
    // Same turn of the event loop, as two sockets opened at once reach the gateway.
    const first = join(w);
    const second = join(w);
    expect(first.sessionId).toBe(instance);
    expect(second.sessionId).not.toBe(instance);
    expect(second.status).toBe('Enqueued');
    // The free slot goes to the waiting viewer, not to a new warm instance.
    await expect.poll(() => script.started).toEqual([instance, second.sessionId]);
    // Only the warm instance's relay takes its app's video before a viewer subscribes.
    expect(script.startedWarm).toEqual([instance]);
    expect(status(w, second.sessionId)).toBe('Starting');
    expect(w.cp.sessions.warm.countByState()).toEqual({ starting: 0, ready: 0, ending: 0 });
    expect(w.cp.sessions.warmPoolOf(project(w))).toMatchObject({ claims: 1, misses: 1 });
  });

  it("stops another project's idle instance for a viewer who would otherwise wait, oldest first", async () => {
    const w = await world();
    const other = await otherProject(w);
    const { script } = await worker(w, 2);
    warmPool(w, w.projectId, { warmPoolMinIdle: 2 });
    await expect.poll(() => script.started.length).toBe(2);
    const [oldest, newer] = script.started as [string, string];
    const viewer = join(w, other);
    expect(viewer.status).toBe('Enqueued');
    await expect.poll(() => script.stopped).toEqual([oldest]);
    expect(sessionRecord(w.cp, oldest)).toMatchObject({ status: 'Terminated', endReason: "warm instance stopped for another project's viewer", pooled: true });
    await expect.poll(() => status(w, viewer.sessionId)).toBe('Starting');
    // The pool does not take the slot back while the other project's viewer holds it.
    expect(idle(w)).toEqual([newer]);
    expect(script.started).toEqual([oldest, newer, viewer.sessionId]);
  });

  it('replaces idle instances when a new build goes live, never the one a viewer just claimed', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { script, uploads } = await worker(w, 3);
    warmPool(w, w.projectId, { warmPoolMinIdle: 2 });
    await expect.poll(() => script.started.length).toBe(2);
    const claimed = join(w);
    await expect.poll(() => script.started.length).toBe(3);
    const [, ...idleOld] = script.started;
    seedBuild(w.cp, { uploadId: 'upl_new', projectId: w.projectId, status: 'Approved' });
    setLiveUpload(w.cp, w.projectId, 'upl_new');
    // The pools are looked at every few seconds (WARM_POOL_REFRESH_MS): the idle ones of the old build go.
    clock.advance(5_000);
    await expect.poll(() => [...script.stopped].sort()).toEqual([...idleOld].sort());
    for (const id of idleOld) expect(sessionRecord(w.cp, id)?.endReason).toBe('warm instance of a build no longer live');
    expect(status(w, claimed.sessionId)).toBe('Starting');
    // Their slots refill with the new build.
    await expect.poll(() => script.started.length).toBe(5);
    expect(script.started.slice(3).map((id) => uploads.get(id))).toEqual(['upl_new', 'upl_new']);
    expect(uploads.get(claimed.sessionId)).toBe('upl_live');
  });

  it('stops warming a build whose instances keep failing, waiting longer after each failure, with an event and an admin line', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { script } = await worker(w, 2);
    warmPool(w, w.projectId, { warmPoolMinIdle: 1 });
    await expect.poll(() => script.started.length).toBe(1);
    script.crash(script.started[0]!);
    await expect.poll(() => w.cp.sessions.warm.countByState().starting).toBe(0);
    // 5 s before the next one, then 10 s.
    clock.advance(4_999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(script.started.length).toBe(1);
    clock.advance(5_001);
    await expect.poll(() => script.started.length).toBe(2);
    script.failStartWith = 'LAUNCH_FAILED';
    // The scripted agent refuses the next launches: the second failure is this one's.
    script.crash(script.started[1]!);
    await expect.poll(() => w.cp.sessions.warm.countByState().starting).toBe(0);
    clock.advance(10_000);
    await expect.poll(() => fleetEvents(w.cp, { type: 'warmPool.stopped' }).length).toBe(1);
    expect(fleetEvents(w.cp, { type: 'warmPool.stopped' })[0]).toMatchObject({ projectId: w.projectId, data: { uploadId: 'upl_live', failures: 3, reason: 'app failed to launch' } });
    const launchesWhenStopped = w.cp.sessions.warm.countByState();
    clock.advance(10 * 60_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(w.cp.sessions.warm.countByState()).toEqual(launchesWhenStopped);
    expect(w.cp.sessions.warmPoolOf(project(w)).stopped).toMatchObject({ uploadId: 'upl_live', failures: 3, reason: 'app failed to launch' });
    let out = '';
    const code = await runAdminCli(['project', 'stats', '--project', w.projectId], {
      env: { PIXELFLEET_ADMIN_SERVER: w.t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
      stdout: (t) => (out += t),
      stderr: () => undefined,
    });
    expect(code).toBe(0);
    expect(out).toMatch(/warm pool\s+0 ready, 0 starting of 1 wanted; 0 served warm, 0 waited for a launch; not warmed: 3 failures in a row \(app failed to launch\)\n/);
    // New pool settings warm the build again.
    script.failStartWith = undefined;
    warmPool(w, w.projectId, { warmPoolMinIdle: 1, warmInstanceMaxAgeMinutes: 30 });
    await expect.poll(() => w.cp.sessions.warm.countByState().starting).toBe(1);
  });

  it('is marked in `admin sessions`: unclaimed instances ready or starting (listed with the project too), unclaimed once ended; a claimed one as any session', async () => {
    // A fake clock, so that the launches, the claim and the refill each have a time of their own.
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { script } = await worker(w, 3);
    warmPool(w, w.projectId, { warmPoolMinIdle: 2 });
    await expect.poll(() => script.started.length).toBe(2);
    const [older, younger] = script.started as [string, string];
    script.report(younger, 'appIdentified');
    await expect.poll(() => w.cp.sessions.warm.countByState().ready).toBe(1);
    clock.advance(1000);
    expect(claim(w)?.session.sessionId).toBe(younger);
    // The refill is launched on the scheduler's next turn, a second after the claim.
    clock.advance(1000);
    await expect.poll(() => script.started.length).toBe(3);
    const refill = script.started[2]!;
    script.report(older, 'appIdentified');
    await expect.poll(() => w.cp.sessions.warm.countByState()).toEqual({ starting: 1, ready: 1, ending: 0 });

    const admin = async (args: string[]) => {
      let out = '';
      const code = await runAdminCli(args, { env: { PIXELFLEET_ADMIN_SERVER: w.t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN }, stdout: (t) => (out += t), stderr: () => undefined });
      expect(code).toBe(0);
      return out;
    };
    /** The table's rows as session → [STATUS, WARM]. */
    const marks = async (args: string[]): Promise<Record<string, [string | undefined, string | undefined]>> => {
      const [header, ...rows] = (await admin(args)).trimEnd().split('\n');
      expect(header).toMatch(/^SESSION +PROJECT +STATUS +WARM +REGION +WORKER +CREATED +END REASON$/);
      return Object.fromEntries(rows.map((row) => row.split(/ {2,}/)).map(([sessionId, , status, warm]) => [sessionId ?? '', [status, warm]]));
    };
    const expected = { [younger]: ['Starting', '-'], [older]: ['Starting', 'ready'], [refill]: ['Starting', 'starting'] };
    // The project's list holds the instances that hold its slots, though no customer's list does.
    expect(await marks(['sessions', '--project', w.projectId])).toEqual(expected);
    expect(await marks(['sessions'])).toEqual(expected);
    const listed = JSON.parse(await admin(['sessions', '--project', w.projectId, '--json'])) as { sessions: { sessionId: string; warmInstance: boolean; identifiedAt: string | null }[] };
    // Newest first (a claimed instance was created, for its viewer, at the claim); identifiedAt set on those whose app identified.
    expect(listed.sessions.map((s) => [s.sessionId, s.warmInstance, s.identifiedAt === null])).toEqual([
      [refill, true, true],
      [younger, false, false],
      [older, true, false],
    ]);

    // A smaller pool ends the surplus (the youngest): unclaimed in the list of every session, gone from the project's.
    warmPool(w, w.projectId, { warmPoolMinIdle: 1 });
    await expect.poll(() => script.stopped).toEqual([refill]);
    await expect.poll(async () => (await marks(['sessions']))[refill]).toEqual(['Terminated', 'unclaimed']);
    expect(Object.keys(await marks(['sessions', '--project', w.projectId])).sort()).toEqual([older, younger].sort());
  });

  it('replaces an instance nobody claimed within its maximum age', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { script } = await worker(w, 2);
    warmPool(w, w.projectId, { warmPoolMinIdle: 1, warmInstanceMaxAgeMinutes: 2 });
    await expect.poll(() => script.started.length).toBe(1);
    clock.advance(119_999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(script.stopped).toEqual([]);
    clock.advance(1);
    await expect.poll(() => script.stopped).toEqual([script.started[0]]);
    expect(sessionRecord(w.cp, script.started[0]!)?.endReason).toBe('warm instance reached its maximum age');
    await expect.poll(() => script.started.length).toBe(2);
  });

  it('grows past its minimum while viewers wait longer than its target, and shrinks back after a quiet period', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { script } = await worker(w, 2);
    warmPool(w, w.projectId, { warmPoolMinIdle: 1, warmPoolQueueWaitTargetSeconds: 10 });
    await expect.poll(() => script.started.length).toBe(1);
    // The first viewer takes the instance, the second the other slot, the third waits.
    const viewers = [join(w), join(w), join(w)];
    expect(viewers.map((v) => v.status)).toEqual(['Starting', 'Enqueued', 'Enqueued']);
    await expect.poll(() => script.started.length).toBe(2);
    clock.advance(20_000);
    w.cp.sessions.end(viewers[0]!.sessionId, 'viewerLeft');
    await expect.poll(() => status(w, viewers[2]!.sessionId)).toBe('Starting');
    // It waited 20 s, past the 10 s target: the pool wants one more.
    expect(w.cp.sessions.warmPoolOf(project(w)).wanted).toBe(2);
    w.cp.sessions.end(viewers[1]!.sessionId, 'viewerLeft');
    w.cp.sessions.end(viewers[2]!.sessionId, 'viewerLeft');
    await expect.poll(() => idle(w).length).toBe(2);
    clock.advance(10 * 60_000);
    await expect.poll(() => idle(w).length).toBe(1);
    expect(w.cp.sessions.warmPoolOf(project(w)).wanted).toBe(1);
  });
});

describe('a control plane restart with a warm pool', () => {
  it('takes up the instances the agents still run, launches none twice, and claims them as before', async () => {
    const first = await world();
    const { script, agent } = await worker(first, 3);
    warmPool(first, first.projectId, { warmPoolMinIdle: 2 });
    await expect.poll(() => script.started.length).toBe(2);
    script.report(script.started[0]!, 'appIdentified');
    await expect.poll(() => first.cp.sessions.warm.countByState().ready).toBe(1);
    const grpcPort = Number(first.t.started.grpcAddress.split(':')[1]);
    await first.t.stop();
    const second = await startTestControlPlane({ dataDir: first.t.dataDir, grpcPort });
    cleanups.push(() => second.destroy());
    await linkReaches(agent, 'connected');
    const w: World = { ...first, t: second, cp: second.cp };
    expect(idle(w).sort()).toEqual([...script.started].sort());
    expect(w.cp.sessions.warm.countByState()).toEqual({ starting: 1, ready: 1, ending: 0 });
    // Several runs later, still two: none launched twice.
    w.cp.sessions.scheduler.runNow();
    w.cp.sessions.scheduler.runNow();
    expect(script.started.length).toBe(2);
    expect(claim(w)?.session.sessionId).toBe(script.started[0]);
    await expect.poll(() => script.started.length).toBe(3);
  });
});

describe('capacity under random arrivals and departures', () => {
  it('never places more sessions and warm instances on a worker than its slots, and never serves one instance twice', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const other = await otherProject(w);
    const workers = [await worker(w, 2), await worker(w, 3)];
    warmPool(w, w.projectId, { warmPoolMinIdle: 2 });
    warmPool(w, other, { warmPoolMinIdle: 1 });
    // A small linear congruential generator: the same walk every run.
    let seed = 20261207;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const viewers: string[] = [];
    const served = new Set<string>();
    const checkSlots = () => {
      for (const { agent, script } of workers) {
        const slots = agent.workerId === workers[0]!.agent.workerId ? 2 : 3;
        expect(w.cp.registry.get(agent.workerId).usedSlots).toBeLessThanOrEqual(slots);
        expect(script.running.size).toBeLessThanOrEqual(slots);
      }
    };
    for (let step = 0; step < 300; step += 1) {
      const r = random();
      if (r < 0.35) {
        const s = join(w, random() < 0.6 ? w.projectId : other);
        if (s.status !== 'Enqueued') {
          expect(served.has(s.sessionId)).toBe(false);
          served.add(s.sessionId);
        }
        viewers.push(s.sessionId);
      } else if (r < 0.65 && viewers.length > 0) {
        const [gone] = viewers.splice(Math.floor(random() * viewers.length), 1);
        w.cp.sessions.end(gone!, 'viewerLeft');
      } else if (r < 0.85) {
        for (const { script } of workers) for (const id of script.running.keys()) if (random() < 0.5) script.report(id, 'appIdentified');
      } else {
        clock.advance(Math.floor(random() * 20_000));
      }
      // Let the scheduler run and the agents answer.
      await new Promise((resolve) => setTimeout(resolve, 5));
      checkSlots();
    }
    expect(served.size).toBeGreaterThan(5);
  });
});
