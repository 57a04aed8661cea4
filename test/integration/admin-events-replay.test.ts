// `pixelfleet admin events --from-start` over real gRPC against a history of 200,000 stored
// events: the control plane reads them a page at a time, only as fast as the client takes them
// (it never holds more than a page beyond the stream's buffer), and live events recorded during
// the replay arrive exactly once, in event-id order, before and after the switch to live.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '@pixelfleet/control-plane';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { fleetEvents, lastEventId } from '../support/seed';

/** WATCH_PAGE_SIZE (256) plus grpc-js's writable high-water mark (16 messages), and one being written. */
const MAX_HELD = 256 + 16 + 1;
const HISTORY = 200_000;

let t: TestControlPlane;

beforeAll(async () => {
  t = await startTestControlPlane({ overrides: { geoip: { enabled: false } } });
});
afterAll(async () => {
  await t.destroy();
});

describe('pixelfleet admin events --from-start', () => {
  it('replays a long history paced by the client, then follows live events without a gap or a repeat', async () => {
    t.cp.db.transaction(() => {
      for (let i = 0; i < HISTORY; i += 1) t.cp.events.record('test.history', { projectId: 'prj_history' }, { i });
    })();
    const lastStored = await t.cp.events.lastId();
    // SQLite stores an event within record() itself: its id is the newest at once (the callback below is synchronous).
    const recordNow = (type: string) => {
      void t.cp.events.record(type, {});
      return lastEventId(t.cp);
    };
    const live: number[] = [];
    const received: number[] = [];
    let stop!: () => void;
    const interrupted = new Promise<void>((r) => (stop = r));
    let partial = '';
    let stderr = '';
    const stdout = (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        const id = (JSON.parse(line) as { eventId: number }).eventId;
        received.push(id);
        // While the history is being replayed: each 40,000 events one is recorded (the watch ignores it
        // live and finds it in the log later).
        if (received.length % 40_000 === 0) live.push(recordNow('test.during'));
        // At the end of the history the watch turns live: these come through the listener.
        if (id === lastStored) live.push(recordNow('test.at-end'));
        if (id === live.at(-1) && live.length === 6) live.push(recordNow('test.after'));
        if (id === live.at(-1) && live.length === 7) stop();
      }
    };
    const code = await runAdminCli(['events', '--from-start', '--json'], {
      env: { PIXELFLEET_ADMIN_SERVER: t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
      stdout,
      stderr: (s) => (stderr += s),
      interrupted,
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);

    const stored = fleetEvents(t.cp).map((e) => e.eventId);
    expect(stored.length).toBeGreaterThanOrEqual(HISTORY + 7);
    expect(live).toHaveLength(7);
    // Every stored event once, in id order: the history, then those recorded during the replay and after it.
    expect(received.length).toBe(stored.length);
    expect(received).toEqual(stored);
    for (const id of live) expect(received.filter((x) => x === id)).toHaveLength(1);

    // The server paced itself by the client: it waited for the stream to drain, and never held more
    // than a page beyond the stream's buffer (the whole history would be 200,000).
    const counters = t.cp.adminWatches;
    expect(counters.waits).toBeGreaterThan(HISTORY / 256);
    expect(counters.peakHeld).toBeLessThanOrEqual(MAX_HELD);
  }, 120_000);
});
