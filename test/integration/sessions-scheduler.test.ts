// Sessions, queue and scheduler on a real control plane with real agents whose session
// runtime is scripted: placement, FIFO promotion, every way a session ends and the close code
// its viewer gets, snapshots in the spec's order, and lost workers on fake time.
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '@pixelfleet/agent';
import { runAdminCli, type SessionRecord } from '@pixelfleet/control-plane';
import { ManualClock } from '@pixelfleet/common';
import type { ControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { liveSessionCount, seedLiveBuild, setLiveUpload, setProjectEnabled, setProjectSettings, snapshotData, statusHistory } from '../support/seed';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface World {
  t: TestControlPlane;
  cp: ControlPlaneWithDb;
  projectId: string;
  closes: Map<string, { code: number; reason: string }>;
}

async function world(options: { clock?: ManualClock; region?: 'europe' | 'asia-pacific'; liveBuild?: boolean; overrides?: Record<string, unknown> } = {}): Promise<World> {
  const t = await startTestControlPlane({ ...(options.clock ? { clock: options.clock } : {}), ...(options.overrides ? { overrides: options.overrides } : {}) });
  cleanups.push(() => t.destroy());
  const owner = await t.cp.accounts.createUser(`o${Date.now()}@example.com`);
  const project = await t.cp.accounts.createProject(owner.userId, 'Streamed', options.region ?? 'europe');
  if (options.liveBuild !== false) {
    seedLiveBuild(t.cp, project.projectId);
  }
  const closes = new Map<string, { code: number; reason: string }>();
  t.cp.sessions.on('ended', (s, close) => closes.set(s.sessionId, close));
  return { t, cp: t.cp, projectId: project.projectId, closes };
}

async function worker(w: World, slots = 1): Promise<{ agent: Agent; script: ScriptedSessions }> {
  const script = new ScriptedSessions();
  const { agent } = await startTestAgent({ grpcAddress: w.t.started.grpcAddress, slots, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal });
  script.agent = agent;
  cleanups.push(() => agent.close());
  await linkReaches(agent, 'connected');
  return { agent, script };
}

const join = (w: World) => w.cp.sessions.create(w.cp.accounts.requireProject(w.projectId)).session;
const status = (w: World, id: string) => w.cp.sessions.get(id).status;
const snapshots = (w: World, id: string) => snapshotData(w.cp, id);

describe('placement and the line', () => {
  it('keeps the live count it serves from memory equal to the table through every status change', async () => {
    const w = await world();
    const { script } = await worker(w);
    const table = () => liveSessionCount(w.cp, w.projectId);
    const agrees = () => expect(w.cp.sessions.counts(w.projectId).liveUser).toBe(table());
    agrees(); // the first read counts the table; later ones are kept by the status changes
    const first = join(w);
    const second = join(w);
    await expect.poll(() => script.started).toEqual([first.sessionId]);
    agrees();
    expect(w.cp.sessions.counts(w.projectId)).toEqual({ liveUser: 1, queueUser: 1 });
    script.report(first.sessionId, 'appIdentified', { streamingId: 'streamer_c' });
    script.report(first.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, first.sessionId)).toBe('Running');
    agrees();
    w.cp.sessions.end(first.sessionId, 'viewerLeft');
    agrees();
    expect(w.cp.sessions.counts(w.projectId).liveUser).toBe(0); // Terminating is not live
    await expect.poll(() => script.started).toEqual([first.sessionId, second.sessionId]);
    agrees();
    script.crash(second.sessionId);
    await expect.poll(() => status(w, second.sessionId)).toBe('Terminated');
    agrees();
    expect(w.cp.sessions.counts(w.projectId)).toEqual({ liveUser: 0, queueUser: 0 });
  });

  it('places the first viewer, queues the second, and promotes it when the first leaves', async () => {
    const w = await world();
    const { agent, script } = await worker(w);
    const first = join(w);
    const second = join(w);
    await expect.poll(() => script.started).toEqual([first.sessionId]);
    expect(w.cp.sessions.get(first.sessionId)).toMatchObject({ status: 'Starting', assignedWorker: agent.workerId });
    expect(status(w, second.sessionId)).toBe('Enqueued');
    expect(w.cp.sessions.queues.position(w.projectId, second.sessionId)).toBe(1);
    expect(w.cp.sessions.counts(w.projectId)).toEqual({ liveUser: 1, queueUser: 1 });
    let out = '';
    const code = await runAdminCli(['project', 'stats', '--project', w.projectId, '--json'], {
      env: { PIXELFLEET_ADMIN_SERVER: w.t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
      stdout: (t) => (out += t),
      stderr: () => undefined,
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({ projectId: w.projectId, liveUser: 1, queueUser: 1 });

    script.report(first.sessionId, 'appIdentified', { streamingId: 'streamer_x' });
    script.report(first.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, first.sessionId)).toBe('Running');

    w.cp.sessions.end(first.sessionId, 'viewerLeft');
    expect(status(w, first.sessionId)).toBe('Terminating');
    await expect.poll(() => status(w, first.sessionId)).toBe('Terminated');
    expect(script.stopped).toEqual([first.sessionId]);
    await expect.poll(() => script.started).toEqual([first.sessionId, second.sessionId]);
    expect(status(w, second.sessionId)).toBe('Starting');
    expect(w.cp.sessions.counts(w.projectId)).toEqual({ liveUser: 1, queueUser: 0 });

    const data = snapshots(w, first.sessionId);
    // The spec's recorded order for a normal session: Terminating is a status, not a snapshot row.
    expect(data.map((d) => d.status)).toEqual(['Enqueued', 'Starting', 'Running', 'Terminated']);
    const streamingId = `streamer_${first.sessionId.slice('session_'.length)}`;
    expect(data[0]).toEqual({ sessionId: first.sessionId, projectId: w.projectId, status: 'Enqueued', region: 'Europe', streamingId, playerId: expect.any(String) as unknown, maxRunTime: 60 });
    expect(data[0]).not.toHaveProperty('assignedWorker');
    for (const d of data.slice(1)) expect(d).toMatchObject({ assignedWorker: agent.workerId, streamingId });
    expect(first.sessionId).toMatch(/^session_\d+_\d+$/);
  });

  it('a worker with two slots takes two viewers; a third waits', async () => {
    const w = await world();
    const { script } = await worker(w, 2);
    const ids = [join(w), join(w), join(w)].map((s) => s.sessionId);
    await expect.poll(() => script.started.length).toBe(2);
    expect(script.started).toEqual(ids.slice(0, 2));
    expect(status(w, ids[2]!)).toBe('Enqueued');
  });

  it('spreads sessions over workers, never over a drained or foreign-region one', async () => {
    const w = await world();
    const a = await worker(w);
    const drained = await worker(w);
    w.cp.registry.drain(drained.agent.workerId);
    const other = new ScriptedSessions();
    const { agent: far } = await startTestAgent({ grpcAddress: w.t.started.grpcAddress, region: 'asia-pacific', handlers: other.handlers, inventory: other.inventory });
    cleanups.push(() => far.close());
    await linkReaches(far, 'connected');
    const s1 = join(w);
    const s2 = join(w);
    await expect.poll(() => a.script.started).toEqual([s1.sessionId]);
    expect(drained.script.started).toEqual([]);
    expect(other.started).toEqual([]);
    expect(status(w, s2.sessionId)).toBe('Enqueued');
    w.cp.registry.undrain(drained.agent.workerId);
    await expect.poll(() => drained.script.started).toEqual([s2.sessionId]);
  });
});

describe('how sessions end, and what the viewer is told', () => {
  it('an app that never starts ends the session with 4003', async () => {
    const w = await world();
    const { script } = await worker(w);
    script.failStartWith = 'LAUNCH_TIMEOUT';
    const s = join(w);
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4003, reason: 'app failed to launch' });
    expect(w.cp.sessions.get(s.sessionId).endReason).toBe('app failed to launch');
  });

  it('a launch-failed event ends the session with 4003', async () => {
    const w = await world();
    const { script } = await worker(w);
    const s = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    script.running.delete(s.sessionId);
    script.report(s.sessionId, 'launchFailed', { message: 'never identified' });
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.closes.get(s.sessionId)?.code).toBe(4003);
  });

  it('an app that crashes ends the session with 4006 and frees the slot for the next viewer', async () => {
    const w = await world();
    const { script } = await worker(w);
    const s = join(w);
    const next = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    script.report(s.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, s.sessionId)).toBe('Running');
    script.crash(s.sessionId);
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4006, reason: 'app closed or crashed' });
    expect(snapshots(w, s.sessionId).map((d) => d.status)).toEqual(['Enqueued', 'Starting', 'Running', 'Terminated']);
    await expect.poll(() => script.started).toEqual([s.sessionId, next.sessionId]);
  });

  it('a region without any worker refuses waiting viewers with 4001', async () => {
    const w = await world({ region: 'asia-pacific' });
    await worker(w); // europe only
    const s = join(w);
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4001, reason: 'no streaming server available in this region' });
  });

  it('waiting viewers hear 4001 when the region\'s last worker is drained', async () => {
    const w = await world();
    const { agent, script } = await worker(w);
    const first = join(w);
    const waiting = join(w);
    await expect.poll(() => script.started).toEqual([first.sessionId]);
    w.cp.registry.drain(agent.workerId);
    await expect.poll(() => status(w, waiting.sessionId)).toBe('Terminated');
    expect(w.closes.get(waiting.sessionId)?.code).toBe(4001);
    expect(status(w, first.sessionId)).toBe('Starting'); // draining lets running sessions finish
  });

  it('a project without a live build refuses with 4002; a disabled one with 4000', async () => {
    const w = await world({ liveBuild: false });
    await worker(w);
    const s = join(w);
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.closes.get(s.sessionId)?.code).toBe(4002);

    setLiveUpload(w.cp, w.projectId, 'upl_x');
    setProjectEnabled(w.cp, w.projectId, false);
    const d = join(w);
    await expect.poll(() => status(w, d.sessionId)).toBe('Terminated');
    expect(w.closes.get(d.sessionId)).toEqual({ code: 4000, reason: 'project disabled' });
  });

  it('ending a session is idempotent', async () => {
    const w = await world();
    const { script } = await worker(w);
    const s = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    const a = w.cp.sessions.end(s.sessionId, 'ended');
    const b = w.cp.sessions.end(s.sessionId, 'ended');
    expect(b.status).toBe(a.status);
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.cp.sessions.end(s.sessionId, 'ended').status).toBe('Terminated');
    expect(script.stopped).toEqual([s.sessionId]);
  });
});

