// The control plane ⇄ agent link with real parts: real gRPC on 127.0.0.1, real SQLite files,
// real agents. Enroll → connect → heartbeat → restart → redial and reconcile; at-least-once
// command delivery answered from the agent's journal; drain/undrain; lease expiry on fake time.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CommandFailure, type Agent, type CommandHandlers } from '@pixelfleet/agent';
import { decodeStoredCommand } from '@pixelfleet/proto';
import { ManualClock } from '@pixelfleet/common';
import { nextEvent, startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { commandPhase, fleetEvents, seedProject, seedSession, sessionStatus, workerCommands } from '../support/seed';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function controlPlane(options: Parameters<typeof startTestControlPlane>[0] = {}): Promise<TestControlPlane> {
  const t = await startTestControlPlane(options);
  cleanups.push(() => t.destroy());
  return t;
}

async function agentFor(t: TestControlPlane, options: Partial<Parameters<typeof startTestAgent>[0]> = {}): Promise<Agent> {
  const { agent } = await startTestAgent({ grpcAddress: t.started.grpcAddress, ...options });
  cleanups.push(() => agent.close());
  return agent;
}

describe('enroll and connect', () => {
  it('enrolls with the join token, connects, and shows up as a connected worker', async () => {
    const t = await controlPlane();
    const connected = nextEvent(t.cp, (e) => e.type === 'worker.connected');
    const agent = await agentFor(t, { slots: 2 });
    await linkReaches(agent, 'connected');
    const event = await connected;
    expect(event.workerId).toBe(agent.workerId);

    const [worker] = t.cp.registry.list();
    expect(worker).toMatchObject({ workerId: agent.workerId, hostname: 'test-worker', region: 'europe', slots: 2, status: 'connected', link: 'connected', draining: false, usedSlots: 0 });
    expect(agent.link.connectionEpoch).toBe(1);
  });

  it('keeps the worker token across agent restarts instead of enrolling again', async () => {
    const t = await controlPlane();
    const first = await startTestAgent({ grpcAddress: t.started.grpcAddress });
    await linkReaches(first.agent, 'connected');
    const workerId = first.agent.workerId;
    await first.agent.close();

    const second = await agentFor(t, { dataDir: first.dataDir });
    await linkReaches(second, 'connected');
    expect(second.workerId).toBe(workerId);
    expect(t.cp.registry.list()).toHaveLength(1);
    expect(second.link.connectionEpoch).toBe(2);
  });

  it('a worker keeps the region it enrolled in: a Hello naming another is refused with the reason, and nothing moves', async () => {
    const t = await controlPlane();
    const first = await startTestAgent({ grpcAddress: t.started.grpcAddress, region: 'europe' });
    await linkReaches(first.agent, 'connected');
    const workerId = first.agent.workerId;
    await first.agent.close();
    await expect.poll(() => t.cp.registry.list()[0]?.link).not.toBe('connected');

    const refused = new Promise<Record<string, unknown>>((resolve) => {
      const off = t.logs.tap((line) => {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (parsed.msg === 'Hello refused: the worker names another region than it enrolled in') {
          off();
          resolve(parsed);
        }
      });
    });
    const moved = await agentFor(t, { dataDir: first.dataDir, region: 'us-east-1' });
    expect(await refused).toMatchObject({ workerId, enrolledRegion: 'europe', helloRegion: 'us-east-1' });
    expect(moved.link.linkState).not.toBe('connected');
    expect(t.cp.registry.list()).toEqual([expect.objectContaining({ workerId, region: 'europe' })]);
    expect(t.cp.registry.placeable('us-east-1')).toEqual([]);
    expect(t.cp.registry.placeable('europe')).toEqual([]);
  });

  it('saves the worker token in a file only its owner can read or write (0600), whatever the umask', async () => {
    const t = await controlPlane();
    // Umask 0 while the agent enrolls: the mode seen is the one the agent asks for (a file created
    // 0644 would stay 0644), not the test runner's umask hiding it.
    const umask = process.umask(0);
    const { agent, dataDir } = await startTestAgent({ grpcAddress: t.started.grpcAddress })
      .then(async (started) => {
        cleanups.push(() => started.agent.close());
        await linkReaches(started.agent, 'connected');
        return started;
      })
      .finally(() => process.umask(umask));
    const file = join(dataDir, 'worker.json');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ workerId: agent.workerId, workerToken: expect.stringMatching(/^pfw_/) as unknown });
    expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
  });

  it('renews the lease on every heartbeat', async () => {
    const t = await controlPlane({ overrides: { workers: { heartbeatIntervalSeconds: 1, leaseSeconds: 3 } } });
    const agent = await agentFor(t);
    await linkReaches(agent, 'connected');
    const before = t.cp.registry.get(agent.workerId).leaseExpiresAt!;
    // The agent heartbeats every second; wait for the lease to move forward.
    await expect.poll(() => t.cp.registry.get(agent.workerId).leaseExpiresAt!, { timeout: 5_000, interval: 100 }).toBeGreaterThan(before);
  });
});

