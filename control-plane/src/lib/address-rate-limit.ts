// How often one client address may do something costly: a token bucket per address (block: an
// IPv6 /64), `burst` at once, refilled at `perMinute`, in bounded memory. Used for new viewer
// sessions (`viewers.sessionBurst` / `viewers.sessionsPerMinute`, taken before a session exists,
// so that an address opening and closing the signalling socket in a loop cannot grow the database
// and the log without bound) and for failed gRPC credential checks (credential-failures.ts).
import { TokenBucket, type Clock } from '@pixelfleet/common';
import { clientBlock } from './ip-address';

export interface AddressRateLimitOptions {
  /** What an address may do back to back (the bucket's size); at least 1. */
  burst: number;
  /** Given back to an address per minute; 0 turns the limit off. */
  perMinute: number;
}

/**
 * Addresses held at most. Past it the least recently seen is dropped (and would start again with
 * a full bucket): a flood from this many addresses at once is not one an address limit can stop.
 */
export const MAX_RATE_LIMITED_ADDRESSES = 100_000;

interface AddressBucket {
  readonly bucket: TokenBucket;
  /** When the address last asked for a session (ms). */
  lastAt: number;
  /** Refused in a row since the address last got a token. */
  refused: number;
}

/** What take() decided. */
export type Admission =
  | { admitted: true; /** Refused in a row just before this one (0 when none). */ refusedBefore: number }
  | { admitted: false; /** This refusal's place in the run of refusals since the address last got a token (1 = the first). */ refusedInRow: number };

export class AddressRateLimit {
  /** In order of last use (a use moves its address to the end), so idle buckets are at the front. */
  private readonly buckets = new Map<string, AddressBucket>();
  /** A bucket untouched this long is full again: dropping it changes nothing for its address. */
  private readonly refillMs: number;

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    private readonly options: AddressRateLimitOptions,
  ) {
    if (!(options.burst >= 1) || !(options.perMinute >= 0)) throw new RangeError('address rate limit: burst must be at least 1 and perMinute at least 0');
    this.refillMs = options.perMinute > 0 ? Math.ceil((options.burst / options.perMinute) * 60_000) : 0;
  }

  /** Addresses whose bucket is held (those seen within one refill period, at most MAX_RATE_LIMITED_ADDRESSES). */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * True when take() would admit the address now; takes nothing (an address never seen, or seen
   * long enough ago, has a full bucket).
   */
  wouldAdmit(address: string): boolean {
    if (this.options.perMinute === 0) return true;
    return this.buckets.get(clientBlock(address))?.bucket.available() ?? true;
  }

  /**
   * Takes a token from the bucket of the address's block (an IPv6 /64, see clientBlock); every
   * admission when the limit is off.
   */
  take(address: string): Admission {
    if (this.options.perMinute === 0) return { admitted: true, refusedBefore: 0 };
    address = clientBlock(address);
    const now = this.clock.now();
    this.dropIdle(now);
    let entry = this.buckets.get(address);
    if (entry === undefined) {
      entry = { bucket: new TokenBucket({ burst: this.options.burst, perSecond: this.options.perMinute / 60 }, this.clock), lastAt: now, refused: 0 };
    } else {
      this.buckets.delete(address);
    }
    entry.lastAt = now;
    this.buckets.set(address, entry);
    if (this.buckets.size > MAX_RATE_LIMITED_ADDRESSES) this.dropOldest();
    if (!entry.bucket.take()) {
      entry.refused += 1;
      return { admitted: false, refusedInRow: entry.refused };
    }
    const refusedBefore = entry.refused;
    entry.refused = 0;
    return { admitted: true, refusedBefore };
  }

  private dropIdle(now: number): void {
    for (const [address, entry] of this.buckets) {
      if (now - entry.lastAt < this.refillMs) return;
      this.buckets.delete(address);
    }
  }

  private dropOldest(): void {
    const oldest = this.buckets.keys().next();
    if (oldest.done !== true) this.buckets.delete(oldest.value);
  }
}