describe('on fake time', () => {
  it('maxRunTime, counted from the placement, ends a running session with 4004', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    setProjectSettings(w.cp, w.projectId, { maxRunTime: 2 });
    const { script } = await worker(w);
    const s = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    // The run time counts from the placement: the slot was held while the app started.
    clock.advance(30_000);
    script.report(s.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, s.sessionId)).toBe('Running');
    clock.advance(89_000);
    expect(status(w, s.sessionId)).toBe('Running');
    clock.advance(1_000);
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4004, reason: 'maximum run time reached' });
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.cp.sessions.get(s.sessionId).endReason).toBe('maxRunTime');
    expect(snapshots(w, s.sessionId).every((d) => d.maxRunTime === 2)).toBe(true);
  });

  it('afkTimeout ends a running session whose viewer sends no input (4007); input keeps it alive', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    setProjectSettings(w.cp, w.projectId, { afkTimeout: 60 });
    const { agent, script } = await worker(w);
    const s = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    script.report(s.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, s.sessionId)).toBe('Running');
    const epoch = agent.link.connectionEpoch!;

    clock.advance(30_000);
    // The agent's heartbeat says input arrived (a new last-input value).
    w.cp.registry.heartbeat(agent.workerId, epoch, [{ sessionId: s.sessionId, lastInputAtMs: 1, relay: undefined }]);
    clock.advance(59_000);
    expect(status(w, s.sessionId)).toBe('Running');
    // The same value again is not new input.
    w.cp.registry.heartbeat(agent.workerId, epoch, [{ sessionId: s.sessionId, lastInputAtMs: 1, relay: undefined }]);
    clock.advance(1_000);
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4007, reason: 'ended after a period without input' });
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    expect(w.cp.sessions.get(s.sessionId).endReason).toBe('afkTimeout');
  });

  it('sessions of a worker that stays unreachable past the grace are lost (4006)', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { agent, script } = await worker(w);
    const s = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    script.report(s.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, s.sessionId)).toBe('Running');
    const workerId = agent.workerId;
    await agent.close();
    await expect.poll(() => w.cp.registry.get(workerId).link).toBe('disconnected');
    clock.advance(31_000); // lease runs out
    expect(w.cp.registry.get(workerId).link).toBe('unreachable');
    expect(status(w, s.sessionId)).toBe('Running');
    clock.advance(120_000); // the grace for media outliving a control-link blip
    expect(status(w, s.sessionId)).toBe('Terminated');
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4006, reason: 'streaming server lost' });
  });
});

