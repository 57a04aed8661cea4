import { describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import type { SessionRecord } from '../repositories/sessions';
import type { SessionEvents } from './session-events';
import { QUEUE_WAIT_MIN_SAMPLES, QUEUE_WAIT_SAMPLE_MAX_AGE_MS, QUEUE_WAIT_SAMPLES, QueueWaitEstimator, type BusySlot } from './queue-wait';

const MIN = 60_000;
const busy = (slots: number) => ({ slots, freeSlots: 0 });

describe('QueueWaitEstimator', () => {
  it('says nothing until the region has enough recent sessions, or when no slot serves it', () => {
    const q = new QueueWaitEstimator(new ManualClock());
    for (let i = 1; i < QUEUE_WAIT_MIN_SAMPLES; i++) q.recordLifetime('europe', 10 * MIN);
    expect(q.forRegion('europe', busy(4))(1)).toBeUndefined();
    q.recordLifetime('europe', 10 * MIN);
    expect(q.forRegion('europe', busy(4))(1)).toBeDefined();
    expect(q.forRegion('europe', busy(0))(1)).toBeUndefined();
    expect(q.forRegion('asia-pacific', busy(4))(1)).toBeUndefined();
  });

  it('waits p departures of S busy slots at the mean lifetime, then the median start-up', () => {
    const q = new QueueWaitEstimator(new ManualClock());
    for (const minutes of [8, 10, 12]) q.recordLifetime('europe', minutes * MIN);
    for (const seconds of [9, 10, 30]) q.recordStartup('europe', seconds * 1000);
    // 4 slots, sessions of 10 min on average: one leaves every 2.5 min; position 3 waits 7.5 min, then a 10 s start.
    expect(q.forRegion('europe', busy(4))(3)).toBe(7.5 * 60 + 10);
    expect(q.forRegion('europe', busy(4))(1)).toBe(2.5 * 60 + 10);
    // Free slots take the first viewers at once: only the start-up is left for them.
    expect(q.forRegion('europe', { slots: 4, freeSlots: 2 })(2)).toBe(10);
    expect(q.forRegion('europe', { slots: 4, freeSlots: 2 })(3)).toBe(2.5 * 60 + 10);
  });

  it("with the busy slots' ages, waits for the p-th slot to free: the sessions nearest their end first, then a mean lifetime per round", () => {
    const clock = new ManualClock();
    const placedAt: number[] = [];
    const q = new QueueWaitEstimator(clock, () => placedAt.map((at) => ({ placedAt: at })));
    for (const minutes of [10, 10, 10]) q.recordLifetime('europe', minutes * MIN);
    // Two busy slots: one placed 9 min ago (1 min left), one 2 min ago (8 min left).
    placedAt.push(clock.now() - 9 * MIN, clock.now() - 2 * MIN);
    const at = q.forRegion('europe', busy(2));
    expect(at(1)).toBe(60);
    expect(at(2)).toBe(8 * 60);
    // The next round: each freed slot's next session holds it a mean lifetime.
    expect(at(3)).toBe(60 + 10 * 60);
    // A session older than every recent lifetime is due now.
    placedAt.splice(0, 2, clock.now() - 30 * MIN);
    expect(q.forRegion('europe', busy(1))(1)).toBe(0);
  });

  it('keeps the most recent samples of the last hour only', () => {
    const clock = new ManualClock();
    const q = new QueueWaitEstimator(clock);
    for (let i = 0; i < QUEUE_WAIT_SAMPLES; i++) q.recordLifetime('europe', 60 * MIN);
    for (let i = 0; i < QUEUE_WAIT_SAMPLES; i++) q.recordLifetime('europe', 4 * MIN);
    expect(q.forRegion('europe', busy(1))(1)).toBe(4 * 60);
    clock.advance(QUEUE_WAIT_SAMPLE_MAX_AGE_MS + 1);
    expect(q.forRegion('europe', busy(1))(1)).toBeUndefined();
  });

  it('learns from the sessions it follows: start-up at Running, lifetime at the end, only once placed', () => {
    const clock = new ManualClock();
    const q = new QueueWaitEstimator(clock);
    const listeners = new Map<string, ((...args: unknown[]) => void)[]>();
    q.follow({
      on: <K extends keyof SessionEvents>(event: K, listener: (...args: SessionEvents[K]) => void) => {
        listeners.set(event, [...(listeners.get(event) ?? []), listener as (...args: unknown[]) => void]);
        return () => undefined;
      },
    });
    const emit = (event: keyof SessionEvents, ...args: unknown[]) => listeners.get(event)?.forEach((l) => l(...args));
    const session = (placedAt: number | undefined) => ({ sessionId: 's', projectId: 'p', region: 'europe', status: 'Running', createdAt: 0, updatedAt: 0, ...(placedAt === undefined ? {} : { placedAt }) }) as SessionRecord;
    for (let i = 0; i < 3; i++) {
      const placedAt = clock.now();
      clock.advance(12_000);
      emit('running', session(placedAt));
      clock.advance(6 * MIN - 12_000);
      emit('ended', session(placedAt));
    }
    // A viewer who left the line was never placed: not a lifetime.
    emit('ended', session(undefined));
    expect(q.forRegion('europe', busy(2))(2)).toBe(6 * 60 + 12);
  });

  it("counts a claimed session on a launch's scale, and neither an unclaimed instance's end nor a claim's start-up", () => {
    const clock = new ManualClock();
    const slots: BusySlot[] = [];
    const q = new QueueWaitEstimator(clock, () => slots);
    const listeners = new Map<string, ((...args: unknown[]) => void)[]>();
    q.follow({
      on: <K extends keyof SessionEvents>(event: K, listener: (...args: SessionEvents[K]) => void) => {
        listeners.set(event, [...(listeners.get(event) ?? []), listener as (...args: unknown[]) => void]);
        return () => undefined;
      },
    });
    const emit = (event: keyof SessionEvents, s: Partial<SessionRecord>) =>
      listeners.get(event)?.forEach((l) => l({ sessionId: 's', projectId: 'p', region: 'europe', status: 'Running', createdAt: 0, updatedAt: 0, ...s }));
    // Three launched sessions: 20 s to start, 5 min in all.
    for (let i = 0; i < 3; i++) {
      const placedAt = clock.now();
      clock.advance(20_000);
      emit('running', { placedAt });
      clock.advance(5 * MIN - 20_000);
      emit('ended', { placedAt });
    }
    // A viewer served warm: placed at its claim, Running at once, gone 4 min 40 s later (5 min on a launch's scale).
    const claimedAt = clock.now();
    emit('running', { placedAt: claimedAt, claimedAt });
    clock.advance(5 * MIN - 20_000);
    emit('ended', { placedAt: claimedAt, claimedAt });
    // Three more viewers served warm, still watching: their 0 s start-ups would make the median 0.
    for (let i = 0; i < 3; i++) emit('running', { placedAt: clock.now(), claimedAt: clock.now() });
    // An instance nobody claimed, recycled after an hour: no viewer's lifetime.
    emit('ended', { placedAt: clock.now() - 60 * MIN, pooled: true, status: 'Terminated' });
    // The start-up stays 20 s (the claim's 0 s is not a launch) and the lifetimes all 5 min.
    expect(q.forRegion('europe', busy(4))(4)).toBe(5 * 60 + 20);
    // A slot claimed 2 min ago frees as a launched session 2 min 20 s old would (2 min 40 s on);
    // an unclaimed instance is stopped for the line at once.
    slots.push({ placedAt: clock.now() - 2 * MIN, claimed: true }, { placedAt: clock.now() - 1 * MIN, pooled: true });
    const at = q.forRegion('europe', busy(2));
    expect(at(1)).toBe(20);
    expect(at(2)).toBe(2 * 60 + 40 + 20);
  });
});
