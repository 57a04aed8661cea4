import { describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { SessionTimers, WORKER_LOST_GRACE_MS, latestEndMs } from './session-timers';

function timers(): { clock: ManualClock; t: SessionTimers; expired: string[] } {
  const clock = new ManualClock(0);
  const expired: string[] = [];
  const t = new SessionTimers(clock, {
    sessionExpired: (sessionId, cause) => expired.push(`${sessionId} ${cause}`),
    stopUnconfirmed: (sessionId) => expired.push(`${sessionId} stop unconfirmed`),
    workerLost: (workerId) => expired.push(`${workerId} lost`),
  });
  return { clock, t, expired };
}

describe('SessionTimers', () => {
  it('ends a session at its maximum run time counted from its placement, and not before', () => {
    const { clock, t, expired } = timers();
    t.placed('s1', 2, 0);
    clock.advance(30_000); // the app starts and the viewer connects: the run time is already counting
    t.startRunning('s1');
    clock.advance(2 * 60_000 - 30_000 - 1);
    expect(expired).toEqual([]);
    clock.advance(1);
    expect(expired).toEqual(['s1 maxRunTime']);
  });

  it("latestEndMs is the instant the run timer ends the session (what caps its TURN credential); none without a cap or a placement", () => {
    const { clock, t, expired } = timers();
    clock.advance(5_000);
    const placedAt = clock.now();
    t.placed('s1', 3, 0);
    const end = latestEndMs({ placedAt, maxRunTime: 3 });
    expect(end).toBe(placedAt + 3 * 60_000);
    clock.advance(end! - clock.now() - 1);
    expect(expired).toEqual([]);
    clock.advance(1);
    expect(expired).toEqual(['s1 maxRunTime']);
    expect(latestEndMs({ placedAt, maxRunTime: 0 })).toBeUndefined();
    expect(latestEndMs({ placedAt, maxRunTime: undefined })).toBeUndefined();
    expect(latestEndMs({ maxRunTime: 3 })).toBeUndefined();
  });

  it('ends a placed session whose viewer never connects at the connect timeout; a connection in time stops it', () => {
    const { clock, t, expired } = timers();
    t.placed('s1', 0, 120_000);
    t.placed('s2', 0, 120_000);
    t.placed('s3', 0, 0); // 0: no connect timeout
    clock.advance(119_999);
    t.startRunning('s2');
    clock.advance(1);
    expect(expired).toEqual(['s1 connectTimeout']);
    clock.advance(24 * 3_600_000);
    expect(expired).toEqual(['s1 connectTimeout']);
  });

  it('ends a session whose media legs stay down past the grace; renegotiating within it keeps the session', () => {
    const { clock, t, expired } = timers();
    t.viewerDisconnected('s1', 30_000);
    t.viewerDisconnected('s2', 30_000);
    clock.advance(20_000);
    t.viewerDisconnected('s1', 30_000); // a repeated report does not restart the grace
    t.viewerReconnected('s2');
    clock.advance(10_000);
    expect(expired).toEqual(['s1 streamLost']);
    t.viewerDisconnected('s2', 30_000); // a later drop gets a grace of its own
    clock.advance(30_000);
    expect(expired).toEqual(['s1 streamLost', 's2 streamLost']);
  });

  it('a stop the worker does not confirm frees the session at its deadline, unless the session ends first', () => {
    const { clock, t, expired } = timers();
    t.stopping('s1', 40_000);
    t.stopping('s2', 40_000);
    clock.advance(39_999);
    t.clear('s2');
    clock.advance(1);
    expect(expired).toEqual(['s1 stop unconfirmed']);
  });

  it('measures idle time from the latest new input the worker reports', () => {
    const { clock, t, expired } = timers();
    t.setAfkTimeout('s1', 10);
    t.startRunning('s1');
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
    t.startRunning('s1');
    expect(t.isNewInput('s1', 1)).toBe(false);
    clock.advance(24 * 3_600_000);
    expect(expired).toEqual([]);
  });

  it("clear() stops a session's timers", () => {
    const { clock, t, expired } = timers();
    t.setAfkTimeout('s1', 10);
    t.placed('s1', 1, 60_000);
    t.startRunning('s1');
    t.viewerDisconnected('s1', 30_000);
    t.stopping('s1', 40_000);
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

  it('a worker found unreachable at a restart gets what is left of its grace', () => {
    const { clock, t, expired } = timers();
    t.workerUnreachable('w1', 50_000);
    t.workerUnreachable('w2', -5_000); // its grace ran out while the control plane was down: lost at once
    clock.advance(0);
    expect(expired).toEqual(['w2 lost']);
    clock.advance(50_000);
    expect(expired).toEqual(['w2 lost', 'w1 lost']);
  });

  it('close() stops every timer', () => {
    const { clock, t, expired } = timers();
    t.placed('s1', 1, 60_000);
    t.viewerDisconnected('s2', 30_000);
    t.stopping('s3', 40_000);
    t.workerUnreachable('w1');
    t.close();
    clock.advance(WORKER_LOST_GRACE_MS * 2);
    expect(expired).toEqual([]);
  });
});