describe('a short worker outage', () => {
  it("queued viewers keep their places while the region's only worker is within its grace, and are placed on a worker that comes", async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { agent, script } = await worker(w);
    const running = join(w);
    await expect.poll(() => script.started).toEqual([running.sessionId]);
    const queued = join(w);
    await agent.close();
    await expect.poll(() => w.cp.registry.get(agent.workerId).link).toBe('disconnected');
    clock.advance(31_000); // unreachable: before, every queued viewer heard 4001 at once
    expect(w.cp.registry.get(agent.workerId).link).toBe('unreachable');
    await new Promise<void>((resolve) => setImmediate(resolve)); // the scheduler's run after the change
    expect(status(w, queued.sessionId)).toBe('Enqueued');
    expect(w.cp.sessions.awaitsServer(w.projectId)).toBe(true);
    const { script: other } = await worker(w);
    await expect.poll(() => other.started).toEqual([queued.sessionId]);
  });

  it('queued viewers hear 4001 when the grace of the last worker ends', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { agent, script } = await worker(w);
    const running = join(w);
    await expect.poll(() => script.started).toEqual([running.sessionId]);
    script.report(running.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, running.sessionId)).toBe('Running');
    const queued = join(w);
    await agent.close();
    await expect.poll(() => w.cp.registry.get(agent.workerId).link).toBe('disconnected');
    clock.advance(31_000); // the lease ended at 30 s
    clock.advance(118_000);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(status(w, queued.sessionId)).toBe('Enqueued');
    clock.advance(1_000); // 150 s: the grace (120 s from the lease's end) is over
    await expect.poll(() => status(w, queued.sessionId)).toBe('Terminated');
    expect(w.closes.get(queued.sessionId)).toEqual({ code: 4001, reason: 'no streaming server available in this region' });
    expect(status(w, running.sessionId)).toBe('Terminated');
  });
});

