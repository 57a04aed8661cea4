import { describe, expect, it } from 'vitest';
import { SessionQueues } from './session-queue';

describe('SessionQueues', () => {
  it('keeps each project in first-come order and reports positions from 1', () => {
    const q = new SessionQueues();
    expect(q.enqueue('p', 's1')).toBe(1);
    expect(q.enqueue('p', 's2')).toBe(2);
    expect(q.enqueue('other', 'x1')).toBe(1);
    expect(q.enqueue('p', 's3')).toBe(3);
    expect(q.head('p')).toBe('s1');
    expect(q.waiting('p')).toEqual(['s1', 's2', 's3']);
    expect(q.length('other')).toBe(1);
  });

  it('moves everyone behind up when someone leaves or is placed', () => {
    const q = new SessionQueues();
    for (const s of ['s1', 's2', 's3', 's4']) q.enqueue('p', s);
    expect(q.remove('p', 's2')).toBe(true);
    expect([q.position('p', 's1'), q.position('p', 's3'), q.position('p', 's4')]).toEqual([1, 2, 3]);
    expect(q.remove('p', 's1')).toBe(true);
    expect(q.head('p')).toBe('s3');
    expect(q.position('p', 's2')).toBeUndefined();
    expect(q.remove('p', 's2')).toBe(false);
  });

  it('enqueueing twice keeps one place; an emptied project is no longer waiting', () => {
    const q = new SessionQueues();
    q.enqueue('p', 's1');
    expect(q.enqueue('p', 's1')).toBe(1);
    expect(q.projectsWaiting()).toEqual(['p']);
    q.remove('p', 's1');
    expect(q.projectsWaiting()).toEqual([]);
    expect(q.head('p')).toBeUndefined();
  });
});
