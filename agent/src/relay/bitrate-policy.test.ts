import { describe, expect, it } from 'vitest';
import {
  BitratePolicy,
  lowestFreshEstimate,
  NEXT_TARGET_BY_PHASE,
  RELAY_LOSS_HOLD_MS,
  VIEWER_ESTIMATE_TTL_MS,
  VIEWER_LOSS_HOLD_MS,
  VIEWER_LOSS_THRESHOLD,
  viewerLegLosing,
  type BitratePeriod,
  type BitratePhase,
} from './bitrate-policy';

const settings = { startBps: 10_000_000, minBps: 1_000_000, maxBps: 20_000_000 };
const M = 1_000_000;
const period = (over: Partial<BitratePeriod> = {}): BitratePeriod => ({ nowMs: 0, forwardedBps: 0, viewerLost: false, lowestEstimateBps: undefined, ...over });

describe('NEXT_TARGET_BY_PHASE', () => {
  it.each<[BitratePhase, number, Partial<BitratePeriod>, number]>([
    // Clean: up by half of what was forwarded, never below start, never above max.
    ['viewer-clean', 10 * M, { forwardedBps: 9 * M }, 13.5 * M],
    ['viewer-clean', 10 * M, { forwardedBps: 2 * M }, 10 * M],
    ['viewer-clean', 4 * M, { forwardedBps: 2 * M }, 10 * M],
    ['viewer-clean', 18 * M, { forwardedBps: 17 * M }, 20 * M],
    // A low delay-based estimate on a clean leg is not followed.
    ['viewer-clean', 10 * M, { forwardedBps: 9 * M, lowestEstimateBps: 1 * M }, 13.5 * M],
    // Losing: down to 85 % of what was forwarded, or to the viewer's estimate when lower; not below min.
    ['viewer-losing', 20 * M, { forwardedBps: 10 * M, viewerLost: true }, 8.5 * M],
    ['viewer-losing', 20 * M, { forwardedBps: 10 * M, viewerLost: true, lowestEstimateBps: 6 * M }, 6 * M],
    ['viewer-losing', 20 * M, { forwardedBps: 10 * M, viewerLost: true, lowestEstimateBps: 12 * M }, 8.5 * M],
    ['viewer-losing', 5 * M, { forwardedBps: 10 * M, viewerLost: true }, 5 * M],
    ['viewer-losing', 2 * M, { forwardedBps: 0.5 * M, viewerLost: true }, 1 * M],
    // Recovering from the viewer's loss: hold.
    ['viewer-recovering', 6 * M, { forwardedBps: 6 * M }, 6 * M],
    // Recovering from the relay's own loss: at least start, whatever the viewer says.
    ['recovering-relay-loss', 2 * M, { forwardedBps: 1 * M, lowestEstimateBps: 0.9 * M }, 10 * M],
    ['recovering-relay-loss', 15 * M, { forwardedBps: 15 * M }, 15 * M],
  ])('%s from %d with %o → %d', (phase, target, over, expected) => {
    expect(NEXT_TARGET_BY_PHASE[phase](target, period(over), settings)).toBe(expected);
  });
});

describe('BitratePolicy', () => {
  it('starts at the start bitrate and climbs by half of what was forwarded while the viewer loses nothing', () => {
    const policy = new BitratePolicy(settings);
    expect(policy.targetBps).toBe(10 * M);
    expect(policy.step(period({ nowMs: 0 }))).toBe(10 * M);
    expect(policy.step(period({ nowMs: 1_000, forwardedBps: 9 * M }))).toBe(13.5 * M);
    expect(policy.step(period({ nowMs: 2_000, forwardedBps: 13 * M }))).toBe(19.5 * M);
    expect(policy.step(period({ nowMs: 3_000, forwardedBps: 16 * M }))).toBe(20 * M);
    expect(policy.phase).toBe('viewer-clean');
  });

  it('steps down while the viewer loses, holds for the hold time, then climbs again', () => {
    const policy = new BitratePolicy(settings);
    policy.step(period({ nowMs: 0, forwardedBps: 14 * M }));
    expect(policy.step(period({ nowMs: 1_000, forwardedBps: 14 * M, viewerLost: true }))).toBe(11.9 * M);
    expect(policy.phase).toBe('viewer-losing');
    expect(policy.step(period({ nowMs: 2_000, forwardedBps: 11 * M, viewerLost: true, lowestEstimateBps: 7 * M }))).toBe(7 * M);
    expect(policy.step(period({ nowMs: 3_000, forwardedBps: 7 * M }))).toBe(7 * M);
    expect(policy.phase).toBe('viewer-recovering');
    expect(policy.step(period({ nowMs: 2_000 + VIEWER_LOSS_HOLD_MS - 1, forwardedBps: 7 * M }))).toBe(7 * M);
    expect(policy.step(period({ nowMs: 2_000 + VIEWER_LOSS_HOLD_MS, forwardedBps: 7 * M }))).toBe(10.5 * M);
    expect(policy.phase).toBe('viewer-clean');
  });

  it("a loss the relay caused is never read as the viewer's congestion: at least start for its hold", () => {
    const policy = new BitratePolicy(settings);
    policy.relayLoss(1_000);
    expect(policy.step(period({ nowMs: 1_000, forwardedBps: 3 * M, viewerLost: true, lowestEstimateBps: 0.9 * M }))).toBe(10 * M);
    expect(policy.phase).toBe('recovering-relay-loss');
    expect(policy.step(period({ nowMs: 1_000 + RELAY_LOSS_HOLD_MS - 1, forwardedBps: 3 * M, viewerLost: true }))).toBe(10 * M);
    // After the hold, a loss is the viewer's again.
    expect(policy.step(period({ nowMs: 1_000 + RELAY_LOSS_HOLD_MS, forwardedBps: 8 * M, viewerLost: true }))).toBe(6.8 * M);
    expect(policy.phase).toBe('viewer-losing');
  });
});

describe('lowestFreshEstimate', () => {
  it(`is the lowest estimate of the last ${VIEWER_ESTIMATE_TTL_MS} ms`, () => {
    const estimates = [
      { bps: 4 * M, atMs: 0 },
      { bps: 8 * M, atMs: 0 },
    ];
    expect(lowestFreshEstimate(estimates, VIEWER_ESTIMATE_TTL_MS)).toBe(4 * M);
    expect(lowestFreshEstimate(estimates, VIEWER_ESTIMATE_TTL_MS + 1)).toBeUndefined();
    expect(lowestFreshEstimate([], 0)).toBeUndefined();
  });
});

describe('viewerLegLosing', () => {
  it(`is true past ${VIEWER_LOSS_THRESHOLD * 100} % of the packets forwarded in the period NACKed`, () => {
    expect(viewerLegLosing({ forwarded: 1_000, nacked: 5 }, { forwarded: 2_000, nacked: 25 })).toBe(false);
    expect(viewerLegLosing({ forwarded: 1_000, nacked: 5 }, { forwarded: 2_000, nacked: 26 })).toBe(true);
    expect(viewerLegLosing({ forwarded: 1_000, nacked: 5 }, { forwarded: 1_000, nacked: 9 })).toBe(false);
  });
});
