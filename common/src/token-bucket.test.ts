// TokenBucket on ManualClock: a full bucket lets `burst` through, then one message per
// 1/perSecond, never more than `burst` saved up however long the peer was quiet.
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock';
import { TokenBucket } from './token-bucket';

function takeAll(bucket: TokenBucket, tries: number): number {
  let taken = 0;
  for (let i = 0; i < tries; i++) if (bucket.take()) taken += 1;
  return taken;
}

describe('TokenBucket', () => {
  it('lets a burst through, then refills at perSecond', () => {
    const clock = new ManualClock();
    const bucket = new TokenBucket({ burst: 200, perSecond: 50 }, clock);
    expect(takeAll(bucket, 1_000)).toBe(200);
    clock.advance(10);
    expect(bucket.take()).toBe(false);
    clock.advance(10); // 20 ms at 50/s: one token
    expect(bucket.take()).toBe(true);
    expect(bucket.take()).toBe(false);
    clock.advance(1_000);
    expect(takeAll(bucket, 1_000)).toBe(50);
  });

  it('saves up no more than burst', () => {
    const clock = new ManualClock();
    const bucket = new TokenBucket({ burst: 3, perSecond: 1 }, clock);
    clock.advance(3_600_000);
    expect(takeAll(bucket, 10)).toBe(3);
  });

  it('refuses a bucket that could never let a message through', () => {
    const clock = new ManualClock();
    expect(() => new TokenBucket({ burst: 0, perSecond: 1 }, clock)).toThrow(RangeError);
    expect(() => new TokenBucket({ burst: 1, perSecond: 0 }, clock)).toThrow(RangeError);
    expect(() => new TokenBucket({ burst: Number.NaN, perSecond: 1 }, clock)).toThrow(RangeError);
  });

  it('says how long until the next take succeeds', () => {
    const clock = new ManualClock();
    const bucket = new TokenBucket({ burst: 2, perSecond: 0.5 }, clock);
    expect(bucket.waitMs()).toBe(0);
    expect(takeAll(bucket, 10)).toBe(2);
    expect(bucket.waitMs()).toBe(2_000);
    clock.advance(1_500);
    expect(bucket.waitMs()).toBe(500);
    clock.advance(500);
    expect(bucket.waitMs()).toBe(0);
    expect(bucket.take()).toBe(true);
  });
});
