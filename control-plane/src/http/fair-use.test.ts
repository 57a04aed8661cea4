import { describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { FairUse } from './fair-use';
import { TelemetryAddressRate } from './telemetry-budget';

describe('per-address limits count an IPv6 client by its /64 (issue 22)', () => {
  it('fair use: every address of one /64 draws on one bucket; another /64 and IPv4 have their own', () => {
    const clock = new ManualClock(0);
    const fairUse = new FairUse(clock, { burst: 100, refillPerSecond: 1, addressBurst: 3, addressRefillPerSecond: 1 });
    expect(fairUse.takeForAddress('2001:db8:1:2::1')).toBeUndefined();
    expect(fairUse.takeForAddress('2001:db8:1:2::2')).toBeUndefined();
    expect(fairUse.takeForAddress('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBeUndefined();
    expect(fairUse.takeForAddress('2001:db8:1:2::3')).toBe(1);
    expect(fairUse.takeForAddress('2001:db8:1:3::1')).toBeUndefined();
    expect(fairUse.takeForAddress('203.0.113.7')).toBeUndefined();
    // The user buckets too: a new address per request inside the /64 buys nothing.
    const users = new FairUse(clock, { burst: 1, refillPerSecond: 1, addressBurst: 100, addressRefillPerSecond: 1 });
    expect(users.take('2001:db8:1:2::1', 'u')).toBeUndefined();
    expect(users.take('2001:db8:1:2::2', 'u')).toBe(1);
  });

  it('telemetry bytes: one bucket per /64, refilled with time, and a request larger than the bucket costs the whole bucket', () => {
    const clock = new ManualClock(0);
    const rate = new TelemetryAddressRate(clock, { addressBytesBurst: 1_000, addressBytesPerSecond: 100 });
    expect(rate.take('2001:db8::1', 600)).toBeUndefined();
    expect(rate.take('2001:db8::2', 600)).toBe(2);
    expect(rate.take('2001:db9::1', 600)).toBeUndefined();
    clock.advance(2_000);
    expect(rate.take('2001:db8::2', 600)).toBeUndefined();
    expect(rate.take('198.51.100.1', 5_000)).toBeUndefined();
    expect(rate.take('198.51.100.1', 1)).toBe(1);
  });
});
