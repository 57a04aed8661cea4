// Guessing passwords is slowed per account and per client network, whichever runs out first: each
// failed sign-in takes a token from both buckets, and a sign-in is refused unchecked (429 with the
// wait) while either is empty. A person who mistypes gets several tries; a guesser gets one try a
// minute per account, and one every few seconds per network across accounts. A sign-in that works
// takes nothing. Unknown addresses are counted like known ones, so the answers never tell which
// addresses have an account. Buckets are kept for the most recent MAX_TRACKED keys.
import { TokenBucket, type Clock, type RateLimitOptions } from '@pixelfleet/common';

/** Failed sign-ins per account: five back to back, then one a minute. */
export const ACCOUNT_FAILURES: RateLimitOptions = { burst: 5, perSecond: 1 / 60 };
/** Failed sign-ins per client network (an IPv4 address, an IPv6 /64), whatever the account: twenty, then one every 6 s. */
export const ADDRESS_FAILURES: RateLimitOptions = { burst: 20, perSecond: 1 / 6 };
const MAX_TRACKED = 10_000;

export class SignInThrottle {
  private readonly accounts: KeyedBuckets;
  private readonly addresses: KeyedBuckets;

  constructor(clock: Pick<Clock, 'now'>) {
    this.accounts = new KeyedBuckets(ACCOUNT_FAILURES, clock);
    this.addresses = new KeyedBuckets(ADDRESS_FAILURES, clock);
  }

  /** How long this account and network must wait before a sign-in is checked, ms (0: it may be tried now). */
  waitMs(email: string, network: string): number {
    return Math.max(this.accounts.peek(accountKey(email))?.waitMs() ?? 0, this.addresses.peek(network)?.waitMs() ?? 0);
  }

  /** A failed sign-in for this account from this network. */
  failed(email: string, network: string): void {
    this.accounts.get(accountKey(email)).take();
    this.addresses.get(network).take();
  }
}

/** A token bucket per key (an account, a network, an address), for the MAX_TRACKED most recently used keys. */
export class KeyedBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly options: RateLimitOptions,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  /** The key's bucket if it has one (a key never used has a full bucket). */
  peek(key: string): TokenBucket | undefined {
    return this.buckets.get(key);
  }

  /** The key's bucket, made full if it had none. */
  get(key: string): TokenBucket {
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      bucket = new TokenBucket(this.options, this.clock);
      if (this.buckets.size >= MAX_TRACKED) this.buckets.delete(this.buckets.keys().next().value!);
    } else {
      this.buckets.delete(key); // re-inserted: the map's first key is the least recently used
    }
    this.buckets.set(key, bucket);
    return bucket;
  }
}

function accountKey(email: string): string {
  return email.trim().toLowerCase();
}
