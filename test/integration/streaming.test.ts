// The streaming path with real parts except the browser: control plane, gateway, scheduler, a
// real agent with its werift relay, the mock Unreal app as a real child process speaking Pixel
// Streaming with real H.264, and a werift viewer on the gateway's WebSocket.
import { existsSync, readdirSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane, TEST_METRICS_TOKEN, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { mockAppCommand, textOf, uiInteraction } from '../support/mock-app';
import { WeriftViewer } from '../support/werift-viewer';
import { FakePlayer } from '../support/fake-player';
import { logFilesOf, setProjectSettings } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function streamingWorld(options: { flags?: string[]; settings?: Record<string, unknown>; clock?: ManualClock; heartbeatSeconds?: number } = {}) {
  const t: TestControlPlane = await startTestControlPlane({
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.heartbeatSeconds ? { overrides: { workers: { heartbeatIntervalSeconds: options.heartbeatSeconds, leaseSeconds: options.heartbeatSeconds * 3 } } } : {}),
  });
  cleanups.push(() => t.destroy());
  const owner = await t.cp.accounts.createUser(`s${Date.now()}@example.com`);
  const projectId = (await t.cp.accounts.createProject(owner.userId, 'Stream', 'europe')).projectId;
  await t.cp.registerLocalBuild(projectId);
  setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, minBitrate: 1_000_000, maxBitrate: 8_000_000, ...options.settings });
  const { agent, dataDir } = await startTestAgent({ grpcAddress: t.started.grpcAddress, launcherCommand: mockAppCommand(...(options.flags ?? [])) });
  cleanups.push(() => agent.close());
  await linkReaches(agent, 'connected');
  const wsUrl = `${t.started.publicUrls.share.replace(/^http/, 'ws')}/${projectId}/signalling`;
  const watch = async () => {
    const v = await WeriftViewer.join(wsUrl);
    cleanups.push(() => v.close());
    return v;
  };
  return { t, agent, agentDataDir: dataDir, projectId, wsUrl, watch };
}

const status = (t: TestControlPlane, id: string) => t.cp.sessions.get(id).status;

describe('a viewer watches and controls the app', () => {
  it('media, the data channel and a UIInteraction round trip flow through the relay; leaving stops the app and uploads its log', async () => {
    const { t, agent, agentDataDir, watch } = await streamingWorld();
    const viewer = await watch();
    await viewer.until(() => viewer.rtpPackets >= 60);
    expect([...viewer.payloadTypes]).toEqual([96]);
    await expect.poll(() => status(t, viewer.sessionId)).toBe('Running');
    const snapshot = t.cp.sessions.get(viewer.sessionId);
    expect(snapshot).toMatchObject({ assignedWorker: agent.workerId, streamingId: expect.stringMatching(/^streamer_/) as unknown });

    // The app's protocol announcement (twice) and initial settings reach the viewer.
    await viewer.until(() => viewer.dataMessages.filter((m) => m[0] === 255).length >= 2 && viewer.dataMessages.some((m) => m[0] === 7));
    const directions = viewer.dataMessages.filter((m) => m[0] === 255).map((m) => (JSON.parse(textOf(m).text) as { Direction: number }).Direction);
    expect(directions.slice(0, 2).sort()).toEqual([0, 1]);

    viewer.send(uiInteraction('{"a":1}'));
    await viewer.until(() => viewer.dataMessages.some((m) => m[0] === 1 && textOf(m).text === '{"a":1}'));

    const sessionId = viewer.sessionId;
    await viewer.close();
    await expect.poll(() => status(t, sessionId), { timeout: 15_000 }).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    const uploaded = () => logFilesOf(t.cp, sessionId).map((r) => r.fileName);
    await expect.poll(uploaded, { timeout: 10_000 }).toContain('PixelfleetApp.log');
    // What the control plane stored is what the app wrote (the agent's copy went with its spool entry).
    const { blobSha256: sha256 } = logFilesOf(t.cp, sessionId).find((r) => r.fileName === 'PixelfleetApp.log')!;
    const gz: Buffer[] = [];
    for await (const chunk of await t.cp.blobs.read(sha256)) gz.push(chunk as Buffer);
    const engineLog = gunzipSync(Buffer.concat(gz)).toString();
    await expect.poll(() => existsSync(join(agentDataDir, 'log-spool')) && readdirSync(join(agentDataDir, 'log-spool')).length).toBe(0);
    expect(engineLog).toContain('UIInteraction');
    expect(engineLog).toContain('LogExit: Exiting.');
  });

  it('two viewers on one slot: the second waits and is promoted when the first leaves', async () => {
    const { t, watch } = await streamingWorld();
    const first = await watch();
    await first.until(() => first.rtpPackets > 10);
    const second = await watch();
    expect(await second.signalling.next('pixelfleetQueue')).toMatchObject({ position: 1 });
    expect(status(t, second.sessionId)).toBe('Enqueued');
    await first.close();
    await second.until(() => second.rtpPackets > 10, 30_000);
    await expect.poll(() => status(t, second.sessionId)).toBe('Running');
  });
});

