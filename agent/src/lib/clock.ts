// The agent's injected source of time: the launcher's stop grace and output drain, the relay's
// keyframe-request rate limit and REMB period read it instead of the global timers, so tests can
// count live timers or drive them by hand. Real timers are unref'd: they never keep the agent up.

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs fn once after delayMs. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  /** Runs fn every periodMs until cancelled. */
  setInterval(fn: () => void, periodMs: number): TimerHandle;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, delayMs) {
    const t = setTimeout(fn, delayMs);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  setInterval(fn, periodMs) {
    const t = setInterval(fn, periodMs);
    t.unref();
    return { cancel: () => clearInterval(t) };
  },
};
