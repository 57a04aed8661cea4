import { describe, expect, it } from 'vitest';
import { SESSION_STATUSES, SESSION_TRANSITIONS, canMoveSession, holdsSlot, type SessionStatus } from './session-status';

/** Allowed moves, written out independently of the table (from → to). */
const ALLOWED = new Set<string>([
  'Enqueued→Starting',
  'Enqueued→Terminated',
  'Starting→Running',
  'Starting→Terminating',
  'Starting→Terminated',
  'Running→Terminating',
  'Running→Terminated',
  'Terminating→Terminated',
]);

describe('SESSION_TRANSITIONS', () => {
  it('lists the spec statuses in order, each with an entry in the table', () => {
    expect(SESSION_STATUSES).toEqual(['Enqueued', 'Starting', 'Running', 'Terminating', 'Terminated']);
    expect(Object.keys(SESSION_TRANSITIONS).sort()).toEqual([...SESSION_STATUSES].sort());
    for (const from of SESSION_STATUSES) {
      for (const to of SESSION_TRANSITIONS[from]) expect(SESSION_STATUSES).toContain(to);
    }
  });

  for (const from of SESSION_STATUSES) {
    for (const to of SESSION_STATUSES) {
      const allowed = ALLOWED.has(`${from}→${to}`);
      it(`${from} → ${to} is ${allowed ? 'allowed' : 'refused'}`, () => {
        expect(canMoveSession(from, to)).toBe(allowed);
        expect(SESSION_TRANSITIONS[from].includes(to)).toBe(allowed);
      });
    }
  }

  it('allows the normal order Enqueued → Starting → Running → Terminated, and via Terminating', () => {
    const walk = (path: SessionStatus[]) => path.every((s, i) => i === 0 || canMoveSession(path[i - 1]!, s));
    expect(walk(['Enqueued', 'Starting', 'Running', 'Terminated'])).toBe(true);
    expect(walk(['Enqueued', 'Starting', 'Running', 'Terminating', 'Terminated'])).toBe(true);
  });

  it('never moves backwards in the status order', () => {
    for (const from of SESSION_STATUSES) {
      for (const to of SESSION_TRANSITIONS[from]) {
        expect(SESSION_STATUSES.indexOf(to)).toBeGreaterThan(SESSION_STATUSES.indexOf(from));
      }
    }
  });

  it('makes Terminated terminal', () => {
    expect(SESSION_TRANSITIONS.Terminated).toEqual([]);
    for (const to of SESSION_STATUSES) expect(canMoveSession('Terminated', to)).toBe(false);
  });

  it('refuses staying in the same status', () => {
    for (const s of SESSION_STATUSES) expect(canMoveSession(s, s)).toBe(false);
  });
});

describe('holdsSlot', () => {
  it('is true exactly for Starting, Running and Terminating', () => {
    const expected: Record<SessionStatus, boolean> = {
      Enqueued: false,
      Starting: true,
      Running: true,
      Terminating: true,
      Terminated: false,
    };
    for (const s of SESSION_STATUSES) expect(holdsSlot(s), s).toBe(expected[s]);
  });
});
