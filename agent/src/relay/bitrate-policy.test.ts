import { describe, expect, it } from 'vitest';
import {
  BITRATE_BY_PHASE,
  BitratePolicy,
  RELAY_LOSS_HOLD_MS,
  VIEWER_ESTIMATE_TTL_MS,
  VIEWER_LOSS_HOLD_MS,
  VIEWER_LOSS_THRESHOLD,
  viewerLegLosing,
  type BitratePhase,
} from './bitrate-policy';

const settings = { startBps: 10_000_000, minBps: 1_000_000, maxBps: 20_000_000 };

describe('BITRATE_BY_PHASE', () => {
  it.each<[BitratePhase, number | undefined, number]>([
    ['awaiting-estimate', undefined, 10_000_000],
    ['viewer-clean', 3_000_000, 20_000_000],
    ['viewer-losing', 3_000_000, 3_000_000],
    ['viewer-losing', 500_000, 1_000_000],
    ['viewer-losing', 90_000_000, 20_000_000],
    ['viewer-losing', undefined, 10_000_000],
    ['recovering-relay-loss', 900_000, 10_000_000],
    ['recovering-relay-loss', 15_000_000, 15_000_000],
    ['recovering-relay-loss', undefined, 10_000_000],
  ])('%s with the lowest estimate %s → %s', (phase, lowest, expected) => {
    expect(BITRATE_BY_PHASE[phase](lowest, settings)).toBe(expected);
  });
});

describe('BitratePolicy', () => {
  const low = (atMs: number) => [{ bps: 900_000, atMs }];

  it('holds the start bitrate until the viewer has said something, then lets the app run to max while the viewer loses nothing', () => {
    const policy = new BitratePolicy(settings);
    expect(policy.phase([], 0)).toBe('awaiting-estimate');
    expect(policy.targetBps([], 0)).toBe(10_000_000);
    // A low delay-based estimate with no loss behind it does not pin the app.
    expect(policy.phase(low(0), 10)).toBe('viewer-clean');
    expect(policy.targetBps(low(0), 10)).toBe(20_000_000);
    // Stale estimates count as none: back to the start bitrate, never to max or min.
    expect(policy.targetBps(low(0), VIEWER_ESTIMATE_TTL_MS + 1)).toBe(10_000_000);
  });

  it("follows the lowest fresh estimate while the viewer's leg loses packets, for the hold after its last loss", () => {
    const policy = new BitratePolicy(settings);
    const estimates = [
      { bps: 4_000_000, atMs: 1_000 },
      { bps: 8_000_000, atMs: 1_000 },
    ];
    policy.viewerLoss(1_000);
    expect(policy.phase(estimates, 1_000)).toBe('viewer-losing');
    expect(policy.targetBps(estimates, 1_000)).toBe(4_000_000);
    const later = [{ bps: 4_000_000, atMs: 1_000 + VIEWER_LOSS_HOLD_MS }];
    expect(policy.targetBps(later, 1_000 + VIEWER_LOSS_HOLD_MS - 1)).toBe(4_000_000);
    expect(policy.phase(later, 1_000 + VIEWER_LOSS_HOLD_MS)).toBe('viewer-clean');
  });

  it("a loss the relay caused floors the target at the start bitrate for its hold, over the viewer's own loss", () => {
    const policy = new BitratePolicy(settings);
    policy.viewerLoss(1_000);
    policy.relayLoss(1_000);
    expect(policy.phase(low(1_000), 1_000)).toBe('recovering-relay-loss');
    expect(policy.targetBps(low(1_000), 1_000 + RELAY_LOSS_HOLD_MS - 1)).toBe(10_000_000);
    expect(policy.phase(low(1_000 + RELAY_LOSS_HOLD_MS), 1_000 + RELAY_LOSS_HOLD_MS)).toBe('viewer-losing');
    expect(policy.targetBps(low(1_000 + RELAY_LOSS_HOLD_MS), 1_000 + RELAY_LOSS_HOLD_MS)).toBe(1_000_000);
  });
});

describe('viewerLegLosing', () => {
  it(`is true past ${VIEWER_LOSS_THRESHOLD * 100} % of the packets forwarded in the window NACKed`, () => {
    expect(viewerLegLosing({ forwarded: 1_000, nacked: 5 }, { forwarded: 2_000, nacked: 25 })).toBe(false);
    expect(viewerLegLosing({ forwarded: 1_000, nacked: 5 }, { forwarded: 2_000, nacked: 26 })).toBe(true);
    expect(viewerLegLosing({ forwarded: 1_000, nacked: 5 }, { forwarded: 1_000, nacked: 9 })).toBe(false);
  });
});
