import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from './clock';

const START = Date.parse('2026-01-01T00:00:00Z');

describe('ManualClock', () => {
  it('starts at the given time (2026-01-01 by default) and moves only on advance', () => {
    expect(new ManualClock().now()).toBe(START);
    const clock = new ManualClock(1_000);
    expect(clock.now()).toBe(1_000);
    expect(clock.now()).toBe(1_000);
    clock.advance(250);
    expect(clock.now()).toBe(1_250);
    clock.advance(0);
    expect(clock.now()).toBe(1_250);
  });

  it('fires a timeout once, when it falls due, and not before', () => {
    const clock = new ManualClock(0);
    let fired = 0;
    clock.setTimeout(() => (fired += 1), 100);
    clock.advance(99);
    expect(fired).toBe(0);
    clock.advance(1);
    expect(fired).toBe(1);
    clock.advance(1_000);
    expect(fired).toBe(1);
  });

  it('fires due timers in due order (ties by creation order), with now() at each due time', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const at = (name: string) => () => fired.push(`${name}@${clock.now()}`);
    clock.setTimeout(at('c'), 300);
    clock.setTimeout(at('a'), 100);
    clock.setTimeout(at('b1'), 200);
    clock.setTimeout(at('b2'), 200);
    clock.setInterval(at('i'), 150);
    clock.advance(400);
    expect(fired).toEqual(['a@100', 'i@150', 'b1@200', 'b2@200', 'c@300', 'i@300']);
    expect(clock.now()).toBe(400);
  });

  it('fires an interval repeatedly until it is cancelled', () => {
    const clock = new ManualClock(0);
    const times: number[] = [];
    const handle = clock.setInterval(() => times.push(clock.now()), 10);
    clock.advance(35);
    expect(times).toEqual([10, 20, 30]);
    clock.advance(5);
    expect(times).toEqual([10, 20, 30, 40]);
    handle.cancel();
    clock.advance(100);
    expect(times).toEqual([10, 20, 30, 40]);
  });

  it('cancels a timeout before it fires', () => {
    const clock = new ManualClock(0);
    let fired = false;
    const handle = clock.setTimeout(() => (fired = true), 50);
    handle.cancel();
    clock.advance(100);
    expect(fired).toBe(false);
  });

  it('lets a timer cancel another timer that is due in the same advance', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const later = clock.setTimeout(() => fired.push('later'), 20);
    clock.setTimeout(() => {
      fired.push('first');
      later.cancel();
    }, 10);
    clock.advance(30);
    expect(fired).toEqual(['first']);
  });

  it('lets an interval cancel itself from inside its callback', () => {
    const clock = new ManualClock(0);
    let count = 0;
    const handle = clock.setInterval(() => {
      count += 1;
      if (count === 2) handle.cancel();
    }, 10);
    clock.advance(100);
    expect(count).toBe(2);
  });

  it('fires timers scheduled by a firing timer when they fall due within the same advance', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    clock.setTimeout(() => {
      fired.push(`outer@${clock.now()}`);
      clock.setTimeout(() => fired.push(`inner@${clock.now()}`), 15);
      clock.setTimeout(() => fired.push(`beyond@${clock.now()}`), 100);
    }, 10);
    clock.advance(50);
    expect(fired).toEqual(['outer@10', 'inner@25']);
    clock.advance(60);
    expect(fired).toEqual(['outer@10', 'inner@25', 'beyond@110']);
  });

  it('fires a zero or negative delay timeout on the next advance, even advance(0)', () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(clock.now()), 0);
    clock.setTimeout(() => fired.push(clock.now()), -5);
    expect(fired).toEqual([]);
    clock.advance(0);
    expect(fired).toEqual([0, 0]);
  });

  it('does not spin forever on a zero-interval timer', () => {
    const clock = new ManualClock(0);
    let count = 0;
    clock.setInterval(() => (count += 1), 0);
    clock.advance(5);
    // Interval 0 is treated as 1 ms: due at 0, 1, 2, 3, 4, 5.
    expect(count).toBe(6);
  });
});

describe('systemClock', () => {
  it('reads the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
