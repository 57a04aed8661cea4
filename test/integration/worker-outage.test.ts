// Issue 12, rows 2, 4, 5 and 7, with the real processes. Rows 2 and 7: the streaming server's agent
// is frozen (SIGSTOP) until its lease runs out, as a machine that hangs or drops off the network;
// a short lease and grace are configured (`workers.leaseSeconds`, `workers.lostGraceSeconds`):
// waiting is the point of these tests, not their cost. Row 4: a viewer that never negotiates.
// Row 5: the agent frozen past ICE consent (RFC 7675: 30 s after the last consent answer, a
// constant of werift's), so the viewer's media legs fail while its signalling is fine.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakePlayer } from '../support/fake-player';
import { killAll, sessionRecord, sessionStatuses } from '../support/fleet-processes';
import { restartServe, startStreamingFleet, serveMockAppBuild } from '../support/streaming-fleet';
import { WeriftViewer } from '../support/werift-viewer';

const SHORT = { workers: { heartbeatIntervalSeconds: 1, leaseSeconds: 3, lostGraceSeconds: 8 } };

let build: Awaited<ReturnType<typeof serveMockAppBuild>>;
const dirs: string[] = [];
const frozen: number[] = [];

beforeAll(async () => {
  build = await serveMockAppBuild();
});

afterAll(async () => {
  await build.close();
});

afterEach(async () => {
  for (const pid of frozen.splice(0)) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // gone
    }
  }
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A fleet (1 slot) in a temp folder of its own (removed after the test), serve started with config. */
async function freshFleet(prefix: string, config: Record<string, unknown>) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return { dir, ...(await startStreamingFleet({ dir, buildUrl: build.buildUrl, config })) };
}

/** A fleet (1 slot) streaming to a werift viewer, and a second viewer waiting in line. */
async function fleetWithLine() {
  const { dir, ...fleet } = await freshFleet('pf-outage-', SHORT);
  const watching = await WeriftViewer.join(fleet.wsUrl);
  await watching.until(() => watching.rtpPackets > 30, 60_000);
  const waiting = await FakePlayer.connect(fleet.wsUrl);
  const waitingId = (await waiting.next('pixelfleetSession')).sessionId as string;
  expect(await waiting.next('pixelfleetQueue')).toMatchObject({ position: 1, waitingForServer: false });
  const freeze = () => {
    fleet.agent.child.kill('SIGSTOP');
    frozen.push(fleet.agent.child.pid!);
  };
  const thaw = () => fleet.agent.child.kill('SIGCONT');
  return { dir, ...fleet, watching, waiting, waitingId, freeze, thaw };
}

const statusOf = async (grpcAddress: string, sessionId: string) => (await sessionStatuses(grpcAddress)).get(sessionId);

describe("a region's only worker drops off for a while", () => {
  it('row 7: the waiting viewer keeps its place and is told the line waits for a server; the worker back within its grace keeps its session and serves the line', { timeout: 90_000 }, async () => {
    const f = await fleetWithLine();
    f.freeze();
    // Past the lease: the worker is unreachable; the viewer is told, and not sent away (no 4001).
    expect(await f.waiting.next('pixelfleetQueue', 15_000)).toMatchObject({ position: 1, waitingForServer: true });
    f.thaw();
    expect(await f.waiting.next('pixelfleetQueue', 15_000)).toMatchObject({ position: 1, waitingForServer: false });
    expect(await statusOf(f.cp.grpcAddress, f.watching.sessionId)).toBe('Running');
    expect(await statusOf(f.cp.grpcAddress, f.waitingId)).toBe('Enqueued');
    // The watching viewer leaves: the waiting one gets the slot.
    f.watching.signalling.close();
    expect(await f.waiting.next('pixelfleetStatus', 20_000)).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
    await f.watching.pc.close();
  });

  it('row 7: past the grace the waiting viewer hears 4001 and the running session is lost (4006)', { timeout: 90_000 }, async () => {
    const f = await fleetWithLine();
    const started = performance.now();
    f.freeze();
    expect(await f.waiting.closed).toEqual({ code: 4001, reason: 'no streaming server available in this region' });
    // Not before the lease (3 s) and the grace (8 s) ran out.
    expect(performance.now() - started).toBeGreaterThan(10_000);
    expect(await f.watching.signalling.closed).toEqual({ code: 4006, reason: 'streaming server lost' });
    await f.watching.pc.close();
  });

  it('row 2: the control plane restarted while the worker is unreachable ends its sessions when what is left of the grace runs out; never Terminating for good', { timeout: 90_000 }, async () => {
    const f = await fleetWithLine();
    f.freeze();
    expect(await f.waiting.next('pixelfleetQueue', 15_000)).toMatchObject({ waitingForServer: true });
    const stoppedAt = performance.now();
    f.cp.child.kill('SIGTERM');
    // The shutdown does not wait for the frozen agent's connection (gRPC is forced after 5 s).
    expect(await f.cp.exited).toBe(0);
    expect(performance.now() - stoppedAt).toBeLessThan(8_000);
    const restartedAt = performance.now();
    const again = await restartServe(f.dir, f.cp, SHORT);
    // Both sessions are taken up; the worker never comes back within what is left of its grace.
    await expect.poll(() => statusOf(again.grpcAddress, f.watching.sessionId), { timeout: 20_000, interval: 200 }).toBe('Terminated');
    expect(performance.now() - restartedAt).toBeLessThan(9_000);
    const ended = (await sessionStatuses(again.grpcAddress)).get(f.waitingId);
    expect(ended).toBe('Terminated');
    await f.watching.pc.close();
  });
});

