// The one injected source of time for every package: leases, rate limits, queues, keepalives and
// timeouts read it instead of Date.now() and the global timers, so tests drive them with
// ManualClock instead of sleeping. Real timers are unref'd: they never keep a process up (a
// process that must stay up holds a handle of its own, as the agent's entry point does).
// Dependency-free: the browser page imports it too (`@pixelfleet/common/clock`).

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs fn once after delayMs. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  /** Runs fn every intervalMs until cancelled. */
  setInterval(fn: () => void, intervalMs: number): TimerHandle;
}

export const systemClock: Clock = {
  now: () => Date.now(),
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
  id: number;
  dueAt: number;
  fn: () => void;
  intervalMs: number | undefined;
}

/** A clock that moves only when told to; due timers fire in time order during advance(). */
export class ManualClock implements Clock {
  private current: number;
  private nextId = 1;
  private readonly timers = new Map<number, PendingTimer>();

  constructor(startMs = Date.parse('2026-01-01T00:00:00Z')) {
    this.current = startMs;
  }

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

  /** Jumps to the next due timer and runs it (and any due at the same time); throws when none is pending. */
  runNext(): void {
    let next: PendingTimer | undefined;
    for (const t of this.timers.values()) if (next === undefined || t.dueAt < next.dueAt) next = t;
    if (next === undefined) throw new Error('ManualClock: no timer pending');
    this.advance(Math.max(0, next.dueAt - this.current));
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
