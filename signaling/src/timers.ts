// The injected time source of this package: keepalive and the inbound rate limit read it instead
// of setTimeout and the system clock, so tests drive them with ManualTimers instead of sleeping.
// Shaped like control-plane's Clock.

export interface TimerHandle {
  cancel(): void;
}

export interface Timers {
  /** A monotonic time in ms; only differences between two readings mean anything. */
  now(): number;
  /** Runs fn once after delayMs. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  /** Runs fn every intervalMs until cancelled. */
  setInterval(fn: () => void, intervalMs: number): TimerHandle;
}

/** Real timers, unref'd so that a keepalive never holds the process open. */
export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout(fn, delayMs) {
    const t = setTimeout(fn, delayMs);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  setInterval(fn, intervalMs) {
    const t = setInterval(fn, intervalMs);
    t.unref();
    return { cancel: () => clearInterval(t) };
  },
};

interface PendingTimer {
  readonly id: number;
  dueAt: number;
  readonly fn: () => void;
  readonly intervalMs: number | undefined;
}

/** Timers that move only when told to; due timers fire in time order during advance(ms). */
export class ManualTimers implements Timers {
  private current = 0;
  private nextId = 1;
  private readonly timers = new Map<number, PendingTimer>();

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    return this.add(fn, delayMs, undefined);
  }

  setInterval(fn: () => void, intervalMs: number): TimerHandle {
    return this.add(fn, intervalMs, intervalMs);
  }

  /** Timers not yet fired or cancelled (intervals count until cancelled). */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by ms, firing every timer that falls due on the way. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let due: PendingTimer | undefined;
      for (const t of this.timers.values()) {
        if (t.dueAt <= target && (due === undefined || t.dueAt < due.dueAt || (t.dueAt === due.dueAt && t.id < due.id))) due = t;
      }
      if (due === undefined) break;
      this.current = Math.max(this.current, due.dueAt);
      if (due.intervalMs === undefined) this.timers.delete(due.id);
      else due.dueAt += Math.max(1, due.intervalMs);
      due.fn();
    }
    this.current = target;
  }

  private add(fn: () => void, delayMs: number, intervalMs: number | undefined): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, dueAt: this.current + Math.max(0, delayMs), fn, intervalMs });
    return { cancel: () => this.timers.delete(id) };
  }
}
