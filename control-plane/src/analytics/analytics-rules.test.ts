// The spec's reading rules as the session list applies them, and the breakdown's rounding: every
// share two decimals, the shares adding up to 100 exactly (in hundredths).
import { describe, expect, it } from 'vitest';
import { percentagesOf } from './breakdown-percentages';
import { diagnose } from './session-diagnosis';
import type { DiagnosisFacts } from '../repositories/telemetry-diagnosis';

const facts = (f: Partial<DiagnosisFacts>): DiagnosisFacts => ({ hasRows: true, rowsEverAccepted: 1, videoShown: false, sdpAnswer: false, connected: false, oldestStatistics: undefined, newestStatistics: undefined, ...f });

describe('diagnose', () => {
  it('applies the reading rules in order', () => {
    expect(diagnose(facts({ hasRows: false, rowsEverAccepted: 0 }))).toBe('neverReported');
    // The rows were there and retention deleted them: not "never reported".
    expect(diagnose(facts({ hasRows: false, rowsEverAccepted: 116 }))).toBe('telemetryExpired');
    expect(diagnose(facts({ sdpAnswer: true }))).toBe('mediaNeverConnected');
    expect(diagnose(facts({ sdpAnswer: true, connected: true }))).toBe('connectedWithoutVideo');
    expect(diagnose(facts({ sdpAnswer: true, connected: true, oldestStatistics: { framesDecoded: 0, fps: 0 }, newestStatistics: { framesDecoded: 0, fps: 0 } }))).toBe('connectedWithoutVideo');
    expect(diagnose(facts({ connected: true, oldestStatistics: { framesDecoded: 0, fps: 0 }, newestStatistics: { framesDecoded: 900, fps: 0 } }))).toBe('videoDelivered');
    expect(diagnose(facts({ oldestStatistics: { framesDecoded: 60, fps: 60 }, newestStatistics: { framesDecoded: 60, fps: 60 } }))).toBe('videoDelivered');
    // Frames counted once and never again, with FPS 0: not delivered (not rising).
    expect(diagnose(facts({ connected: true, oldestStatistics: { framesDecoded: 5, fps: 0 }, newestStatistics: { framesDecoded: 5, fps: 0 } }))).toBe('connectedWithoutVideo');
    // Only statistics, never above 0: events or not, no video.
    expect(diagnose(facts({ oldestStatistics: { framesDecoded: 0, fps: 0 }, newestStatistics: { framesDecoded: 0, fps: 0 } }))).toBe('connectedWithoutVideo');
  });

  it("takes the relay's witness of video shown where the player's statistics say nothing, never against them", () => {
    const shown = { videoShown: true };
    // A viewer who left before its player reported: nothing at all, or events only.
    expect(diagnose(facts({ ...shown, hasRows: false, rowsEverAccepted: 0 }))).toBe('videoDelivered');
    expect(diagnose(facts({ ...shown, sdpAnswer: true, connected: true }))).toBe('videoDelivered');
    expect(diagnose(facts({ ...shown, sdpAnswer: true }))).toBe('videoDelivered');
    // Statistics that show no frame decoded outrank it: the packets arrived, the picture did not.
    expect(diagnose(facts({ ...shown, connected: true, oldestStatistics: { framesDecoded: 0, fps: 0 }, newestStatistics: { framesDecoded: 0, fps: 0 } }))).toBe('connectedWithoutVideo');
  });
});

describe('percentagesOf', () => {
  const sum = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) * 100);

  it('rounds to two decimals by largest remainder so the shares add up to 100', () => {
    expect(percentagesOf([1, 1, 1], 3)).toEqual([33.34, 33.33, 33.33]);
    expect(percentagesOf([2, 1], 3)).toEqual([66.67, 33.33]);
    expect(percentagesOf([5], 5)).toEqual([100]);
    expect(percentagesOf([], 0)).toEqual([]);
    expect(percentagesOf([0, 0], 0)).toEqual([0, 0]);
    for (const counts of [[1, 1, 1, 1, 1, 1, 1], [999_999, 1], [7, 7, 7, 3, 1], Array.from({ length: 300 }, (_, i) => (i * 7919) % 97 + 1)]) {
      const total = counts.reduce((a, b) => a + b, 0);
      const shares = percentagesOf(counts, total);
      expect(sum(shares), String(counts)).toBe(10_000);
      for (const [i, share] of shares.entries()) {
        expect(Math.abs(share - ((counts[i] ?? 0) * 100) / total)).toBeLessThan(0.01);
        expect(Math.round(share * 100)).toBeCloseTo(share * 100, 6);
      }
    }
  });
});
