// Issue 12, row 3, with the real processes: a `pixelfleet serve` process is killed with SIGKILL
// (a crash) or stopped with SIGTERM (a deploy) while a viewer watches a customer's build streamed
// by a real `pixelfleet-agent run` process, then started again on the same data dir and ports.
// The video never stops (media never passes through the control plane), the viewer's signalling
// resumes against the next run, and the session is still Running, its app never stopped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeBuildZip } from '../support/build-zips';
import { REPO_ROOT } from '../support/cli-process';
import { callApi, createAccount, killAll, sessionStatuses, startAgentProcess, startServe, type ServeProcess } from '../support/fleet-processes';
import { listen, sendZip, type TestServer } from '../support/local-server';
import { WeriftViewer } from '../support/werift-viewer';

let files: string;
let fileServer: TestServer;
const dirs: string[] = [];

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'pf-cp-restart-files-'));
  // The packaged Linux binary of this build starts the mock Unreal app (real H.264) with its arguments.
  const binary = `#!/bin/sh\nexec '${process.execPath}' '${join(REPO_ROOT, 'test/mock-unreal/bin/mock-unreal.mjs')}' "$@"\n`;
  await writeBuildZip(files, 'linux', { fileName: 'build.zip', linuxBinary: binary });
  fileServer = await listen((req, res) => sendZip(req, res, join(files, 'build.zip')));
});

afterAll(async () => {
  await fileServer.close();
  rmSync(files, { recursive: true, force: true });
});

afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sessionStatus = async (cp: ServeProcess, sessionId: string) => (await sessionStatuses(cp.grpcAddress)).get(sessionId);

/** A serve process, a real agent holding the project's live build, and a werift viewer receiving its video. */
async function streamingFleet() {
  const dir = mkdtempSync(join(tmpdir(), 'pf-cp-restart-'));
  dirs.push(dir);
  const cp = await startServe({ dataDir: join(dir, 'cp'), configDir: dir });
  const a = await createAccount(cp.grpcAddress, `restart-${Date.now()}@example.com`);
  await startAgentProcess({ grpcAddress: cp.grpcAddress, dataDir: join(dir, 'agent'), configDir: dir, hostname: 'gpu-restart' });
  const uploaded = await callApi(cp.httpOrigin, 'POST', '/projects/upload-file', { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, fileUrl: `${fileServer.origin}/build.zip`, autoRelease: true });
  expect(uploaded.status).toBe(201);
  await expect
    .poll(async () => ((await callApi(cp.httpOrigin, 'GET', `/projects/${a.projectId}/builds?userId=${a.userId}&apikey=${a.apiKey}`)).body as { builds: { live: boolean }[] }).builds.some((b) => b.live), { timeout: 30_000, interval: 100 })
    .toBe(true);
  const wsUrl = `${cp.httpOrigin.replace(/^http/, 'ws')}/share/${a.projectId}/signalling`;
  const viewer = await WeriftViewer.join(wsUrl);
  await viewer.until(() => viewer.rtpPackets > 50, 60_000);
  expect(await sessionStatus(cp, viewer.sessionId)).toBe('Running');
  return { dir, cp, viewer, wsUrl };
}

/** Starts serve again on the first run's data dir, HTTP port and gRPC port. */
function restart(dir: string, cp: ServeProcess): Promise<ServeProcess> {
  const httpPort = Number(new URL(cp.httpOrigin).port);
  return startServe({ dataDir: join(dir, 'cp'), configDir: dir, grpcPort: Number(cp.grpcAddress.split(':')[1]), config: { http: { host: '127.0.0.1', port: httpPort } } });
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
      const again = await restart(dir, cp);
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
