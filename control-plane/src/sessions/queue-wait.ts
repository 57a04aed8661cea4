// The queued viewer's estimated wait (`pixelfleetQueue.estimatedWaitSeconds`), from what the
// region's sessions did lately: how long a placed session held its slot (placement → end) and how
// long an app took to start (placement → Running). The viewer at position p, after the free slots,
// waits for the p-th slot to free, then its own start. Each busy slot frees when its session ends:
// a session placed a seconds ago is expected to hold it for the mean of (L − a) over the recent
// lifetimes L longer than a (0 when none is), and a freed slot's next session for the mean
// lifetime. Without the busy sessions' ages, p × L / S (S slots leaving at S / L). Kept in memory,
// per region: a restart starts without data, and the estimate stays absent until there is some.
// Warm pools: a viewer in line is always served by a launch, so a session that claimed a warm
// instance (placed at the claim, its app already started) counts on a launch's scale: its lifetime
// and its age plus the median start-up, and its near-zero start-up not at all. An instance no viewer
// claimed is nobody's session: its end is no lifetime, and its slot goes to the line at once (it is
// stopped for a waiting viewer, scheduler.ts preemptWarm).
import type { Clock } from '@pixelfleet/common';
import type { SessionService } from './session-service';

/** The most recent samples kept per region and kind. */
export const QUEUE_WAIT_SAMPLES = 50;
/** Fewer recent lifetimes than this: no estimate (a guess from one session misleads). */
export const QUEUE_WAIT_MIN_SAMPLES = 3;
/** Samples older than this are dropped: the load of an hour ago says little about now. */
export const QUEUE_WAIT_SAMPLE_MAX_AGE_MS = 60 * 60_000;

/** The mean of (L − age) over the lifetimes L longer than age: how much longer a session of that age holds its slot (0 past them all). */
function expectedRemaining(ageMs: number, lifetimes: readonly number[]): number {
  let sum = 0;
  let n = 0;
  for (const ms of lifetimes) {
    if (ms <= ageMs) continue;
    sum += ms - ageMs;
    n += 1;
  }
  return n === 0 ? 0 : sum / n;
}

interface Sample {
  at: number;
  ms: number;
  /** A lifetime from a claim: its app had started before (a launch's start-up is added when read). */
  claimed?: boolean;
}

/** What serves the region now: slots of its placeable workers, and how many of them are free. */
export interface RegionCapacity {
  slots: number;
  freeSlots: number;
}

/** A session holding a slot of the region: when it was placed (epoch ms; a claimed one at its claim), and what it is. */
export interface BusySlot {
  placedAt: number;
  /** A viewer claimed it from a warm pool. */
  claimed?: boolean;
  /** An unclaimed warm instance. */
  pooled?: boolean;
}

export type BusySlots = (region: string) => readonly BusySlot[];

export class QueueWaitEstimator {
  private readonly lifetimes = new Map<string, Sample[]>();
  private readonly startups = new Map<string, Sample[]>();

  /** busy: the placement times of the sessions holding the region's slots; without it, the p × L / S rule. */
  constructor(
    private readonly clock: Clock,
    private readonly busy?: BusySlots,
  ) {}

  /** Records each launched session's start-up (at Running) and each viewer's session's slot lifetime (at its end). */
  follow(sessions: Pick<SessionService, 'on'>): void {
    sessions.on('running', (s) => {
      if (s.placedAt !== undefined && s.claimedAt === undefined) this.add(this.startups, s.region, this.clock.now() - s.placedAt);
    });
    sessions.on('ended', (s) => {
      if (s.placedAt !== undefined && s.pooled !== true) this.add(this.lifetimes, s.region, this.clock.now() - s.placedAt, s.claimedAt !== undefined);
    });
  }

  recordStartup(region: string, ms: number): void {
    this.add(this.startups, region, ms);
  }

  /** claimed: the session claimed a warm instance, so ms is from its claim. */
  recordLifetime(region: string, ms: number, claimed = false): void {
    this.add(this.lifetimes, region, ms, claimed);
  }

  /**
   * For one region's line, read once (its samples and busy slots): the seconds until the viewer at
   * `position` (1 = next) has a picture, to the nearest second (an expectation: rounding up would
   * bias it); undefined while the region has fewer than QUEUE_WAIT_MIN_SAMPLES recent lifetimes or
   * no slot serves it.
   */
  forRegion(region: string, capacity: RegionCapacity): (position: number) => number | undefined {
    const recentLifetimes = this.recent(this.lifetimes, region);
    if (recentLifetimes.length < QUEUE_WAIT_MIN_SAMPLES || capacity.slots <= 0) return () => undefined;
    const startups = this.recent(this.startups, region)
      .map((sample) => sample.ms)
      .sort((a, b) => a - b);
    const startup = startups.length === 0 ? 0 : startups[Math.floor(startups.length / 2)]!;
    const lifetimes = recentLifetimes.map((sample) => sample.ms + (sample.claimed === true ? startup : 0));
    const meanLifetime = lifetimes.reduce((sum, ms) => sum + ms, 0) / lifetimes.length;
    const now = this.clock.now();
    // When each busy slot frees, soonest first.
    const frees = (this.busy?.(region) ?? [])
      .map((slot) => (slot.pooled === true ? 0 : expectedRemaining(now - slot.placedAt + (slot.claimed === true ? startup : 0), lifetimes)))
      .sort((a, b) => a - b);
    return (position) => {
      const departures = Math.max(0, position - capacity.freeSlots);
      let waitMs: number;
      if (departures === 0) waitMs = 0;
      else if (frees.length === 0) waitMs = (departures * meanLifetime) / capacity.slots;
      // The first round frees the busy slots in turn; each later round a mean lifetime after.
      else waitMs = frees[(departures - 1) % frees.length]! + Math.floor((departures - 1) / frees.length) * meanLifetime;
      return Math.round((waitMs + startup) / 1000);
    };
  }

  private add(samples: Map<string, Sample[]>, region: string, ms: number, claimed = false): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    const list = samples.get(region) ?? [];
    list.push({ at: this.clock.now(), ms, ...(claimed ? { claimed } : {}) });
    if (list.length > QUEUE_WAIT_SAMPLES) list.splice(0, list.length - QUEUE_WAIT_SAMPLES);
    samples.set(region, list);
  }

  private recent(samples: Map<string, Sample[]>, region: string): Sample[] {
    const since = this.clock.now() - QUEUE_WAIT_SAMPLE_MAX_AGE_MS;
    return (samples.get(region) ?? []).filter((s) => s.at >= since);
  }
}
