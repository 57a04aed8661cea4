// bench:queue's oracle: the best queue wait estimate any estimator could give a viewer of the
// bench's world, knowing the lifetime distribution the bench draws from, its start-up, and what the
// control plane knows at the viewer's queue message (slot holders' states and ages, its position).
import { seededRandom } from './bench-support';

/** The bench's world, as only the bench knows it. */
export interface OracleWorld {
  /** Placement → Running of a launched session (ms). */
  startupMs: number;
  /** A viewer stays uniform in [lifetimeMinMs, lifetimeMaxMs] once Running (ms). */
  lifetimeMinMs: number;
  lifetimeMaxMs: number;
  /** From the end of its stay until its slot is free again (ms, default 0). */
  endMs?: number;
}

/** A session holding a slot: its app still starting, Running for a while, or about to free its slot (ending, or an unclaimed warm instance a waiting viewer preempts). */
export type SlotHolder = { state: 'starting'; sincePlacedMs: number } | { state: 'running'; sinceRunningMs: number } | { state: 'freeing' };

/** The line as the control plane sees it when the viewer's queue message goes out. */
export interface LineNow {
  slots: number;
  holders: readonly SlotHolder[];
  /** Waiting at position (1 = next), or already placed that long ago (ms) and starting. */
  viewer: { state: 'queued'; position: number } | { state: 'placed'; sincePlacedMs: number };
}

export interface OracleOptions {
  /** Simulated futures (default 2,000). */
  draws?: number;
  /** Uniform in [0, 1) (default: a fixed-seed generator, so a run repeats). */
  random?: () => number;
  /** The error judged: |estimate − wait| / max(floorMs, wait) ≤ targetError (defaults 0.3 and 1,000 ms, as the bench judges). */
  targetError?: number;
  floorMs?: number;
}

export interface OracleWait {
  /** The median simulated wait (ms): the estimate with the least expected absolute error. */
  estimateMs: number;
  /** Share of the simulated waits within ±targetError of estimateMs. */
  withinShare: number;
  /** The largest share any single estimate reaches (at bestEstimateMs): the ceiling for this viewer. */
  bestWithinShare: number;
  bestEstimateMs: number;
  /** The simulated waits (ms), ascending: any other estimate can be judged on them (errorsOn). */
  waits: Float64Array;
  /** errorsOn(waits, estimateMs). */
  errors: Float64Array;
}


/**
 * The viewer's wait (its queue message → Running, ms) by Monte Carlo: each holder's remaining time
 * drawn from the lifetime conditioned on its age, the slots freeing in turn to the viewers ahead
 * first (each placed one starts, then stays a fresh lifetime), the viewer's wait the time its turn
 * gets a slot plus the start-up.
 */
export function oracleWait(line: LineNow, world: OracleWorld, options: OracleOptions = {}): OracleWait {
  const draws = options.draws ?? 2_000;
  const random = options.random ?? seededRandom(26);
  const target = options.targetError ?? 0.3;
  const floorMs = options.floorMs ?? 1_000;
  if (line.slots <= 0) throw new Error('no slot serves the line');
  if (line.viewer.state === 'queued' && !(line.viewer.position >= 1)) throw new Error(`position ${line.viewer.position}: the line starts at 1`);
  const { startupMs, lifetimeMinMs: min, lifetimeMaxMs: max } = world;
  const endMs = world.endMs ?? 0;
  const stay = (): number => min + random() * (max - min) + endMs;
  // A stay known to have lasted at least `age` (ms): uniform on what is left of it; 0 when overdue.
  const restOfStay = (age: number): number => {
    if (age - endMs >= max) return 0;
    const from = Math.max(min, age - endMs);
    return from + random() * (max - from) + endMs - age;
  };
  const waits = new Float64Array(draws);
  const frees = new Float64Array(Math.max(line.slots, line.holders.length));
  for (let d = 0; d < draws; d++) {
    if (line.viewer.state === 'placed') {
      waits[d] = Math.max(0, startupMs - line.viewer.sincePlacedMs);
      continue;
    }
    // Free slots (a transient count above the slots keeps every holder) free at 0.
    frees.fill(0);
    line.holders.forEach((h, i) => {
      frees[i] = h.state === 'freeing' ? 0 : h.state === 'starting' ? Math.max(0, startupMs - h.sincePlacedMs) + stay() : restOfStay(h.sinceRunningMs);
    });
    for (let ahead = 1; ; ahead++) {
      let soonest = 0;
      for (let i = 1; i < frees.length; i++) if (frees[i]! < frees[soonest]!) soonest = i;
      const at = frees[soonest]!;
      if (ahead === line.viewer.position) {
        waits[d] = at + startupMs;
        break;
      }
      frees[soonest] = at + startupMs + stay();
    }
  }
  waits.sort();
  const estimateMs = percentileOf(waits, 0.5);
  const errors = errorsOn(waits, estimateMs, floorMs);
  const best = bestWindow(waits, target, floorMs);
  return { estimateMs, withinShare: shareWithin(errors, target), bestWithinShare: best.share, bestEstimateMs: best.at, waits, errors };
}

/** The size of an estimate's error on each wait (ms): |estimateMs − wait| / max(floorMs, wait), ascending. */
export function errorsOn(waits: Float64Array, estimateMs: number, floorMs = 1_000): Float64Array {
  return waits.map((w) => Math.abs(estimateMs - w) / Math.max(floorMs, w)).sort();
}

/** The share of errors (sizes) at most target. */
export function shareWithin(errors: Float64Array, target = 0.3): number {
  return errors.length === 0 ? NaN : errors.filter((e) => e <= target).length / errors.length;
}

/** Linear interpolation between the nearest ranks of ascending values (q in [0, 1]). */
export function percentileOf(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = q * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

/** The estimate e that the most waits w accept (|e − w| ≤ target × max(floor, w)): a sweep over each wait's window. */
function bestWindow(waits: Float64Array, target: number, floorMs: number): { share: number; at: number } {
  const edges: [number, number][] = [];
  for (const w of waits) {
    const half = target * Math.max(floorMs, w);
    edges.push([w - half, 1], [w + half, -1]);
  }
  // Windows are closed: at a tie an opening counts before a closing.
  edges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let open = 0;
  let best = { count: 0, at: 0 };
  for (const [at, step] of edges) {
    open += step;
    if (open > best.count) best = { count: open, at };
  }
  return { share: best.count / waits.length, at: best.at };
}
