import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF, backoffDelayMs } from './backoff';

const ALMOST_ONE = 1 - Number.EPSILON;
const zero = () => 0;
const top = () => ALMOST_ONE;

describe('backoffDelayMs', () => {
  it('defaults to a 1 s first ceiling and a 30 s cap', () => {
    expect(DEFAULT_BACKOFF).toEqual({ initialMs: 1_000, maxMs: 30_000 });
    expect(backoffDelayMs(0, undefined, top)).toBe(999);
    expect(backoffDelayMs(10, undefined, top)).toBe(29_999);
  });

  it('is 0 when the random draw is 0, at every attempt (full jitter lower bound)', () => {
    for (let attempt = 0; attempt < 40; attempt++) expect(backoffDelayMs(attempt, DEFAULT_BACKOFF, zero)).toBe(0);
  });

  it('doubles the ceiling with each attempt until the cap', () => {
    const opts = { initialMs: 100, maxMs: 1_000 };
    const ceilings = Array.from({ length: 7 }, (_, attempt) => backoffDelayMs(attempt, opts, top) + 1);
    expect(ceilings).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000]);
  });

  it('stays below the cap for very large attempts (no overflow to Infinity or NaN)', () => {
    for (const attempt of [31, 100, 1_000, Number.MAX_SAFE_INTEGER]) {
      const d = backoffDelayMs(attempt, DEFAULT_BACKOFF, top);
      expect(d).toBe(29_999);
    }
  });

  it('scales the draw uniformly inside [0, ceiling)', () => {
    const opts = { initialMs: 1_000, maxMs: 30_000 };
    expect(backoffDelayMs(0, opts, () => 0.5)).toBe(500);
    expect(backoffDelayMs(2, opts, () => 0.25)).toBe(1_000);
    expect(backoffDelayMs(5, opts, () => 0.5)).toBe(15_000);
  });

  it('returns whole milliseconds within bounds for random draws', () => {
    let seed = 42;
    const lcg = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let attempt = 0; attempt < 20; attempt++) {
      const ceiling = Math.min(30_000, 1_000 * 2 ** attempt);
      for (let i = 0; i < 50; i++) {
        const d = backoffDelayMs(attempt, DEFAULT_BACKOFF, lcg);
        expect(Number.isInteger(d)).toBe(true);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThan(ceiling);
      }
    }
  });

  it('uses Math.random by default, within bounds', () => {
    for (let i = 0; i < 100; i++) {
      const d = backoffDelayMs(1);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(2_000);
    }
  });
});
