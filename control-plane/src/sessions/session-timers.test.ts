import { describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/signaling';
import { SessionTimers, WORKER_LOST_GRACE_MS } from './session-timers';

function timers(): { clock: ManualClock; t: SessionTimers; expired: string[] } {
  const clock = new ManualClock(0);
  const expired: string[] = [];
  const t = new SessionTimers(clock, {
    sessionExpired: (sessionId, cause) => expired.push(`${sessionId} ${cause}`),
    workerLost: (workerId) => expired.push(`${workerId} lost`),
  });
  return { clock, t, expired };
}

describe('SessionTimers', () => {
  it('ends a Running session at its maximum run time, and not before', () => {
    const { clock, t, expired } = timers();
    t.startRunning('s1', 2);
    clock.advance(2 * 60_000 - 1);
    expect(expired).toEqual([]);
    clock.advance(1);
    expect(expired).toEqual(['s1 maxRunTime']);
  });

  it('measures idle time from the latest new input the worker reports', () => {
    const { clock, t, expired } = timers();
    t.setAfkTimeout('s1', 10);
    t.startRunning('s1', 0);
    clock.advance(6_000);
    expect(t.isNewInput('s1', 111)).toBe(true);
    t.inputReported('s1', 111);
    expect(t.isNewInput('s1', 111)).toBe(false);
    clock.advance(6_000); // 12 s after start, 6 s after the input
    t.inputReported('s1', 111); // the same value again: no new input
    expect(expired).toEqual([]);
    clock.advance(4_000);
    expect(expired).toEqual(['s1 afkTimeout']);
  });

  it('a project without an AFK timeout watches no input', () => {
    const { clock, t, expired } = timers();
    t.setAfkTimeout('s1', 0);
    t.startRunning('s1', 0);
    expect(t.isNewInput('s1', 1)).toBe(false);
    clock.advance(24 * 3_600_000);
    expect(expired).toEqual([]);
  });

  it("clear() stops a session's timers", () => {
    const { clock, t, expired } = timers();
    t.setAfkTimeout('s1', 10);
    t.startRunning('s1', 1);
    t.clear('s1');
    clock.advance(3_600_000);
    expect(expired).toEqual([]);
  });

  it("an unreachable worker's sessions are lost after the grace unless it connects again", () => {
    const { clock, t, expired } = timers();
    t.workerUnreachable('w1');
    t.workerUnreachable('w2');
    clock.advance(WORKER_LOST_GRACE_MS - 1);
    t.workerConnected('w2');
    t.workerUnreachable('w1'); // already counting: the grace does not restart
    clock.advance(1);
    expect(expired).toEqual(['w1 lost']);
    clock.advance(WORKER_LOST_GRACE_MS);
    expect(expired).toEqual(['w1 lost']);
  });

  it('close() stops every timer', () => {
    const { clock, t, expired } = timers();
    t.startRunning('s1', 1);
    t.workerUnreachable('w1');
    t.close();
    clock.advance(WORKER_LOST_GRACE_MS * 2);
    expect(expired).toEqual([]);
  });
});
