// Asks the app for a keyframe on behalf of all viewers, only when nothing cheaper can help: at most
// once per minIntervalMs, and not while a keyframe it asked for is still arriving (that keyframe
// serves every request made meanwhile; asking again would only make the app encode another large
// frame into the same congestion — the keyframe-request loop of issue 9). A request inside the
// quiet period is not lost: one trailing request goes out when it ends, so a viewer that joins just
// after another still gets its keyframe within minIntervalMs.
import type { Clock, TimerHandle } from '@pixelfleet/common';

export interface KeyframeRequestStats {
  /** Requests made (viewers' PLI/FIR, viewers joining, the relay's own unrepairable loss). */
  requested: number;
  /** Requests sent to the app. */
  sent: number;
  /** Requests folded into one already sent or about to be sent. */
  coalesced: number;
}

export class KeyframeRequester {
  private lastSentMs = -Infinity;
  /** Until when a keyframe asked for is still awaited (it stops waiting when one arrives). */
  private awaitingUntilMs = -Infinity;
  private trailing: TimerHandle | undefined;
  private closed = false;
  private readonly counters: KeyframeRequestStats = { requested: 0, sent: 0, coalesced: 0 };

  constructor(
    /** Sends the request; false when it could not go out (no ingest yet): then it is not awaited. */
    private readonly send: () => boolean,
    private readonly minIntervalMs: number,
    private readonly clock: Clock,
    /** How long a requested keyframe is awaited before another request may go out, ms. */
    private readonly awaitMs = Math.max(1_000, 2 * minIntervalMs),
  ) {}

  /**
   * Asks for a keyframe. servedByArriving false: a keyframe already arriving cannot serve this one
   * (a viewer whose media came up in the middle of it got only its tail), so only the interval
   * applies.
   */
  request(servedByArriving = true): void {
    if (this.closed) return;
    this.counters.requested++;
    const now = this.clock.now();
    if (this.trailing !== undefined || (servedByArriving && now < this.awaitingUntilMs)) {
      this.counters.coalesced++;
      return;
    }
    const wait = this.lastSentMs + this.minIntervalMs - now;
    if (wait <= 0) {
      this.fire();
      return;
    }
    this.trailing = this.clock.setTimeout(() => {
      this.trailing = undefined;
      // A keyframe asked for since is on its way, and it serves this request too.
      if (servedByArriving && this.clock.now() < this.awaitingUntilMs) return;
      this.fire();
    }, wait);
  }

  /** A whole keyframe came from the app: the next request may go out (after minIntervalMs). */
  keyframeArrived(): void {
    this.awaitingUntilMs = -Infinity;
  }

  stats(): KeyframeRequestStats {
    return { ...this.counters };
  }

  /** Drops a pending trailing request; later requests are ignored. */
  close(): void {
    this.closed = true;
    this.trailing?.cancel();
    this.trailing = undefined;
  }

  private fire(): void {
    if (this.closed) return;
    const now = this.clock.now();
    this.lastSentMs = now;
    if (!this.send()) return;
    this.counters.sent++;
    this.awaitingUntilMs = now + this.awaitMs;
  }
}
