// The TURN credential in a viewer's `config` lasts no longer than its session can: the earlier of
// turn.ttlSeconds from its issue and the session's latest end (placement + the session's
// maxRunTime) plus TURN_EXPIRY_MARGIN_SECONDS. Real gateway, scheduler and agent link; the relay is
// scripted; issue and placement times come from the injected clock.
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane } from '../support/control-plane';
import { startStreamingProject } from '../support/streaming-project';
import { FakePlayer } from '../support/fake-player';
import { setProjectSettings } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SECRET = 'turn-secret-0123456789abcdefghijkl';
const URLS = ['turn:turn.example.com:3478?transport=udp'];
const MARGIN_S = 60;

async function setup(options: { ttlSeconds: number; maxRunTime: number }) {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  // Minutes pass on the control plane's clock while the agent heartbeats on its own: a lease that
  // outlasts the test, no connect timeout, and the longest resume grace.
  const t = await startTestControlPlane({
    clock,
    overrides: {
      turn: { secret: SECRET, urls: URLS, ttlSeconds: options.ttlSeconds },
      viewers: { resumeGraceSeconds: 600 },
      sessions: { connectTimeoutSeconds: 0 },
      workers: { leaseSeconds: 86_400 },
    },
  });
  cleanups.push(() => t.destroy());
  const { script, wsUrl, projectId } = await startStreamingProject(t, cleanups, 'Turn');
  setProjectSettings(t.cp, projectId, { maxRunTime: options.maxRunTime });
  const connect = async (query = '') => {
    const p = await FakePlayer.connect(`${wsUrl}${query}`);
    cleanups.push(() => p.socket.terminate());
    return p;
  };
  /** A viewer whose session was placed (Starting): the relay has not sent its config yet. */
  const placed = async () => {
    const player = await connect();
    const hello = await player.next('pixelfleetSession');
    const sessionId = hello.sessionId as string;
    await expect.poll(() => script.started).toContain(sessionId);
    return { player, sessionId, viewerToken: hello.viewerToken as string, placedAt: t.cp.sessions.get(sessionId).placedAt! };
  };
  /** The relay's config (no ICE servers of its own) reaches the viewer: its one ICE server, checked as coturn would. */
  const turnServer = async (player: FakePlayer, sessionId: string) => {
    script.signal(sessionId, { type: 'config', peerConnectionOptions: {} });
    const server = onlyIceServer(await player.next('config'));
    expect(server.urls).toEqual(URLS);
    expect(server.username.split(':')[1]).toBe(sessionId);
    expect(server.credential).toBe(createHmac('sha1', SECRET).update(server.username).digest('base64'));
    return expiryOf(server);
  };
  return { t, clock, script, connect, placed, turnServer };
}

const seconds = (ms: number) => Math.floor(ms / 1000);

interface TurnServer {
  urls: string[];
  username: string;
  credential: string;
}

/** The one ICE server of a `config` message: the session's TURN entry (the scripted relay has none of its own). */
function onlyIceServer(config: Record<string, unknown>): TurnServer {
  const servers = (config.peerConnectionOptions as { iceServers?: TurnServer[] } | undefined)?.iceServers ?? [];
  expect(servers).toHaveLength(1);
  return servers[0]!;
}

/** The expiry (Unix seconds) a TURN REST username names. */
const expiryOf = (server: TurnServer) => Number(server.username.split(':')[0]);

describe("a viewer's TURN credential", () => {
  it("expires a minute after its session's latest end (placement + maxRunTime), not a TTL of a day later", async () => {
    const { clock, placed, turnServer } = await setup({ ttlSeconds: 86_400, maxRunTime: 30 });
    const { player, sessionId, placedAt } = await placed();
    // The app takes its time to start: the cap counts from the placement, not from the config.
    clock.advance(90_000);
    expect(await turnServer(player, sessionId)).toBe(seconds(placedAt + 30 * 60_000) + MARGIN_S);
  });

  it('keeps the TTL when it comes first, and when the project has no run-time cap', async () => {
    const short = await setup({ ttlSeconds: 600, maxRunTime: 30 });
    const first = await short.placed();
    short.clock.advance(5_000);
    expect(await short.turnServer(first.player, first.sessionId)).toBe(seconds(short.clock.now()) + 600);

    const uncapped = await setup({ ttlSeconds: 7_200, maxRunTime: 0 });
    const second = await uncapped.placed();
    uncapped.clock.advance(5_000);
    expect(await uncapped.turnServer(second.player, second.sessionId)).toBe(seconds(uncapped.clock.now()) + 7_200);
  });

  it('a viewer who was away when its config came gets it on resume, signed then (fresh), and still capped by its session', async () => {
    const { t, clock, script, connect, placed } = await setup({ ttlSeconds: 600, maxRunTime: 15 });
    const { player, sessionId, viewerToken, placedAt } = await placed();
    /** The socket drops, the relay's config arrives meanwhile, and awayMs later the page resumes: the expiry of the config it gets. */
    const awayThenResume = async (socket: FakePlayer, awayMs: number) => {
      socket.socket.terminate();
      await expect.poll(() => t.cp.gateway.detached).toBe(1);
      script.signal(sessionId, { type: 'config', peerConnectionOptions: {} });
      clock.advance(awayMs);
      const back = await connect(`?resume=${sessionId}`);
      back.send({ type: 'pixelfleetResume', viewerToken });
      await back.next('pixelfleetResumed');
      return { back, expiry: expiryOf(onlyIceServer(await back.next('config'))) };
    };
    // Issued at the resume (20 s after the relay's config), by the TTL here ...
    const first = await awayThenResume(player, 20_000);
    expect(first.expiry).toBe(seconds(clock.now()) + 600);
    // ... and, 400 s after the placement (600 s from then is past the session's end, 900 s, and its margin), by the session.
    const second = await awayThenResume(first.back, 380_000);
    expect(second.expiry).toBe(seconds(placedAt + 15 * 60_000) + MARGIN_S);
  });
});
