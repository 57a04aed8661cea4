// Budgets for the one anonymous write route (issue 22): a viewer token comes with every share
// visit, so telemetry is bounded twice — in bytes per session (a session that never left Enqueued
// gets a small budget: its page has little to say), and in bytes per second per client network
// (clientBlock: an IPv4 address or an IPv6 /64), counted from the request's Content-Length
// before its body is read. Beyond either: 429, nothing stored.
import type { Clock } from '@pixelfleet/common';
import { clientBlock } from '../lib/ip-address';

export interface TelemetryLimits {
  /** Stored bytes a session may accept once placed on a worker. */
  bytesPerSession: number;
  /** Stored bytes a session may accept while it has never been placed (Enqueued, or ended from the queue). */
  bytesWhileQueued: number;
  /** Request bytes a client network may send back to back (at least one request's body limit). */
  addressBytesBurst: number;
  /** Request bytes added back to its bucket per second. */
  addressBytesPerSecond: number;
}

/** A session's byte budget: small until it was placed. */
export function sessionTelemetryBudget(session: { placedAt?: number }, limits: TelemetryLimits): number {
  return session.placedAt === undefined ? limits.bytesWhileQueued : limits.bytesPerSession;
}

interface Bucket {
  bytes: number;
  at: number;
}

/** Buckets kept before full ones are dropped (a full bucket carries no information). */
const MAX_BUCKETS = 50_000;

/** Request bytes per client network, as token buckets on the injected clock. */
export class TelemetryAddressRate {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: Clock,
    private readonly limits: Pick<TelemetryLimits, 'addressBytesBurst' | 'addressBytesPerSecond'>,
  ) {}

  /** Takes `bytes` from the address's network; returns the whole seconds to wait when they are not there (nothing taken). */
  take(address: string, bytes: number): number | undefined {
    const key = clientBlock(address);
    const now = this.clock.now();
    const bucket = this.refilled(this.buckets.get(key) ?? { bytes: this.limits.addressBytesBurst, at: now }, now);
    const cost = Math.min(bytes, this.limits.addressBytesBurst);
    if (bucket.bytes < cost) {
      this.buckets.set(key, bucket);
      return Math.max(1, Math.ceil((cost - bucket.bytes) / this.limits.addressBytesPerSecond));
    }
    bucket.bytes -= cost;
    if (!this.buckets.has(key) && this.buckets.size >= MAX_BUCKETS) this.prune(now);
    this.buckets.set(key, bucket);
    return undefined;
  }

  private refilled(b: Bucket, now: number): Bucket {
    return { bytes: Math.min(this.limits.addressBytesBurst, b.bytes + (Math.max(0, now - b.at) / 1000) * this.limits.addressBytesPerSecond), at: now };
  }

  private prune(now: number): void {
    for (const [key, b] of this.buckets) if (this.refilled(b, now).bytes >= this.limits.addressBytesBurst) this.buckets.delete(key);
  }
}
