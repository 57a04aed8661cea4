// parseRange: what a Range header asks of a resource of a given size (the route's HTTP behaviour
// is tested on the real control plane in test/integration/agent-archive.test.ts).
import { describe, expect, it } from 'vitest';
import { parseRange } from './agent-archive-routes';

describe('parseRange', () => {
  it.each([
    [undefined, 100, { kind: 'whole' }],
    ['bytes=0-0', 100, { kind: 'range', start: 0, end: 0 }],
    ['bytes=10-', 100, { kind: 'range', start: 10, end: 99 }],
    ['bytes=-30', 100, { kind: 'range', start: 70, end: 99 }],
    ['bytes=-300', 100, { kind: 'range', start: 0, end: 99 }],
    ['BYTES=5-500', 100, { kind: 'range', start: 5, end: 99 }],
    ['bytes=100-', 100, { kind: 'unsatisfiable' }],
    ['bytes=0-', 0, { kind: 'unsatisfiable' }],
    ['bytes=-5', 0, { kind: 'unsatisfiable' }],
    ['bytes=-', 100, { kind: 'unsatisfiable' }],
    ['bytes=99999999999999999999-', 100, { kind: 'unsatisfiable' }],
    ['bytes= 1-2', 100, { kind: 'unsatisfiable' }],
  ] as const)('%s of %i bytes', (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });
});
