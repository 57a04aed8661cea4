import { describe, expect, it } from 'vitest';
import { WORKER_LINK_TABLE, nextWorkerLink, workerStatus, type WorkerLink, type WorkerLinkEvent } from './worker-link';

const STATES: readonly WorkerLink[] = ['connected', 'disconnected', 'unreachable'];
const EVENTS: readonly WorkerLinkEvent[] = ['hello', 'heartbeat', 'streamClosed', 'leaseExpired'];

/** The intended design, written out independently of the table: next state, or 'ignored'. */
const EXPECTED: Record<WorkerLink, Record<WorkerLinkEvent, WorkerLink | 'ignored'>> = {
  connected: { hello: 'connected', heartbeat: 'connected', streamClosed: 'disconnected', leaseExpired: 'unreachable' },
  disconnected: { hello: 'connected', heartbeat: 'ignored', streamClosed: 'ignored', leaseExpired: 'unreachable' },
  unreachable: { hello: 'connected', heartbeat: 'connected', streamClosed: 'ignored', leaseExpired: 'ignored' },
};

const FIRES_FOR: Record<WorkerLink, string> = {
  connected: 'worker.connected',
  disconnected: 'worker.disconnected',
  unreachable: 'worker.unreachable',
};

describe('WORKER_LINK_TABLE', () => {
  it('has exactly the three link states, each keyed only by known events', () => {
    expect(Object.keys(WORKER_LINK_TABLE).sort()).toEqual([...STATES].sort());
    for (const state of STATES) {
      for (const event of Object.keys(WORKER_LINK_TABLE[state])) expect(EVENTS).toContain(event);
    }
  });

  for (const state of STATES) {
    for (const event of EVENTS) {
      const expected = EXPECTED[state][event];
      it(`${state} + ${event} → ${expected}`, () => {
        const t = nextWorkerLink(state, event);
        expect(t).toEqual(WORKER_LINK_TABLE[state][event]);
        if (expected === 'ignored') {
          expect(t).toBeUndefined();
        } else {
          expect(t?.next).toBe(expected);
          // The recorded fleet event names the state moved to.
          expect(t?.fires).toBe(FIRES_FOR[expected]);
        }
      });
    }
  }

  it('can reach every state from every state (hello reconnects from anywhere)', () => {
    for (const state of STATES) expect(nextWorkerLink(state, 'hello')?.next).toBe('connected');
    expect(nextWorkerLink('connected', 'streamClosed')?.next).toBe('disconnected');
    expect(nextWorkerLink('disconnected', 'leaseExpired')?.next).toBe('unreachable');
  });
});

describe('workerStatus', () => {
  it('shows draining over every link state', () => {
    for (const state of STATES) expect(workerStatus(state, true)).toBe('draining');
  });

  it('shows the link state when not draining', () => {
    for (const state of STATES) expect(workerStatus(state, false)).toBe(state);
  });
});