describe('control plane restart', () => {
  it('the agent redials after a control plane restart (seen as CANCELLED/ABORTED) and reconnects with a new epoch', async () => {
    const t = await controlPlane();
    const agent = await agentFor(t);
    await linkReaches(agent, 'connected');

    // Watched from before the stop: with a 50 ms back-off the agent may be redialing ('connecting')
    // by the time a slow stop returns.
    const waiting = linkReaches(agent, 'waiting');
    await t.stop();
    await waiting;
    expect(t.logs.text()).toContain('ending agent stream');

    const restarted = await startTestControlPlane({ dataDir: t.dataDir, grpcPort: t.started.grpcPort, logs: t.logs });
    cleanups.push(() => restarted.stop());
    // The agent was 'waiting', so reaching 'connected' means it redialed the new process.
    await linkReaches(agent, 'connected');
    expect(fleetEvents(restarted.cp, { type: 'worker.connected', workerId: agent.workerId })).toHaveLength(2);

    expect(agent.link.connects).toBeGreaterThanOrEqual(2);
    expect(agent.link.connectionEpoch).toBe(2);
    expect(restarted.cp.registry.get(agent.workerId)).toMatchObject({ link: 'connected', status: 'connected' });
  });

  it('a Hello reconciles: a session the agent no longer runs is over, others are untouched', async () => {
    const t = await controlPlane();
    const first = await startTestAgent({ grpcAddress: t.started.grpcAddress });
    await linkReaches(first.agent, 'connected');
    const { projectId } = await seedProject(t.cp);
    // The control plane believes a session runs on this worker; the restarted agent runs none.
    const lost = seedSession(t.cp, { projectId, status: 'Running', workerId: first.agent.workerId });
    const queued = seedSession(t.cp, { projectId, status: 'Enqueued' });
    await first.agent.close();

    const again = await agentFor(t, { dataDir: first.dataDir });
    await linkReaches(again, 'connected');
    await expect.poll(() => sessionStatus(t.cp, lost)).toEqual({ status: 'Terminated', endReason: 'worker lost the session' });
    expect(sessionStatus(t.cp, queued).status).toBe('Enqueued');
  });

  it('a throwing Hello listener is logged and skipped: later listeners, reconcile and the command resend still run', async () => {
    const t = await controlPlane();
    const first = await startTestAgent({ grpcAddress: t.started.grpcAddress });
    await linkReaches(first.agent, 'connected');
    const workerId = first.agent.workerId;
    await first.agent.close();
    const { projectId } = await seedProject(t.cp);
    const lost = seedSession(t.cp, { projectId, status: 'Running', workerId });
    // Queued while the agent is away: delivered by the Hello's resend, after the listeners ran.
    const command = t.cp.registry.sendCommand(workerId, { kind: 'deleteBuild', uploadId: 'upl_1' });
    t.cp.registry.on('helloAccepted', () => {
      throw new Error('listener broke');
    });
    const later: string[] = [];
    t.cp.registry.on('helloAccepted', (id) => later.push(id));

    const again = await agentFor(t, { dataDir: first.dataDir });
    await linkReaches(again, 'connected');
    await expect.poll(() => commandPhase(t.cp, command.commandId)).toBe('SUCCEEDED');
    expect(later).toEqual([workerId]);
    expect(sessionStatus(t.cp, lost)).toEqual({ status: 'Terminated', endReason: 'worker lost the session' });
    expect(t.logs.text()).toContain('registry listener threw');
    expect(t.logs.text()).toContain('listener broke');
  });

  it('stops the apps of sessions the control plane has ended, never placed there, or does not know', async () => {
    const t = await controlPlane();
    const first = await startTestAgent({ grpcAddress: t.started.grpcAddress });
    await linkReaches(first.agent, 'connected');
    const workerId = first.agent.workerId;
    await first.agent.close();
    const { projectId } = await seedProject(t.cp);
    // Ended while the agent was away (its stop long finished), yet the app still runs there.
    const ended = seedSession(t.cp, { projectId, status: 'Terminated', workerId });
    const neverPlacedHere = seedSession(t.cp, { projectId, status: 'Terminated' });
    const stopped: string[] = [];
    const running = [ended, neverPlacedHere, 'session_1_1'].map((sessionId) => ({ sessionId, projectId, startedAtMs: Date.now() }));
    const handlers: CommandHandlers = {
      startSession: () => Promise.reject(new CommandFailure('UNSUPPORTED', 'no')),
      stopSession: (c) => {
        stopped.push(c.sessionId);
        running.length = 0;
        return Promise.resolve();
      },
      prepareBuild: () => Promise.resolve(),
      deleteBuild: () => Promise.resolve(),
    };
    const finished = new Promise<void>((resolve) =>
      t.cp.registry.on('commandFinished', (_w, c, ack) => c.kind === 'stopSession' && ack.phase === 'SUCCEEDED' && resolve()),
    );
    await agentFor(t, { dataDir: first.dataDir, slots: 2, handlers, inventory: { runningSessions: () => running, cachedBuilds: () => [] } });
    await finished;
    await expect.poll(() => stopped).toEqual([ended, neverPlacedHere, 'session_1_1']);
    const stops = workerCommands(t.cp, workerId, 'stopSession');
    expect(stops.map((c) => decodeStoredCommand(c.payload))).toEqual([ended, neverPlacedHere, 'session_1_1'].map((sessionId) => ({ kind: 'stopSession', sessionId, reason: expect.any(String) as string, graceMs: expect.any(Number) as number })));
  });
});

