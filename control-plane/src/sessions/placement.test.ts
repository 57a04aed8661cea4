import { describe, expect, it } from 'vitest';
import { choosePlacement, type PlacementCandidate } from './placement';

const w = (workerId: string, slots: number, usedSlots: number, enrolledAt = 0): PlacementCandidate => ({ workerId, slots, usedSlots, enrolledAt });

describe('choosePlacement', () => {
  it('finds nothing when there are no workers or no free slots', () => {
    expect(choosePlacement([])).toBeUndefined();
    expect(choosePlacement([w('a', 1, 1), w('b', 2, 2)])).toBeUndefined();
  });

  it('never places on a worker past its slots (even when the count is already over)', () => {
    expect(choosePlacement([w('a', 1, 3), w('b', 1, 0)])).toBe('b');
  });

  it('prefers the worker with the most free slots, spreading load', () => {
    expect(choosePlacement([w('a', 4, 3), w('b', 2, 0), w('c', 4, 1)])).toBe('c');
  });

  it('breaks ties by enrolment order, then id', () => {
    expect(choosePlacement([w('b', 2, 1, 200), w('a', 2, 1, 100)])).toBe('a');
    expect(choosePlacement([w('b', 1, 0, 100), w('a', 1, 0, 100)])).toBe('a');
  });
});
