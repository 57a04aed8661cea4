// Issue 12, row 3, with the real processes: a `pixelfleet serve` process is killed with SIGKILL
// (a crash) or stopped with SIGTERM (a deploy) while a viewer watches a customer's build streamed
// by a real `pixelfleet-agent run` process, then started again on the same data dir and ports.
// The video never stops (media never passes through the control plane), the viewer's signalling
// resumes against the next run, and the session is still Running, its app never stopped.
// The same restart while a session is Starting (its app launched, held before it identifies by the
// mock's signalling gate, and let go while the control plane is down): the agent keeps what it
// could not say, the page asks again for its streamer list, and the viewer streams (no 4013).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { killAll, sessionStatuses, type ServeProcess } from '../support/fleet-processes';
import { appLogOf, restartServe, serveGatedMockAppBuild, startStreamingFleet, serveMockAppBuild } from '../support/streaming-fleet';
import { WeriftViewer } from '../support/werift-viewer';

let build: Awaited<ReturnType<typeof serveMockAppBuild>>;
/** The same build whose app dials its signalling only once its gate file exists. */
let gatedBuild: Awaited<ReturnType<typeof serveGatedMockAppBuild>>;
const dirs: string[] = [];

beforeAll(async () => {
  build = await serveMockAppBuild();
  gatedBuild = await serveGatedMockAppBuild();
});

afterAll(async () => {
  await build.close();
  await gatedBuild.close();
});

afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sessionStatus = async (cp: ServeProcess, sessionId: string) => (await sessionStatuses(cp.grpcAddress)).get(sessionId);

/** A fleet streaming to one werift viewer. */
async function streamingFleet() {
  const dir = mkdtempSync(join(tmpdir(), 'pf-cp-restart-'));
  dirs.push(dir);
  const { cp, wsUrl } = await startStreamingFleet({ dir, buildUrl: build.buildUrl });
  const viewer = await WeriftViewer.join(wsUrl);
  await viewer.until(() => viewer.rtpPackets > 50, 60_000);
  expect(await sessionStatus(cp, viewer.sessionId)).toBe('Running');
  return { dir, cp, viewer, wsUrl };
}

describe('a control plane restart is invisible to a viewer who is watching', () => {
  for (const how of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${how}: the video never stops, the viewer's signalling resumes, the session is still Running`, { timeout: 120_000 }, async () => {
      const { dir, cp, viewer, wsUrl } = await streamingFleet();
      const closed = viewer.signalling.closed;
      viewer.resetRtpGap();
      const before = viewer.rtpPackets;
      const stoppedAt = performance.now();
      cp.child.kill(how);
      await cp.exited;
      // SIGKILL: the socket just dies (1006). SIGTERM: the gateway closes it with 1012 so the page resumes.
      expect((await closed).code).toBe(how === 'SIGKILL' ? 1006 : 1012);
      const again = await restartServe(dir, cp);
      await viewer.resume(wsUrl);
      const signallingGapMs = performance.now() - stoppedAt;
      await viewer.until(() => viewer.rtpPackets > before + 100, 10_000);
      // Video kept flowing through the outage: no gap of more than half a second between packets.
      expect(viewer.longestRtpGapMs).toBeLessThan(500);
      expect(signallingGapMs).toBeLessThan(10_000);
      expect(await sessionStatus(again, viewer.sessionId)).toBe('Running');
      // The session still ends normally on the new run: the viewer leaves, the app is stopped.
      viewer.signalling.close();
      await expect.poll(() => sessionStatus(again, viewer.sessionId), { timeout: 20_000, interval: 100 }).toBe('Terminated');
      await viewer.pc.close();
    });
  }
});

describe('a control plane restart while a session is Starting', () => {
  for (const how of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${how}: the app identifies while the control plane is down; the viewer resumes, asks again for its streamer, streams, and the session is Running (no 4013)`, { timeout: 120_000 }, async () => {
      const GATE = gatedBuild.gate;
      rmSync(GATE, { force: true });
      const dir = mkdtempSync(join(tmpdir(), 'pf-cp-restart-starting-'));
      dirs.push(dir);
      // A connect timeout the test can wait out: a negotiation the restart broke would end in 4013 here.
      const config = { sessions: { connectTimeoutSeconds: 25 } };
      const { cp, wsUrl } = await startStreamingFleet({ dir, buildUrl: gatedBuild.buildUrl, config });
      const viewer = await WeriftViewer.join(wsUrl);
      expect(await viewer.signalling.next('pixelfleetStatus', 30_000)).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
      const logText = () => appLogOf(dir, viewer.sessionId);
      // Launched and held at the gate: Starting, the streamer not ready, the page's listStreamers held by this run.
      await vi.waitFor(() => expect(logText()).toContain(`Waiting for ${GATE} before connecting to signalling`), { timeout: 30_000, interval: 50 });
      expect(await sessionStatus(cp, viewer.sessionId)).toBe('Starting');

      const closed = viewer.signalling.closed;
      cp.child.kill(how);
      await cp.exited;
      expect((await closed).code).toBe(how === 'SIGKILL' ? 1006 : 1012);
      // The app identifies while nobody can hear of it but its agent.
      writeFileSync(GATE, '');
      await vi.waitFor(() => expect(logText()).toContain('Streamer identified as'), { timeout: 30_000, interval: 50 });

      const again = await restartServe(dir, cp, config);
      await viewer.resume(wsUrl);
      await viewer.until(() => viewer.rtpPackets > 30, 60_000);
      expect(await sessionStatus(again, viewer.sessionId)).toBe('Running');
      // Running: the connect timeout (counted from the placement, before the restart) no longer applies.
      const before = viewer.rtpPackets;
      await viewer.until(() => viewer.rtpPackets > before + 30, 10_000);
      viewer.signalling.close();
      await expect.poll(() => sessionStatus(again, viewer.sessionId), { timeout: 20_000, interval: 100 }).toBe('Terminated');
      await viewer.pc.close();
    });
  }
});

describe('a control plane restart while the viewer answers', () => {
  it('SIGKILL after the relay offered: the answer made while the control plane is down follows the resume, waits for the agent if it is not back yet, and the viewer streams', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-cp-restart-answer-'));
    dirs.push(dir);
    const config = { sessions: { connectTimeoutSeconds: 25 } };
    const { cp, wsUrl } = await startStreamingFleet({ dir, buildUrl: build.buildUrl, config });
    let offered!: () => void;
    const offerApplied = new Promise<void>((resolve) => (offered = resolve));
    let answer!: () => void;
    const mayAnswer = new Promise<void>((resolve) => (answer = resolve));
    const viewer = await WeriftViewer.join(wsUrl, {
      beforeAnswer: () => {
        offered();
        return mayAnswer;
      },
    });
    await offerApplied;
    expect(await sessionStatus(cp, viewer.sessionId)).toBe('Starting');
    const closed = viewer.signalling.closed;
    cp.child.kill('SIGKILL');
    await cp.exited;
    expect((await closed).code).toBe(1006);
    // The answer and the viewer's candidates are made now, with nobody to send them to: the viewer keeps them, as the page does.
    answer();
    const again = await restartServe(dir, cp, config);
    await viewer.resume(wsUrl);
    await viewer.until(() => viewer.rtpPackets > 30, 60_000);
    expect(await sessionStatus(again, viewer.sessionId)).toBe('Running');
    await viewer.close();
  });
});