describe('at-least-once commands', () => {
  it('a command re-delivered after a restart is answered from the journal, not run again', async () => {
    const t = await controlPlane();
    let runs = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const handlers: CommandHandlers = {
      startSession: async () => {
        runs += 1;
        await released;
      },
      stopSession: () => Promise.resolve(),
      prepareBuild: () => Promise.resolve(),
      deleteBuild: () => Promise.resolve(),
    };
    const agent = await agentFor(t, { handlers });
    await linkReaches(agent, 'connected');

    const command = t.cp.registry.sendCommand(agent.workerId, {
      kind: 'startSession', sessionId: 'session_1_1', projectId: 'prj_x', uploadId: 'upl_x', streamingId: 's', playerId: 'p',
      codec: 'H264', minBitrateBps: 1, maxBitrateBps: 2, resX: 1280, resY: 720, fps: 30, launchArgs: [], maxRunTimeMinutes: 0, startupTimeoutSeconds: 30, warm: false,
    });
    await expect.poll(() => commandPhase(t.cp, command.commandId)).toBe('ACCEPTED');
    expect(agent.executor.runs).toBe(1);

    // The control plane goes away while the command runs; its final ack is lost with the stream.
    const waiting = linkReaches(agent, 'waiting');
    await t.stop();
    await waiting;
    release();
    await expect.poll(() => agent.executor.lastAckedSeq).toBe(command.seq);

    const restarted = await startTestControlPlane({ dataDir: t.dataDir, grpcPort: t.started.grpcPort, logs: t.logs });
    cleanups.push(() => restarted.stop());
    const finished = new Promise<string>((resolve) =>
      restarted.cp.registry.on('commandFinished', (_w, c, ack) => c.kind === 'startSession' && resolve(ack.phase)),
    );
    expect(await finished).toBe('SUCCEEDED');
    expect(commandPhase(restarted.cp, command.commandId)).toBe('SUCCEEDED');
    expect(runs).toBe(1);
    expect(agent.executor.runs).toBe(1);
  });

  it('a command the agent cannot run is failed with its reason', async () => {
    const t = await controlPlane();
    const agent = await agentFor(t);
    await linkReaches(agent, 'connected');
    const finished = new Promise<{ phase: string; errorCode: string }>((resolve) =>
      t.cp.registry.on('commandFinished', (_w, _c, ack) => resolve({ phase: ack.phase, errorCode: ack.errorCode })),
    );
    // An upload id that would leave the agent's builds folder: refused before any download.
    t.cp.registry.sendCommand(agent.workerId, { kind: 'prepareBuild', uploadId: '../upl_1', projectId: 'prj_1', downloadUrl: 'http://127.0.0.1/x.zip', sizeBytes: 1, sha256: 'a'.repeat(64) });
    expect(await finished).toEqual({ phase: 'FAILED', errorCode: 'BAD_COMMAND' });
  });
});

