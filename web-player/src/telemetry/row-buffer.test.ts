import { describe, expect, it } from 'vitest';
import { RowBuffer } from './row-buffer';

describe('RowBuffer', () => {
  it('drops the oldest rows beyond its capacity and counts them', () => {
    const buffer = new RowBuffer<number>(3);
    for (const n of [1, 2, 3, 4, 5]) buffer.push(n);
    expect(buffer.take(10)).toEqual([3, 4, 5]);
    expect(buffer.dropped).toBe(2);
  });

  it('puts requeued rows back in front, trimming the oldest', () => {
    const buffer = new RowBuffer<number>(3);
    buffer.push(3);
    buffer.push(4);
    buffer.requeue([1, 2]);
    expect(buffer.size).toBe(3);
    expect(buffer.take(2)).toEqual([2, 3]);
    expect(buffer.take(2)).toEqual([4]);
  });

  it('refuses a capacity below one', () => {
    expect(() => new RowBuffer(0)).toThrow(RangeError);
  });
});
