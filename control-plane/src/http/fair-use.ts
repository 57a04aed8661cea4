// Fair-use protection of the build & project API (every route, reads and writes): token buckets,
// so a polling loop or a flood cannot starve the service. Each request takes a token from its
// client address's bucket (`limits.fairUseAddressBurst` at once, refilled at
// `limits.fairUseAddressPerSecond`: a new userId per request buys nothing) and from its
// (address, userId) bucket (`limits.fairUseBurst`, `limits.fairUsePerSecond`). 429 + Retry-After.
// It runs before authentication and the build-call window (architecture: "runs first").
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors';
import { clientBlock } from '../lib/ip-address';
import type { Clock } from '@pixelfleet/common';

export interface FairUseOptions {
  /** (address, userId) bucket size: requests allowed back to back. */
  burst: number;
  /** Tokens added to it per second. */
  refillPerSecond: number;
  /** Client address bucket size, whatever the userId. */
  addressBurst: number;
  /** Tokens added to it per second. */
  addressRefillPerSecond: number;
}

interface BucketSize {
  burst: number;
  refillPerSecond: number;
}

interface Bucket {
  tokens: number;
  at: number;
  readonly size: BucketSize;
}

/** Buckets kept before full ones are dropped (a full bucket carries no information). */
const MAX_BUCKETS = 50_000;

export class FairUse {
  private readonly buckets = new Map<string, Bucket>();
  private readonly userSize: BucketSize;
  private readonly addressSize: BucketSize;

  constructor(
    private readonly clock: Clock,
    options: FairUseOptions,
  ) {
    this.userSize = { burst: options.burst, refillPerSecond: options.refillPerSecond };
    this.addressSize = { burst: options.addressBurst, refillPerSecond: options.addressRefillPerSecond };
  }

  /** Takes a token from a (client address, userId) bucket; returns the seconds to wait when it is empty. An IPv6 address counts as its /64 (clientBlock). */
  take(address: string, userId: string): number | undefined {
    return this.takeFrom(`u ${clientBlock(address)} ${userId}`, this.userSize);
  }

  /** Takes a token from a client address's own bucket (an IPv6 address's /64); returns the seconds to wait when it is empty. */
  takeForAddress(address: string): number | undefined {
    return this.takeFrom(`a ${clientBlock(address)}`, this.addressSize);
  }

  /** onRequest hook: the address bucket for every request, and the (address, userId) bucket for reads (userId in the query). */
  readonly onRequest = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    const query = req.query as Record<string, unknown> | undefined;
    const wait = this.takeForAddress(req.ip) ?? (isRead(req) ? this.take(req.ip, typeof query?.userId === 'string' ? query.userId : '') : undefined);
    done(refusal(wait));
  };

  /** preValidation hook: the (address, userId) bucket for writes, whose userId is in the JSON body (parsed by now). */
  readonly preValidation = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    if (isRead(req)) return done();
    const body = req.body as Record<string, unknown> | null | undefined;
    done(refusal(this.take(req.ip, typeof body?.userId === 'string' ? body.userId : '')));
  };

  private takeFrom(key: string, size: BucketSize): number | undefined {
    const now = this.clock.now();
    const b = refilled(this.buckets.get(key) ?? { tokens: size.burst, at: now, size }, now);
    if (b.tokens < 1) {
      this.buckets.set(key, b);
      return Math.max(1, Math.ceil((1 - b.tokens) / size.refillPerSecond));
    }
    b.tokens -= 1;
    if (!this.buckets.has(key) && this.buckets.size >= MAX_BUCKETS) this.prune(now);
    this.buckets.set(key, b);
    return undefined;
  }

  private prune(now: number): void {
    for (const [key, b] of this.buckets) if (refilled(b, now).tokens >= b.size.burst) this.buckets.delete(key);
  }
}

function isRead(req: FastifyRequest): boolean {
  return req.method === 'GET' || req.method === 'HEAD';
}

function refusal(wait: number | undefined): ApiError | undefined {
  return wait === undefined ? undefined : new ApiError('fairUseRateLimited', { seconds: wait }, { 'retry-after': String(wait) });
}

function refilled(b: Bucket, now: number): Bucket {
  const { size } = b;
  return { tokens: Math.min(size.burst, b.tokens + ((now - b.at) / 1000) * size.refillPerSecond), at: now, size };
}