describe('drain and undrain', () => {
  it('a drained worker is told so, keeps its link and is not placeable until undrained', async () => {
    const t = await controlPlane();
    const agent = await agentFor(t);
    await linkReaches(agent, 'connected');
    expect(t.cp.registry.placeable('europe').map((w) => w.workerId)).toEqual([agent.workerId]);

    const drained = t.cp.registry.drain(agent.workerId);
    expect(drained).toMatchObject({ status: 'draining', link: 'connected', draining: true });
    await expect.poll(() => agent.draining).toBe(true);
    expect(t.cp.registry.placeable('europe')).toEqual([]);

    // Draining twice is not an error and records one event.
    t.cp.registry.drain(agent.workerId);
    const undrained = t.cp.registry.undrain(agent.workerId);
    expect(undrained).toMatchObject({ status: 'connected', draining: false });
    await expect.poll(() => agent.draining).toBe(false);
    expect(t.cp.registry.placeable('europe')).toHaveLength(1);
    const types = fleetEvents(t.cp).filter((e) => /^worker\..*drained$/.test(e.type));
    expect(types.map((e) => e.type)).toEqual(['worker.drained', 'worker.undrained']);
  });

  it('a drained worker stays drained across a reconnect (Welcome says so)', async () => {
    const t = await controlPlane();
    const first = await startTestAgent({ grpcAddress: t.started.grpcAddress });
    await linkReaches(first.agent, 'connected');
    t.cp.registry.drain(first.agent.workerId);
    await first.agent.close();
    const again = await agentFor(t, { dataDir: first.dataDir });
    await linkReaches(again, 'connected');
    expect(again.draining).toBe(true);
  });
});

describe('leases on fake time', () => {
  it('a silent worker turns unreachable when its lease expires, and connected again on its next heartbeat', async () => {
    const clock = new ManualClock(Date.now());
    const t = await controlPlane({ clock, overrides: { workers: { heartbeatIntervalSeconds: 10, leaseSeconds: 30 } } });
    const agent = await agentFor(t);
    await linkReaches(agent, 'connected');

    clock.advance(29_000);
    expect(t.cp.registry.get(agent.workerId).link).toBe('connected');
    clock.advance(2_000);
    expect(t.cp.registry.get(agent.workerId)).toMatchObject({ link: 'unreachable', status: 'unreachable' });
    expect(t.cp.registry.placeable('europe')).toEqual([]);

    // Heartbeats run on the agent's real timer every heartbeatInterval; the test nudges one
    // through the control plane's handler with the stream's epoch instead of waiting 10 s.
    t.cp.registry.heartbeat(agent.workerId, agent.link.connectionEpoch!);
    expect(t.cp.registry.get(agent.workerId).link).toBe('connected');
  });

  it('a worker whose stream closed is disconnected, then unreachable once the lease runs out', async () => {
    const clock = new ManualClock(Date.now());
    const t = await controlPlane({ clock });
    const agent = await agentFor(t);
    await linkReaches(agent, 'connected');
    const workerId = agent.workerId;
    const disconnected = nextEvent(t.cp, (e) => e.type === 'worker.disconnected');
    await agent.close();
    await disconnected;
    expect(t.cp.registry.get(workerId).link).toBe('disconnected');
    clock.advance(31_000);
    expect(t.cp.registry.get(workerId).link).toBe('unreachable');
  });
});
