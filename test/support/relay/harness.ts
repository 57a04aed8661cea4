// Wiring for relay tests: a relay with a silent logger and counting timers, a fake app connected to
// its ingest, fake viewers connected through it, and an event-driven wait with a deadline.
import pino from 'pino';
import { SessionRelay, type RelayOptions } from '@pixelfleet/agent/test-support';
import type { Clock, TimerHandle } from '@pixelfleet/common';
import { FakeApp } from './fake-app';
import { FakeViewer } from './fake-viewer';

/** The real clock, counting the timers the relay holds. */
export class CountingClock implements Clock {
  active = 0;
  intervalsStarted = 0;
  now(): number {
    return Date.now();
  }
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    this.active++;
    let live = true;
    const t = setTimeout(() => {
      live = false;
      this.active--;
      fn();
    }, delayMs);
    return {
      cancel: () => {
        if (!live) return;
        live = false;
        this.active--;
        clearTimeout(t);
      },
    };
  }
  setInterval(fn: () => void, periodMs: number): TimerHandle {
    this.active++;
    this.intervalsStarted++;
    let live = true;
    const t = setInterval(fn, periodMs);
    return {
      cancel: () => {
        if (!live) return;
        live = false;
        this.active--;
        clearInterval(t);
      },
    };
  }
}

export const TEST_BITRATE = { startBps: 2_000_000, minBps: 500_000, maxBps: 20_000_000 };

export function createRelay(overrides: Partial<RelayOptions> = {}): { relay: SessionRelay; clock: CountingClock } {
  const clock = new CountingClock();
  const relay = new SessionRelay({
    iceServers: [],
    hostAddresses: ['127.0.0.1'],
    bitrate: TEST_BITRATE,
    log: pino({ level: 'silent' }),
    clock,
    ...overrides,
  });
  return { relay, clock };
}

/** Offer → relay → answer, with candidates trickled both ways; resolves once the app's peer is connected. Returns the relay's answer SDP. */
export async function connectApp(relay: SessionRelay, app: FakeApp): Promise<string> {
  relay.onStreamerCandidate((c) => void app.pc.addIceCandidate({ candidate: c.candidate, sdpMid: c.sdpMid ?? null, sdpMLineIndex: c.sdpMLineIndex ?? null }));
  app.pc.onIceCandidate.subscribe((c) => {
    if (c) void relay.addStreamerCandidate(c.toJSON()).catch(() => undefined);
  });
  const answer = await relay.acceptStreamerOffer(await app.offer());
  await app.acceptAnswer(answer);
  await until(() => app.pc.connectionState === 'connected', [(l) => app.onChange(l)], 'the app connected');
  return answer;
}

/** addViewer → fake browser answers → acceptViewerAnswer. Returns the relay's offer SDP. */
export async function connectViewer(relay: SessionRelay, playerId: string, viewer: FakeViewer): Promise<string> {
  const offer = await relay.addViewer(playerId);
  const answer = await viewer.answer(offer);
  await relay.acceptViewerAnswer(playerId, answer);
  return offer;
}

/**
 * Resolves once check() holds, re-checking whenever one of the sources reports a change; rejects
 * after timeoutMs with `what` in the message.
 */
export function until(check: () => boolean, sources: ((listener: () => void) => () => void)[], what: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (check()) {
      resolve();
      return;
    }
    const unsubscribes: (() => void)[] = [];
    const finish = (err?: Error): void => {
      clearTimeout(timer);
      for (const u of unsubscribes) u();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
    for (const source of sources) {
      unsubscribes.push(
        source(() => {
          try {
            if (check()) finish();
          } catch (err) {
            finish(err instanceof Error ? err : new Error(String(err)));
          }
        }),
      );
    }
  });
}

/** A change source for relay events. */
export function relayEvents(relay: SessionRelay): (listener: () => void) => () => void {
  return (listener) => {
    const offs = [
      relay.on('ingestConnected', listener),
      relay.on('ingestFailed', listener),
      relay.on('viewerConnected', listener),
      relay.on('viewerDisconnected', listener),
    ];
    return () => offs.forEach((off) => off());
  };
}

export { FakeApp, FakeViewer };
