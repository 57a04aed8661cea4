// Keepalive on a real `ws` pair, driven by injected clock: a live peer's pongs keep the socket,
// a silent peer is terminated once timeoutMs passes after a ping, and stop() leaves no timers.
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WebSocket } from 'ws';
import { DEFAULT_KEEPALIVE_INTERVAL_MS, DEFAULT_KEEPALIVE_TIMEOUT_MS, Keepalive } from './keepalive';
import { ManualClock } from '@pixelfleet/common';
import { openSocketPair, type SocketPair } from '../../test/support/signaling/socket-pair';

let pair: SocketPair<WebSocket> | undefined;

afterEach(async () => {
  await pair?.dispose();
  pair = undefined;
});

async function open(): Promise<SocketPair<WebSocket>> {
  pair = await openSocketPair((server) => server);
  return pair;
}

describe('Keepalive', () => {
  it('pings every 15 s by default and keeps a peer that answers', async () => {
    expect(DEFAULT_KEEPALIVE_INTERVAL_MS).toBe(15_000);
    expect(DEFAULT_KEEPALIVE_TIMEOUT_MS).toBe(10_000);
    const { server } = await open();
    const clock = new ManualClock();
    let timedOut = 0;
    const ping = vi.spyOn(server, 'ping');
    const keepalive = new Keepalive(server, { clock, onTimeout: () => timedOut++ });

    clock.advance(14_999);
    expect(ping).not.toHaveBeenCalled();
    for (let round = 1; round <= 3; round++) {
      const ponged = once(server, 'pong');
      clock.advance(1);
      expect(ping).toHaveBeenCalledTimes(round);
      await ponged;
      clock.advance(10_000); // the deadline passes: the pong cancelled it
      clock.advance(4_999); // the next ping is due 15 s after the last
      expect(ping).toHaveBeenCalledTimes(round);
    }
    expect(timedOut).toBe(0);
    expect(server.readyState).toBe(server.OPEN);
    keepalive.stop();
  });

  it('terminates a peer that stops answering, once timeoutMs has passed after the ping', async () => {
    const { server, client, clientClosed } = await open();
    const clock = new ManualClock();
    let timedOut = 0;
    new Keepalive(server, { clock, intervalMs: 1_000, timeoutMs: 500, onTimeout: () => timedOut++ });

    client.pause(); // the peer's process hangs: it reads nothing, so it answers nothing
    const serverClosed = once(server, 'close');
    clock.advance(1_000);
    clock.advance(499);
    expect(timedOut).toBe(0);
    expect(server.readyState).toBe(server.OPEN);
    clock.advance(1);
    expect(timedOut).toBe(1);

    const [code] = (await serverClosed) as [number];
    expect(code).toBe(1006);
    client.resume();
    expect((await clientClosed).code).toBe(1006);
    expect(clock.pending).toBe(0);
  });

  it('is not fooled by unsolicited pongs from a peer that never reads', async () => {
    const { server, client, clientClosed } = await open();
    const clock = new ManualClock();
    let timedOut = 0;
    new Keepalive(server, { clock, intervalMs: 1_000, timeoutMs: 500, onTimeout: () => timedOut++ });
    const pongsSeen = (n: number) =>
      new Promise<void>((resolve) => {
        let seen = 0;
        const count = () => {
          if (++seen < n) return;
          server.off('pong', count);
          resolve();
        };
        server.on('pong', count);
      });

    client.pause(); // reads nothing, so it never sees our ping; but it can still write
    const serverClosed = once(server, 'close');
    clock.advance(1_000);
    // RFC 6455 lets a peer send pongs nobody asked for: empty, guessed, or one of its own every so often.
    const arrived = pongsSeen(3);
    client.pong();
    client.pong(Buffer.from('0000000000000000', 'hex'));
    client.pong(Buffer.from('pong'));
    await arrived;
    clock.advance(500);
    expect(timedOut).toBe(1);
    const [code] = (await serverClosed) as [number];
    expect(code).toBe(1006);
    client.resume();
    expect((await clientClosed).code).toBe(1006);
    expect(clock.pending).toBe(0);
  });

  it('does not stack pings while one is unanswered', async () => {
    const { server, client } = await open();
    const clock = new ManualClock();
    const ping = vi.spyOn(server, 'ping');
    client.pause();
    let timedOut = 0;
    // A timeout longer than the interval: the second tick must not send a second ping.
    new Keepalive(server, { clock, intervalMs: 100, timeoutMs: 250, onTimeout: () => timedOut++ });
    clock.advance(300);
    expect(timedOut).toBe(0);
    clock.advance(50);
    expect(timedOut).toBe(1);
    expect(ping).toHaveBeenCalledTimes(1);
  });

  it('stops on stop() and when the socket closes, leaving no timers', async () => {
    const { server, client } = await open();
    const clock = new ManualClock();
    const keepalive = new Keepalive(server, { clock });
    expect(clock.pending).toBe(1);
    keepalive.stop();
    keepalive.stop();
    expect(clock.pending).toBe(0);

    new Keepalive(server, { clock });
    clock.advance(DEFAULT_KEEPALIVE_INTERVAL_MS); // a ping in flight: interval + deadline
    expect(clock.pending).toBe(2);
    client.close(1000);
    await once(server, 'close');
    expect(clock.pending).toBe(0);
  });

  it('refuses non-positive timings', async () => {
    const { server } = await open();
    expect(() => new Keepalive(server, { intervalMs: 0 })).toThrow(RangeError);
    expect(() => new Keepalive(server, { timeoutMs: -1 })).toThrow(RangeError);
  });
});
