// Telemetry is the one anonymous write route (every share visit yields a viewer token), so it is
// bounded in bytes twice (issue 22): per session — small until the session was placed on a worker —
// and per client network per second, counted before the body is read. Beyond either: 429 with a
// reason, and nothing of the refused batch is stored.
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { SqliteTelemetryRepository } from '@pixelfleet/control-plane/test-support';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { startStreamingProject } from '../support/streaming-project';
import { FakePlayer } from '../support/fake-player';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const PER_SESSION = 20_000;
const WHILE_QUEUED = 3_000;

async function controlPlane(limits: Record<string, number>, clock = new ManualClock(Date.now())): Promise<TestControlPlane> {
  const t = await startTestControlPlane({ clock, overrides: { limits } });
  cleanups.push(() => t.destroy());
  return t;
}

/** A statistics row whose stored JSON (with the session id the server adds) is about `bytes` long. */
const statsRow = (bytes: number) => ({ timestamp: '2026-11-21T06:00:05.000Z', FPS: '30', padding: 'x'.repeat(bytes - 120) });

function poster(t: TestControlPlane, sessionId: string, viewerToken: string) {
  return async (rows: Record<string, unknown>[]) => {
    const res = await fetch(`${t.started.publicUrls.platform}/api/v1/telemetry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-viewer-token': viewerToken },
      body: JSON.stringify({ sessionId, rows }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: res.status === 204 ? undefined : ((await res.json()) as unknown) };
  };
}

const storedBytes = (t: TestControlPlane, sessionId: string) => new SqliteTelemetryRepository(t.cp.db).usageBySession(sessionId);

describe('telemetry budgets', () => {
  it('gives a session that was never placed a small byte budget, and refuses the batch that would pass it whole', async () => {
    const t = await controlPlane({ telemetryBytesPerSession: PER_SESSION, telemetryBytesWhileQueued: WHILE_QUEUED });
    const owner = await t.cp.accounts.createUser('queued@example.com');
    const project = t.cp.accounts.requireProject((await t.cp.accounts.createProject(owner.userId, 'Q', 'europe')).projectId);
    const { session, viewerToken } = t.cp.sessions.create(project);
    expect(t.cp.sessions.get(session.sessionId).status).toBe('Enqueued');
    const post = poster(t, session.sessionId, viewerToken);

    expect((await post([statsRow(1_000), statsRow(1_000)])).status).toBe(204);
    const before = storedBytes(t, session.sessionId);
    expect(before.bytes).toBeGreaterThan(1_900);
    expect(await post([statsRow(500), statsRow(800)])).toEqual({ status: 429, retryAfter: null, body: { message: 'Telemetry limit reached for this session' } });
    expect(storedBytes(t, session.sessionId)).toEqual(before);
    // What still fits is taken.
    expect((await post([statsRow(500)])).status).toBe(204);
  });

  it('gives a placed session the full budget, then refuses', async () => {
    const t = await controlPlane({ telemetryBytesPerSession: PER_SESSION, telemetryBytesWhileQueued: WHILE_QUEUED });
    const { script, wsUrl } = await startStreamingProject(t, cleanups, 'Budget');
    const player = await FakePlayer.connect(wsUrl);
    cleanups.push(() => player.socket.terminate());
    player.send({ type: 'listStreamers' });
    const hello = await player.next('pixelfleetSession');
    const sessionId = hello.sessionId as string;
    await expect.poll(() => script.started).toContain(sessionId);
    const post = poster(t, sessionId, hello.viewerToken as string);

    for (let i = 0; i < 6; i++) expect((await post([statsRow(1_500), statsRow(1_500)])).status).toBe(204);
    expect(storedBytes(t, sessionId).bytes).toBeGreaterThan(WHILE_QUEUED * 5);
    const before = storedBytes(t, sessionId);
    expect((await post([statsRow(2_000), statsRow(2_000)])).status).toBe(429);
    expect(storedBytes(t, sessionId)).toEqual(before);
  });

  it('limits request bytes per client address before reading them: 429 with Retry-After, nothing stored, then refilled', async () => {
    const clock = new ManualClock(Date.now());
    const t = await controlPlane({ telemetryAddressBytesBurst: 10_000, telemetryAddressBytesPerSecond: 1_000 }, clock);
    const owner = await t.cp.accounts.createUser('flood@example.com');
    const project = t.cp.accounts.requireProject((await t.cp.accounts.createProject(owner.userId, 'F', 'europe')).projectId);
    const { session, viewerToken } = t.cp.sessions.create(project);
    const post = poster(t, session.sessionId, viewerToken);

    // About 3.1 KB a request: three fit in the burst, the fourth does not.
    for (let i = 0; i < 3; i++) expect((await post([statsRow(3_000)])).status).toBe(204);
    const before = storedBytes(t, session.sessionId);
    const refused = await post([statsRow(3_000)]);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: `Too much telemetry from this address; retry in ${refused.retryAfter} s` });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(2);
    expect(storedBytes(t, session.sessionId)).toEqual(before);
    // A request with a wrong token costs the address as much: the rate is counted before anything else.
    clock.advance(Number(refused.retryAfter) * 1_000);
    expect((await poster(t, session.sessionId, 'not-a-token')([statsRow(3_000)])).status).toBe(401);
    expect((await post([statsRow(3_000)])).status).toBe(429);
    clock.advance(Number(refused.retryAfter) * 1_000);
    expect((await post([statsRow(3_000)])).status).toBe(204);
  });
});
