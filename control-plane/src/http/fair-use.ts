// Fair-use protection of the build & project API's GET routes: a token bucket per client
// address and userId (`limits.fairUseBurst` requests at once, refilled at
// `limits.fairUsePerSecond`), so a polling loop cannot starve the service. 429 + Retry-After.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors';
import type { Clock } from '../lib/clock';

export interface FairUseOptions {
  /** Bucket size: requests allowed back to back. */
  burst: number;
  /** Tokens added per second. */
  refillPerSecond: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Buckets kept before full ones are dropped (a full bucket carries no information). */
const MAX_BUCKETS = 50_000;

export class FairUse {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: Clock,
    private readonly options: FairUseOptions,
  ) {}

  /** Takes a token for the key; returns the seconds to wait when the bucket is empty. */
  take(key: string): number | undefined {
    const now = this.clock.now();
    const b = this.refilled(this.buckets.get(key), now);
    if (b.tokens < 1) {
      this.buckets.set(key, b);
      return Math.max(1, Math.ceil((1 - b.tokens) / this.options.refillPerSecond));
    }
    b.tokens -= 1;
    if (!this.buckets.has(key) && this.buckets.size >= MAX_BUCKETS) this.prune(now);
    this.buckets.set(key, b);
    return undefined;
  }

  /** onRequest hook for GET routes; the bucket key is the client address plus `userId`. */
  readonly hook = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return done();
    const query = req.query as Record<string, unknown> | undefined;
    const userId = typeof query?.userId === 'string' ? query.userId : '';
    const wait = this.take(`${req.ip} ${userId}`);
    done(wait === undefined ? undefined : new ApiError('fairUseRateLimited', { seconds: wait }, { 'retry-after': String(wait) }));
  };

  private refilled(b: Bucket | undefined, now: number): Bucket {
    if (!b) return { tokens: this.options.burst, at: now };
    const tokens = Math.min(this.options.burst, b.tokens + ((now - b.at) / 1000) * this.options.refillPerSecond);
    return { tokens, at: now };
  }

  private prune(now: number): void {
    for (const [key, b] of this.buckets) if (this.refilled(b, now).tokens >= this.options.burst) this.buckets.delete(key);
  }
}
