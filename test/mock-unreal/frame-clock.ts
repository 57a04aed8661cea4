// Wall-clock frame pacing for the mock Unreal app: frame n is due at start + n/fps, so timer jitter
// never accumulates into drift. A late timer emits the missed frames at once; a stall longer than
// maxLagFrames skips ahead instead (and says so, since the skipped pictures break the decode chain).

export interface FrameTick {
  /** Frame number since the clock started; increases by one per tick, or jumps after a stall. */
  readonly index: number;
  /** True on the first tick after frames were skipped: receivers need a keyframe. */
  readonly skipped: boolean;
}

export interface TimerHost {
  /** Monotonic milliseconds. */
  now(): number;
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimerHost: TimerHost = {
  now: () => performance.now(),
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface FrameClockOptions {
  readonly fps: number;
  /** Emit missed frames only while at most this many are due; skip ahead beyond it (default: 1 s). */
  readonly maxLagFrames?: number;
  readonly timers?: TimerHost;
}

export class FrameClock {
  private readonly frameMs: number;
  private readonly maxLagFrames: number;
  private readonly timers: TimerHost;
  private startedAt = 0;
  private nextIndex = 0;
  private handle: unknown;
  private running = false;

  constructor(options: FrameClockOptions, private readonly onTick: (tick: FrameTick) => void) {
    if (!(options.fps > 0)) throw new RangeError(`fps must be positive, got ${options.fps}`);
    this.frameMs = 1000 / options.fps;
    this.maxLagFrames = options.maxLagFrames ?? Math.ceil(options.fps);
    this.timers = options.timers ?? realTimerHost;
  }

  /** Starts ticking; frame 0 is emitted at once. Idempotent. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.startedAt = this.timers.now();
    this.nextIndex = 0;
    this.fire();
  }

  /** Stops ticking. Idempotent. */
  stop(): void {
    this.running = false;
    if (this.handle !== undefined) this.timers.clearTimeout(this.handle);
    this.handle = undefined;
  }

  private fire(): void {
    this.handle = undefined;
    if (!this.running) return;
    const now = this.timers.now();
    // The latest frame whose due time has passed, computed with the same expression as the delay
    // below: a floor of the quotient can be one short through rounding and spin a 0 ms timer.
    let due = Math.floor((now - this.startedAt) / this.frameMs);
    while (this.dueAt(due + 1) <= now) due++;
    while (due >= 0 && this.dueAt(due) > now) due--;
    let skipped = false;
    if (due - this.nextIndex >= this.maxLagFrames) {
      this.nextIndex = due;
      skipped = true;
    }
    while (this.running && this.nextIndex <= due) {
      this.onTick({ index: this.nextIndex, skipped });
      skipped = false;
      this.nextIndex++;
    }
    if (!this.running) return;
    const delay = Math.max(1, Math.ceil(this.dueAt(this.nextIndex) - this.timers.now()));
    this.handle = this.timers.setTimeout(() => this.fire(), delay);
  }

  private dueAt(index: number): number {
    return this.startedAt + index * this.frameMs;
  }
}
