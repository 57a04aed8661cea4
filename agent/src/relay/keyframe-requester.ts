// Asks the app for a keyframe on behalf of all viewers, at most once per minIntervalMs. A request
// inside the quiet period is not lost: one trailing request goes out when it ends, so a viewer that
// joins just after another still gets its keyframe within minIntervalMs.
import type { Clock as RelayClock, TimerHandle } from '../lib/clock';

export class KeyframeRequester {
  private lastSentMs = -Infinity;
  private trailing: TimerHandle | undefined;
  private closed = false;

  constructor(
    private readonly send: () => void,
    private readonly minIntervalMs: number,
    private readonly clock: RelayClock,
  ) {}

  request(): void {
    if (this.closed || this.trailing !== undefined) return;
    const wait = this.lastSentMs + this.minIntervalMs - this.clock.now();
    if (wait <= 0) {
      this.fire();
      return;
    }
    this.trailing = this.clock.setTimeout(() => {
      this.trailing = undefined;
      this.fire();
    }, wait);
  }

  /** Drops a pending trailing request; later requests are ignored. */
  close(): void {
    this.closed = true;
    this.trailing?.cancel();
    this.trailing = undefined;
  }

  private fire(): void {
    if (this.closed) return;
    this.lastSentMs = this.clock.now();
    this.send();
  }
}