describe('no slot held by a session that is not streaming', () => {
  it('a placed session whose viewer never connects ends with 4013 at the connect timeout, and its slot goes to the next viewer', async () => {
    const clock = new ManualClock(Date.now());
    // Shorter than the worker's lease (30 s): the fake clock does not outrun the agent's heartbeats.
    const w = await world({ clock, overrides: { sessions: { connectTimeoutSeconds: 25 } } });
    const { script } = await worker(w);
    const s = join(w);
    const next = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    clock.advance(24_999);
    expect(status(w, s.sessionId)).toBe('Starting');
    clock.advance(1);
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4013, reason: 'the video connection did not come up in time' });
    await expect.poll(() => script.stopped).toEqual([s.sessionId]);
    await expect.poll(() => status(w, s.sessionId)).toBe('Terminated');
    await expect.poll(() => script.started).toEqual([s.sessionId, next.sessionId]);
    expect(w.cp.sessions.get(s.sessionId)).toMatchObject({ status: 'Terminated', endReason: 'viewer never connected' });
  });

  it('a Running session whose media legs dropped ends with 4013 after the resume grace unless the viewer renegotiates', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock, overrides: { viewers: { resumeGraceSeconds: 20 } } });
    const { agent, script } = await worker(w);
    const s = join(w);
    await expect.poll(() => script.started).toEqual([s.sessionId]);
    script.report(s.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, s.sessionId)).toBe('Running');
    // Told on the worker's stream as the agent tells it (synchronous here, so the fake clock can follow).
    const tell = (kind: 'viewerDisconnected' | 'viewerConnected') =>
      w.cp.registry.sessionEvent(agent.workerId, agent.link.connectionEpoch!, { sessionId: s.sessionId, kind, occurredAtMs: clock.now(), exitCode: 0, message: '', streamingId: '' });
    tell('viewerDisconnected');
    clock.advance(19_000);
    tell('viewerConnected'); // renegotiated in time
    clock.advance(60_000);
    expect(status(w, s.sessionId)).toBe('Running');
    tell('viewerDisconnected');
    clock.advance(19_999);
    expect(status(w, s.sessionId)).toBe('Running');
    clock.advance(1);
    expect(w.closes.get(s.sessionId)).toEqual({ code: 4013, reason: 'the video connection was lost' });
    await expect.poll(() => w.cp.sessions.get(s.sessionId)).toMatchObject({ status: 'Terminated', endReason: 'stream connection lost' });
    expect(script.stopped).toEqual([s.sessionId]);
  });
});