describe('when the app misbehaves', () => {
  it('an app that crashes ends the session with 4006 and Terminated', async () => {
    const { t, watch } = await streamingWorld({ flags: ['-MockCrashAfterMs=2500'] });
    const viewer = await watch();
    await viewer.until(() => viewer.rtpPackets > 5);
    expect(await viewer.signalling.closed).toEqual({ code: 4006, reason: 'app closed or crashed' });
    await expect.poll(() => status(t, viewer.sessionId)).toBe('Terminated');
  });

  it("an app that disconnects its player ends the session with 4012 and the app's reason, and is stopped", async () => {
    const { t, watch } = await streamingWorld({ flags: ['-MockKickOnUIInteraction'] });
    const viewer = await watch();
    await viewer.until(() => viewer.dataMessages.some((m) => m[0] === 7));
    await expect.poll(() => status(t, viewer.sessionId)).toBe('Running');
    // The mock answers this UIInteraction with disconnectPlayer, as a game kicking its player would.
    viewer.send(uiInteraction('{"kick":"game over"}'));
    expect(await viewer.signalling.closed).toEqual({ code: 4012, reason: 'the app disconnected the viewer: game over' });
    await expect.poll(() => status(t, viewer.sessionId), { timeout: 15_000 }).toBe('Terminated');
    expect(t.cp.sessions.get(viewer.sessionId).endReason).toBe('app disconnected the viewer');
  });

  it('an app that never identifies itself fails the launch with 4003', async () => {
    const { t, wsUrl } = await streamingWorld({ flags: ['-MockNeverConnect'], settings: { startupTimeoutSeconds: 2 } });
    const player = await FakePlayer.connect(wsUrl);
    cleanups.push(() => player.socket.terminate());
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    expect(await player.closed).toEqual({ code: 4003, reason: 'app failed to launch' });
    await expect.poll(() => status(t, sessionId)).toBe('Terminated');
  });

  it('an app that exits at start fails the launch with 4003', async () => {
    const { wsUrl } = await streamingWorld({ flags: ['-MockExitEarly'] });
    const player = await FakePlayer.connect(wsUrl);
    cleanups.push(() => player.socket.terminate());
    expect(await player.closed).toEqual({ code: 4003, reason: 'app failed to launch' });
  });
});

describe('limits', () => {
  it('maxRunTime ends a running session with 4004 and stops the app', async () => {
    const clock = new ManualClock(Date.now());
    const { t, watch } = await streamingWorld({ clock, settings: { maxRunTime: 1 } });
    const viewer = await watch();
    await expect.poll(() => status(t, viewer.sessionId), { timeout: 20_000 }).toBe('Running');
    clock.advance(60_000);
    expect(await viewer.signalling.closed).toEqual({ code: 4004, reason: 'maximum run time reached' });
    await expect.poll(() => status(t, viewer.sessionId), { timeout: 15_000 }).toBe('Terminated');
  });
});

describe('relay counters', () => {
  it("reach the control plane's /metrics with the heartbeats: a viewer's keyframe request is counted", async () => {
    const { t, watch } = await streamingWorld({ heartbeatSeconds: 1 });
    const viewer = await watch();
    await viewer.until(() => viewer.rtpPackets > 10);
    const metric = async (name: string): Promise<number> => {
      const text = await (await fetch(`${t.started.httpOrigin}/metrics`, { headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } })).text();
      return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    };
    const before = await metric('pixelfleet_relay_keyframe_requests_total');
    viewer.sendPli();
    await expect.poll(() => metric('pixelfleet_relay_keyframe_requests_total'), { timeout: 10_000, interval: 200 }).toBeGreaterThan(before);
    expect(await metric('pixelfleet_relay_ingest_packets_abandoned_total')).toBe(0);
  }, 30_000);
});

describe('idle viewers', () => {
  it('input from the viewer keeps the session alive; without input it ends after afkTimeout (4007)', async () => {
    const { t, watch } = await streamingWorld({ settings: { afkTimeout: 3 }, heartbeatSeconds: 1 });
    const viewer = await watch();
    await expect.poll(() => status(t, viewer.sessionId), { timeout: 20_000 }).toBe('Running');
    const runningAt = Date.now();
    // Keep typing for longer than the timeout: the session stays.
    await new Promise<void>((resolve) => {
      const typing = setInterval(() => {
        viewer.send(Buffer.from([60, 65, 0])); // KeyDown 'A'
        if (Date.now() - runningAt > 4_500) {
          clearInterval(typing);
          resolve();
        }
      }, 250);
    });
    expect(status(t, viewer.sessionId)).toBe('Running');
    // Then go quiet.
    expect(await viewer.signalling.closed).toEqual({ code: 4007, reason: 'ended after a period without input' });
  }, 30_000);
});
