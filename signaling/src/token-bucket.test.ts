// TokenBucket on ManualTimers: a full bucket lets `burst` through, then one message per
// 1/perSecond, never more than `burst` saved up however long the peer was quiet.
import { describe, expect, it } from 'vitest';
import { ManualTimers } from './timers';
import { TokenBucket } from './token-bucket';

function takeAll(bucket: TokenBucket, tries: number): number {
  let taken = 0;
  for (let i = 0; i < tries; i++) if (bucket.take()) taken += 1;
  return taken;
}

describe('TokenBucket', () => {
  it('lets a burst through, then refills at perSecond', () => {
    const timers = new ManualTimers();
    const bucket = new TokenBucket({ burst: 200, perSecond: 50 }, timers);
    expect(takeAll(bucket, 1_000)).toBe(200);
    timers.advance(10);
    expect(bucket.take()).toBe(false);
    timers.advance(10); // 20 ms at 50/s: one token
    expect(bucket.take()).toBe(true);
    expect(bucket.take()).toBe(false);
    timers.advance(1_000);
    expect(takeAll(bucket, 1_000)).toBe(50);
  });

  it('saves up no more than burst', () => {
    const timers = new ManualTimers();
    const bucket = new TokenBucket({ burst: 3, perSecond: 1 }, timers);
    timers.advance(3_600_000);
    expect(takeAll(bucket, 10)).toBe(3);
  });

  it('refuses a bucket that could never let a message through', () => {
    const timers = new ManualTimers();
    expect(() => new TokenBucket({ burst: 0, perSecond: 1 }, timers)).toThrow(RangeError);
    expect(() => new TokenBucket({ burst: 1, perSecond: 0 }, timers)).toThrow(RangeError);
    expect(() => new TokenBucket({ burst: Number.NaN, perSecond: 1 }, timers)).toThrow(RangeError);
  });
});
