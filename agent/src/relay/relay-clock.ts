// The relay's injected source of time: the keyframe-request rate limit and the REMB period read
// it instead of the global timers, so tests can count live timers or drive them by hand. Same
// shape as the launcher's clock plus setInterval.

export interface TimerHandle {
  cancel(): void;
}

export interface RelayClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs fn once after delayMs. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  /** Runs fn every periodMs until cancelled. */
  setInterval(fn: () => void, periodMs: number): TimerHandle;
}

/** Real timers, unref'd: a relay never keeps the process alive by itself. */
export const systemRelayClock: RelayClock = {
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