describe('no slot held by a viewer that never streams', () => {
  it('row 4: a viewer that opens the socket and never completes WebRTC is closed with 4013 at sessions.connectTimeoutSeconds; its app is stopped and the slot goes to the next viewer', { timeout: 90_000 }, async () => {
    const fleet = await freshFleet('pf-connect-timeout-', { sessions: { connectTimeoutSeconds: 8 } });
    const idle = await FakePlayer.connect(fleet.wsUrl);
    const idleId = (await idle.next('pixelfleetSession')).sessionId as string;
    await idle.next('pixelfleetStatus'); // placed: the app starts, and the viewer never answers an offer
    const next = await WeriftViewer.join(fleet.wsUrl);
    expect(await next.signalling.next('pixelfleetQueue')).toMatchObject({ position: 1 });
    expect(await idle.closed).toEqual({ code: 4013, reason: 'the video connection did not come up in time' });
    await next.until(() => next.rtpPackets > 30, 60_000);
    expect(await statusOf(fleet.cp.grpcAddress, idleId)).toBe('Terminated');
    expect(await statusOf(fleet.cp.grpcAddress, next.sessionId)).toBe('Running');
    await next.close();
  });
});

/**
 * werift fails a leg whose peer has not answered a consent check for 30 s (RFC 7675's value, fixed
 * in werift). A frozen agent's timers all fire when it wakes, this one among them: frozen longer,
 * its viewer leg is failed the moment it runs again, and it reports viewerDisconnected.
 */
const PAST_ICE_CONSENT_MS = 35_000;

describe('no slot held by a session whose media legs failed', () => {
  it('row 5: the agent frozen past ICE consent, then back: the session ends with 4013 (stream connection lost) after the resume grace and the slot serves the next viewer', { timeout: 120_000 }, async () => {
    const fleet = await freshFleet('pf-stream-lost-', { viewers: { resumeGraceSeconds: 3 } });
    const watching = await WeriftViewer.join(fleet.wsUrl);
    await watching.until(() => watching.rtpPackets > 30, 60_000);
    fleet.agent.child.kill('SIGSTOP');
    frozen.push(fleet.agent.child.pid!);
    // Waiting is the point: the freeze must outlast the consent window for the legs to fail.
    await new Promise((resolve) => setTimeout(resolve, PAST_ICE_CONSENT_MS));
    const thawedAt = performance.now();
    fleet.agent.child.kill('SIGCONT');
    // The viewer's signalling never dropped: only the worker's report of its failed legs ends the session.
    const noEnd = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the session was not ended within 30 s of the thaw')), 30_000).unref());
    expect(await Promise.race([watching.signalling.closed, noEnd])).toEqual({ code: 4013, reason: 'the video connection was lost' });
    expect(performance.now() - thawedAt).toBeGreaterThan(2_900); // not before the 3 s grace
    expect(await sessionRecord(fleet.cp.grpcAddress, watching.sessionId)).toMatchObject({ endReason: 'stream connection lost' });
    await expect.poll(async () => (await sessionRecord(fleet.cp.grpcAddress, watching.sessionId))?.status, { timeout: 20_000, interval: 200 }).toBe('Terminated');
    await watching.pc.close();
    // The one slot is free again: the next viewer streams.
    const next = await WeriftViewer.join(fleet.wsUrl);
    await next.until(() => next.rtpPackets > 30, 60_000);
    expect(await statusOf(fleet.cp.grpcAddress, next.sessionId)).toBe('Running');
    await next.close();
  });
});
