// The bench's queue oracle on cases whose answer is known by hand.
import { describe, expect, it } from 'vitest';
import { errorsOn, oracleWait, shareWithin, type LineNow, type OracleWorld } from './queue-oracle';

const fixed = (lifetimeMs: number, startupMs: number, endMs = 0): OracleWorld => ({ startupMs, lifetimeMinMs: lifetimeMs, lifetimeMaxMs: lifetimeMs, endMs });
const oneSlot = (holder: LineNow['holders'][number], position: number): LineNow => ({ slots: 1, holders: [holder], viewer: { state: 'queued', position } });

describe('oracleWait', () => {
  it('one slot and a fixed lifetime: the exact wait, every draw alike', () => {
    const world = fixed(10_000, 1_000);
    const first = oracleWait(oneSlot({ state: 'running', sinceRunningMs: 3_000 }, 1), world);
    expect(first.estimateMs).toBe(8_000);
    expect(first.withinShare).toBe(1);
    expect(first.bestWithinShare).toBe(1);
    // The viewer ahead starts (1 s) and stays 10 s before this one's turn.
    expect(oracleWait(oneSlot({ state: 'running', sinceRunningMs: 3_000 }, 2), world).estimateMs).toBe(19_000);
  });

  it('a holder still starting frees its slot after the rest of its start-up, its stay and its end', () => {
    const wait = oracleWait(oneSlot({ state: 'starting', sincePlacedMs: 400 }, 1), fixed(5_000, 1_000, 100));
    expect(wait.estimateMs).toBe(600 + 5_000 + 100 + 1_000);
  });

  it('a free slot, an ending holder or a viewer already placed: only the start-up is left', () => {
    const world = fixed(10_000, 1_000);
    expect(oracleWait({ slots: 2, holders: [{ state: 'running', sinceRunningMs: 0 }], viewer: { state: 'queued', position: 1 } }, world).estimateMs).toBe(1_000);
    expect(oracleWait(oneSlot({ state: 'freeing' }, 1), world).estimateMs).toBe(1_000);
    expect(oracleWait({ slots: 1, holders: [{ state: 'starting', sincePlacedMs: 300 }], viewer: { state: 'placed', sincePlacedMs: 300 } }, world).estimateMs).toBe(700);
  });

  it('a uniform lifetime, one slot, position 1: the median of the stay left given its age', () => {
    // Stays uniform in [4, 8] s, Running for 5 s: what is left is uniform in [0, 3] s, median 1.5 s.
    const world: OracleWorld = { startupMs: 1_000, lifetimeMinMs: 4_000, lifetimeMaxMs: 8_000 };
    const wait = oracleWait(oneSlot({ state: 'running', sinceRunningMs: 5_000 }, 1), world, { draws: 20_000 });
    expect(wait.estimateMs).toBeGreaterThan(2_450);
    expect(wait.estimateMs).toBeLessThan(2_550);
    // Waits uniform in [1, 4] s: those within ±30 % of 2.5 s are [2.5 / 1.3, 2.5 / 0.7] ∩ [1, 4] = [1.92, 3.57] s, 55 %.
    expect(wait.withinShare).toBeGreaterThan(0.53);
    expect(wait.withinShare).toBeLessThan(0.57);
    expect(wait.bestWithinShare).toBeGreaterThanOrEqual(wait.withinShare);
    // Another estimate judged on the same draws: 3 s takes the waits in [3 / 1.3, 3 / 0.7] ∩ [1, 4] = [2.31, 4] s, 56 %.
    const other = shareWithin(errorsOn(wait.waits, 3_000));
    expect(other).toBeGreaterThan(0.54);
    expect(other).toBeLessThan(0.58);
    // Younger than the shortest stay: what is left is uniform in [4 − 1, 8 − 1] s, median 5 s.
    const young = oracleWait(oneSlot({ state: 'running', sinceRunningMs: 1_000 }, 1), { ...world, startupMs: 0 }, { draws: 20_000 });
    expect(young.estimateMs).toBeGreaterThan(4_900);
    expect(young.estimateMs).toBeLessThan(5_100);
  });

  it('a stay past the longest lifetime frees at once', () => {
    const world: OracleWorld = { startupMs: 1_000, lifetimeMinMs: 4_000, lifetimeMaxMs: 8_000 };
    expect(oracleWait(oneSlot({ state: 'running', sinceRunningMs: 9_000 }, 1), world).estimateMs).toBe(1_000);
  });
});
