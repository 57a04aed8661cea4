// AddressRateLimit on ManualClock: a burst per address, then one token per refill step; each
// address on its own; off at perMinute 0; and the buckets of idle addresses dropped, so the memory
// it holds follows the addresses seen within one refill period, not every address ever seen.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { AddressRateLimit, MAX_RATE_LIMITED_ADDRESSES } from './address-rate-limit';

function admitted(limit: AddressRateLimit, address: string, tries: number): number {
  let n = 0;
  for (let i = 0; i < tries; i++) if (limit.take(address).admitted) n += 1;
  return n;
}

describe('AddressRateLimit', () => {
  it('admits a burst per address, then one session each 60/perMinute seconds; another address has its own bucket', () => {
    const clock = new ManualClock();
    const limit = new AddressRateLimit(clock, { burst: 3, perMinute: 6 });
    expect(admitted(limit, '203.0.113.1', 10)).toBe(3);
    expect(limit.take('203.0.113.1')).toEqual({ admitted: false, refusedInRow: 8 });
    expect(admitted(limit, '203.0.113.2', 10)).toBe(3);
    clock.advance(9_999);
    expect(limit.take('203.0.113.1').admitted).toBe(false);
    clock.advance(1); // 10 s at 6 a minute: one session
    expect(limit.take('203.0.113.1')).toEqual({ admitted: true, refusedBefore: 9 });
    expect(limit.take('203.0.113.1')).toEqual({ admitted: false, refusedInRow: 1 });
    clock.advance(3_600_000); // never more than the burst saved up
    expect(admitted(limit, '203.0.113.1', 10)).toBe(3);
  });

  it('counts an IPv6 client by its /64 (rotating the interface id gets no new bucket) and an IPv4 client in IPv6 form as that IPv4 address', () => {
    const limit = new AddressRateLimit(new ManualClock(), { burst: 2, perMinute: 1 });
    expect(limit.take('2a01:4f8:c0c:1::1').admitted).toBe(true);
    expect(limit.take('2a01:4f8:c0c:1:abcd:ef01:2345:6789').admitted).toBe(true);
    expect(limit.take('2A01:04F8:0C0C:0001::99').admitted).toBe(false);
    expect(limit.take('2a01:4f8:c0c:2::1').admitted).toBe(true); // the next /64 is another subscriber
    expect(limit.take('203.0.113.5').admitted).toBe(true);
    expect(limit.take('::ffff:203.0.113.5').admitted).toBe(true);
    expect(limit.take('::ffff:203.0.113.5').admitted).toBe(false);
    expect(limit.size).toBe(3);
  });

  it('wouldAdmit says what take would decide, and takes nothing', () => {
    const clock = new ManualClock();
    const limit = new AddressRateLimit(clock, { burst: 2, perMinute: 6 });
    expect(limit.wouldAdmit('203.0.113.1')).toBe(true); // never seen: a full bucket
    expect(limit.size).toBe(0);
    for (let i = 0; i < 5; i++) expect(limit.wouldAdmit('203.0.113.1')).toBe(true);
    expect(admitted(limit, '203.0.113.1', 2)).toBe(2);
    expect(limit.wouldAdmit('203.0.113.1')).toBe(false);
    expect(limit.wouldAdmit('203.0.113.2')).toBe(true);
    clock.advance(10_000);
    expect(limit.wouldAdmit('203.0.113.1')).toBe(true);
    expect(limit.take('203.0.113.1')).toEqual({ admitted: true, refusedBefore: 0 });
    expect(new AddressRateLimit(clock, { burst: 1, perMinute: 0 }).wouldAdmit('x')).toBe(true);
  });

  it('admits everything when perMinute is 0, and holds no bucket', () => {
    const limit = new AddressRateLimit(new ManualClock(), { burst: 1, perMinute: 0 });
    expect(admitted(limit, '203.0.113.1', 1_000)).toBe(1_000);
    expect(limit.size).toBe(0);
  });

  it('drops the bucket of an address idle for one refill period (it would be full again), and only those', () => {
    const clock = new ManualClock();
    const limit = new AddressRateLimit(clock, { burst: 2, perMinute: 1 }); // full again 2 minutes after the last use
    for (let i = 0; i < 10_000; i++) limit.take(`10.0.${i >> 8}.${i & 255}`);
    expect(limit.size).toBe(10_000);
    clock.advance(60_000);
    limit.take('198.51.100.7');
    limit.take('198.51.100.7');
    expect(limit.take('198.51.100.7').admitted).toBe(false);
    expect(limit.size).toBe(10_001); // a minute idle is not enough
    clock.advance(60_000);
    expect(limit.take('192.0.2.1').admitted).toBe(true);
    expect(limit.size).toBe(2); // the 10,000 idle ones went; the refused address's bucket stays
    expect(limit.take('198.51.100.7').admitted).toBe(true); // one minute: one session back
    expect(limit.take('198.51.100.7').admitted).toBe(false);
    clock.advance(120_000);
    expect(limit.take('192.0.2.9').admitted).toBe(true);
    expect(limit.size).toBe(1);
    expect(admitted(limit, '198.51.100.7', 5)).toBe(2); // dropped while full: a new bucket is the same bucket
  });

  it(`never holds more than MAX_RATE_LIMITED_ADDRESSES buckets, dropping the least recently seen`, () => {
    const clock = new ManualClock();
    const limit = new AddressRateLimit(clock, { burst: 1, perMinute: 1 });
    limit.take('first');
    for (let i = 0; i < MAX_RATE_LIMITED_ADDRESSES + 10; i++) limit.take(`a${i}`);
    expect(limit.size).toBe(MAX_RATE_LIMITED_ADDRESSES);
    expect(limit.take('first').admitted).toBe(true); // forgotten: it starts again with a full bucket
  });

  it('refuses a bucket that could never admit a session', () => {
    expect(() => new AddressRateLimit(new ManualClock(), { burst: 0, perMinute: 1 })).toThrow(RangeError);
    expect(() => new AddressRateLimit(new ManualClock(), { burst: 1, perMinute: -1 })).toThrow(RangeError);
  });
});
