// The launcher's injected source of time: the stop grace period and the output drain wait read
// it instead of setTimeout, so tests drive them with a manual clock. Same shape as the control
// plane's Clock (a subset), so one shared agent clock can replace it later.

export interface TimerHandle {
  cancel(): void;
}

export interface LauncherClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs fn once after delayMs. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
}

export const systemClock: LauncherClock = {
  now: () => Date.now(),
  setTimeout(fn, delayMs) {
    const t = setTimeout(fn, delayMs);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};
