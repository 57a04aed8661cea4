// A hand-driven RelayClock for the relay's timer logic: advance() runs due timers in time order.
import type { Clock as RelayClock, TimerHandle } from '@pixelfleet/signaling';

export class ManualClock implements RelayClock {
  private timers: { at: number; fn: () => void; live: boolean }[] = [];

  constructor(public nowMs = 0) {}

  now(): number {
    return this.nowMs;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer = { at: this.nowMs + delayMs, fn, live: true };
    this.timers.push(timer);
    return { cancel: () => (timer.live = false) };
  }

  setInterval(): TimerHandle {
    throw new Error('ManualClock: setInterval is not used by the code under test');
  }

  /** Timers not yet run nor cancelled. */
  get pending(): number {
    return this.timers.filter((t) => t.live).length;
  }

  advance(ms: number): void {
    const end = this.nowMs + ms;
    for (;;) {
      const next = this.timers.filter((t) => t.live && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.nowMs = next.at;
      next.live = false;
      next.fn();
    }
    this.nowMs = end;
    this.timers = this.timers.filter((t) => t.live);
  }
}