describe('control plane restart', () => {
  it('restarted while a worker is unreachable: an operator ends its Terminating session at once; the others are freed at the stop deadline, never held for good', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock });
    const { agent, script } = await worker(w, 2);
    const [a, b] = [join(w), join(w)];
    await expect.poll(() => script.started).toEqual([a.sessionId, b.sessionId]);
    const workerId = agent.workerId;
    await agent.close();
    await expect.poll(() => w.cp.registry.get(workerId).link).toBe('disconnected');
    clock.advance(31_000);
    expect(w.cp.registry.get(workerId).link).toBe('unreachable');
    // Ended while their worker cannot confirm the stops.
    w.cp.sessions.end(a.sessionId, 'ended');
    w.cp.sessions.end(b.sessionId, 'ended');
    await w.t.stop();
    const again = await startTestControlPlane({ dataDir: w.t.dataDir, clock, logs: w.t.logs });
    cleanups.push(() => again.stop());
    const get = (id: string): SessionRecord => again.cp.sessions.get(id);
    expect([get(a.sessionId).status, get(b.sessionId).status]).toEqual(['Terminating', 'Terminating']);
    let out = '';
    const code = await runAdminCli(['session', 'end', '--session', a.sessionId, '--json'], {
      env: { PIXELFLEET_ADMIN_SERVER: again.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
      stdout: (t) => (out += t),
      stderr: () => undefined,
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ sessionId: a.sessionId, status: 'Terminated' });
    expect(get(b.sessionId).status).toBe('Terminating');
    clock.advance(40_000); // the stop grace (10 s) and the confirmation margin (30 s)
    expect(get(b.sessionId)).toMatchObject({ status: 'Terminated', endReason: 'ended' });
  });

  it('takes sessions up where they stood: the worker keeps its app, the line keeps its order; viewers that do not come back within the grace end as control plane restarted', async () => {
    const clock = new ManualClock(Date.now());
    const w = await world({ clock, overrides: { viewers: { resumeGraceSeconds: 20 } } });
    const { script } = await worker(w);
    const placed = join(w);
    const waiting = join(w);
    await expect.poll(() => script.started).toEqual([placed.sessionId]);
    script.report(placed.sessionId, 'viewerConnected');
    await expect.poll(() => status(w, placed.sessionId)).toBe('Running');
    await w.t.stop();
    const again = await startTestControlPlane({ dataDir: w.t.dataDir, grpcPort: w.t.started.grpcPort, clock, logs: w.t.logs, overrides: { viewers: { resumeGraceSeconds: 20 } } });
    cleanups.push(() => again.stop());
    const get = (id: string): SessionRecord => again.cp.sessions.get(id);
    expect(get(placed.sessionId).status).toBe('Running');
    expect(get(waiting.sessionId).status).toBe('Enqueued');
    expect(again.cp.sessions.queues.position(w.projectId, waiting.sessionId)).toBe(1);
    // The agent redials; its Hello lists the app, which keeps running.
    await expect.poll(() => again.cp.registry.placeable('europe').length).toBe(1);
    expect(get(placed.sessionId).status).toBe('Running');
    expect(script.stopped).toEqual([]);
    clock.advance(19_999);
    expect(get(placed.sessionId).status).toBe('Running');
    clock.advance(1); // nobody resumed within the grace
    await expect.poll(() => script.stopped).toEqual([placed.sessionId]);
    await expect.poll(() => get(placed.sessionId)).toMatchObject({ status: 'Terminated', endReason: 'control plane restarted' });
    expect(get(waiting.sessionId)).toMatchObject({ status: 'Terminated', endReason: 'control plane restarted' });
    expect(statusHistory(again.cp, placed.sessionId)).toEqual(['Enqueued', 'Starting', 'Running', 'Terminated']);
  });
});
