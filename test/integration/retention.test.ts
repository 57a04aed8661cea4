// Retention with every real part: sessions made by real viewer sockets through the gateway, their
// telemetry posted over HTTP, a real agent (scripted relay), the real SQLite file, the sweep on the
// control plane's injected clock. Past retention.sessionDays the ended sessions go with everything
// that hangs off them; a viewer still watching, and everything newer, stays, except telemetry rows
// past retention.telemetryDays (here the same two days), which go whatever their session's state.
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { FakePlayer } from '../support/fake-player';
import { fleetEvents, sessionRecord, setProjectSettings, snapshotData, telemetryRows } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const DAY_MS = 24 * 60 * 60 * 1000;
const statsRow = { timestamp: '2026-11-21T06:00:05.000Z', FPS: '30', framesDecoded: '150', bitrate: '2000000', latency: '12', packetLoss: '0', framesDropped: '0', videoCodec: 'video/H264', videoResolution: '1280x720' };

describe('retention of session history', () => {
  it('deletes ended sessions, their snapshots, telemetry rows and fleet events older than retention.sessionDays; keeps a session still streaming and all newer history', async () => {
    const clock = new ManualClock(Date.now());
    // A lease longer than the days the clock jumps, so that the worker (heartbeating in real time) stays.
    const overrides = { retention: { sessionDays: 2, sweepIntervalMinutes: 60 }, workers: { heartbeatIntervalSeconds: 10, leaseSeconds: 10 * 24 * 3600 } };
    const t = await startTestControlPlane({ clock, overrides });
    cleanups.push(() => t.destroy());
    const owner = await t.cp.accounts.createUser(`ret${Date.now()}@example.com`);
    const projectId = (await t.cp.accounts.createProject(owner.userId, 'Retention', 'europe')).projectId;
    await t.cp.registerLocalBuild(projectId);
    setProjectSettings(t.cp, projectId, { maxRunTime: 0 }); // a session may stream for days
    const script = new ScriptedSessions();
    const { agent } = await startTestAgent({ grpcAddress: t.started.grpcAddress, slots: 2, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal });
    script.agent = agent;
    cleanups.push(() => agent.close());
    await linkReaches(agent, 'connected');
    const wsUrl = `${t.started.publicUrls.share.replace(/^http/, 'ws')}/${projectId}/signalling`;
    const telemetryUrl = `${t.started.publicUrls.platform}/api/v1/telemetry`;
    /** The rows stored of the session: its own (0 or 1), its snapshots, telemetry rows and fleet events. */
    const rowsOf = (sessionId: string) => ({
      sessions: sessionRecord(t.cp, sessionId) === undefined ? 0 : 1,
      snapshots: snapshotData(t.cp, sessionId).length,
      telemetry: telemetryRows(t.cp, sessionId).length,
      events: fleetEvents(t.cp, { sessionId }).length,
    });
    const workerConnectedEvents = () => fleetEvents(t.cp, { type: 'worker.connected' }).length;

    /** A viewer who gets a session, reports telemetry, and (unless told to stay) leaves. */
    const visit = async (stay = false) => {
      const player = await FakePlayer.connect(wsUrl);
      cleanups.push(() => player.socket.terminate());
      const hello = await player.next('pixelfleetSession');
      const sessionId = hello.sessionId as string;
      await expect.poll(() => script.started).toContain(sessionId);
      script.report(sessionId, 'viewerConnected');
      await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Running');
      const posted = await fetch(telemetryUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-viewer-token': hello.viewerToken as string },
        body: JSON.stringify({ sessionId, rows: [statsRow, statsRow] }),
      });
      expect(posted.status).toBe(204);
      if (!stay) {
        player.close();
        await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Terminated');
      }
      return sessionId;
    };

    const old = await visit();
    const watching = await visit(true); // streams for days: never ended, never deleted (its telemetry ages out)
    const oldRows = rowsOf(old);
    expect(oldRows).toMatchObject({ sessions: 1, telemetry: 2 });
    expect(oldRows.snapshots).toBeGreaterThanOrEqual(3);
    expect(oldRows.events).toBeGreaterThanOrEqual(2);
    expect(workerConnectedEvents()).toBeGreaterThan(0);

    clock.advance(DAY_MS); // a day later, within the window
    const recent = await visit();
    expect(rowsOf(old).sessions).toBe(1); // swept hourly all day: nothing was old enough
    const recentRows = rowsOf(recent);

    clock.advance(DAY_MS - 60_000);
    await t.cp.retention.sweep();
    expect(rowsOf(old)).toEqual(oldRows); // a minute short of the window
    clock.advance(61 * 60_000); // the hourly sweep two days and an hour after the first visit
    await expect.poll(() => rowsOf(old).sessions).toBe(0);
    await t.cp.retention.sweep(); // the hourly one has finished
    expect(rowsOf(old)).toEqual({ sessions: 0, snapshots: 0, telemetry: 0, events: 0 });
    expect(workerConnectedEvents()).toBe(0); // fleet events of that time too
    expect(rowsOf(recent)).toEqual(recentRows);
    const stillWatching = rowsOf(watching);
    expect(stillWatching).toMatchObject({ sessions: 1, telemetry: 0 });
    expect(stillWatching.snapshots).toBeGreaterThan(0);
    expect(t.cp.sessions.get(watching).status).toBe('Running');
    expect(t.logs.text()).toContain('retention sweep deleted old history');
  });
});
