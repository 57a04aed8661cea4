import { describe, expect, it } from 'vitest';
import { KeyframeRequester } from './keyframe-requester';
import type { Clock as RelayClock, TimerHandle } from '../lib/clock';

class ManualClock implements RelayClock {
  nowMs = 1_000;
  private timers: { at: number; fn: () => void; live: boolean }[] = [];
  now(): number {
    return this.nowMs;
  }
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer = { at: this.nowMs + delayMs, fn, live: true };
    this.timers.push(timer);
    return { cancel: () => (timer.live = false) };
  }
  setInterval(): TimerHandle {
    throw new Error('not used');
  }
  get pending(): number {
    return this.timers.filter((t) => t.live).length;
  }
  advance(ms: number): void {
    this.nowMs += ms;
    for (const t of this.timers) {
      if (t.live && t.at <= this.nowMs) {
        t.live = false;
        t.fn();
      }
    }
  }
}

describe('KeyframeRequester', () => {
  it('sends at once, then at most once per interval, with one trailing request for a burst', () => {
    const clock = new ManualClock();
    const sent: number[] = [];
    const requester = new KeyframeRequester(() => sent.push(clock.now()), 500, clock);
    requester.request();
    expect(sent).toEqual([1_000]);
    clock.advance(100);
    requester.request();
    requester.request();
    requester.request();
    expect(sent).toEqual([1_000]);
    clock.advance(399);
    expect(sent).toEqual([1_000]);
    clock.advance(1);
    expect(sent).toEqual([1_000, 1_500]);
    clock.advance(600);
    requester.request();
    expect(sent).toEqual([1_000, 1_500, 2_100]);
  });

  it('drops a pending request on close and ignores later ones', () => {
    const clock = new ManualClock();
    let sent = 0;
    const requester = new KeyframeRequester(() => sent++, 500, clock);
    requester.request();
    requester.request();
    expect(clock.pending).toBe(1);
    requester.close();
    expect(clock.pending).toBe(0);
    clock.advance(1_000);
    requester.request();
    expect(sent).toBe(1);
  });
});
