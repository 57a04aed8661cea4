// Issue 12, row 3, with the real processes: a `pixelfleet serve` process is killed with SIGKILL
// (a crash) or stopped with SIGTERM (a deploy) while a viewer watches a customer's build streamed
// by a real `pixelfleet-agent run` process, then started again on the same data dir and ports.
// The video never stops (media never passes through the control plane), the viewer's signalling
// resumes against the next run, and the session is still Running, its app never stopped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAll, sessionStatuses, type ServeProcess } from '../support/fleet-processes';
import { restartServe, startStreamingFleet, serveMockAppBuild } from '../support/streaming-fleet';
import { WeriftViewer } from '../support/werift-viewer';

let build: Awaited<ReturnType<typeof serveMockAppBuild>>;
const dirs: string[] = [];

beforeAll(async () => {
  build = await serveMockAppBuild();
});

afterAll(async () => {
  await build.close();
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
