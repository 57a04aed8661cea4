// The inbound rate limit of one signalling socket: a token bucket that holds `burst` messages and
// refills at `perSecond`, on the injected time source, so that a peer may send a burst (trickled
// ICE) but not a stream of frames that each cost the server a reply.
import type { Clock } from './clock';

export interface RateLimitOptions {
  /** Messages accepted back to back from a full bucket (the bucket's size). */
  readonly burst: number;
  /** Messages added back to the bucket per second. */
  readonly perSecond: number;
}

export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly options: RateLimitOptions,
    private readonly time: Pick<Clock, 'now'>,
  ) {
    if (!(options.burst >= 1) || !(options.perSecond > 0)) throw new RangeError('rate limit burst must be at least 1 and perSecond positive');
    this.tokens = options.burst;
    this.at = time.now();
  }

  /** Takes one token; false (and nothing taken) when the bucket is empty. */
  take(): boolean {
    if (!this.available()) return false;
    this.tokens -= 1;
    return true;
  }

  /** How long until take() would succeed, ms (0: now); takes nothing. */
  waitMs(): number {
    if (this.available()) return 0;
    // Less a microsecond: the refill's floating point must not round 1000 ms up to 1001.
    return Math.ceil(((1 - this.tokens) / this.options.perSecond) * 1000 - 1e-3);
  }

  /** True when take() would succeed now; takes nothing. */
  available(): boolean {
    const now = this.time.now();
    this.tokens = Math.min(this.options.burst, this.tokens + (Math.max(0, now - this.at) / 1000) * this.options.perSecond);
    this.at = now;
    return this.tokens >= 1;
  }
}
