import { describe, expect, it } from 'vitest';
import { VIEW_TRANSITIONS, canTransition, type ViewStateKind } from './view-state';

const KINDS: readonly ViewStateKind[] = ['opening', 'queued', 'starting', 'connecting', 'streaming', 'ended'];

// The viewer's path: opening → queued (moving) → starting → connecting → streaming → ended, and any
// state before the end may end. Written out pair by pair so a change to the table shows up here.
const ALLOWED: readonly (readonly [ViewStateKind, ViewStateKind])[] = [
  ['opening', 'queued'],
  ['opening', 'starting'],
  ['opening', 'connecting'],
  ['opening', 'streaming'],
  ['opening', 'ended'],
  ['queued', 'queued'],
  ['queued', 'starting'],
  ['queued', 'connecting'],
  ['queued', 'streaming'],
  ['queued', 'ended'],
  ['starting', 'queued'],
  ['starting', 'connecting'],
  ['starting', 'streaming'],
  ['starting', 'ended'],
  ['connecting', 'streaming'],
  ['connecting', 'ended'],
  ['streaming', 'ended'],
];

describe('view state table', () => {
  it.each(KINDS.flatMap((from) => KINDS.map((to) => [from, to] as const)))('%s → %s', (from, to) => {
    const expected = ALLOWED.some(([a, b]) => a === from && b === to);
    expect(canTransition(from, to)).toBe(expected);
  });

  it('has a row for every state and ends in a terminal state', () => {
    expect(Object.keys(VIEW_TRANSITIONS).sort()).toEqual([...KINDS].sort());
    expect(VIEW_TRANSITIONS.ended).toEqual([]);
  });
});
