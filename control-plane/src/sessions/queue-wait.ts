// The queued viewer's estimated wait (`pixelfleetQueue.estimatedWaitSeconds`), from what the
// region's sessions did lately: how long a placed session held its slot (placement → end) and how
// long an app took to start (placement → Running). With S slots serving the region all busy and
// sessions of mean lifetime L leaving at S / L per unit of time, the viewer at position p (after
// the free slots) waits for p departures, p × L / S, then its own start. Kept in memory, per
// region: a restart starts without data, and the estimate stays absent until there is some.
import type { Clock } from '@pixelfleet/common';
import type { SessionService } from './session-service';

/** The most recent samples kept per region and kind. */
export const QUEUE_WAIT_SAMPLES = 50;
/** Fewer recent lifetimes than this: no estimate (a guess from one session misleads). */
export const QUEUE_WAIT_MIN_SAMPLES = 3;
/** Samples older than this are dropped: the load of an hour ago says little about now. */
export const QUEUE_WAIT_SAMPLE_MAX_AGE_MS = 60 * 60_000;

interface Sample {
  at: number;
  ms: number;
}

/** What serves the region now: slots of its placeable workers, and how many of them are free. */
export interface RegionCapacity {
  slots: number;
  freeSlots: number;
}

export class QueueWaitEstimator {
  private readonly lifetimes = new Map<string, Sample[]>();
  private readonly startups = new Map<string, Sample[]>();

  constructor(private readonly clock: Clock) {}

  /** Records each placed session's start-up (at Running) and slot lifetime (at its end). */
  follow(sessions: Pick<SessionService, 'on'>): void {
    sessions.on('running', (s) => {
      if (s.placedAt !== undefined) this.add(this.startups, s.region, this.clock.now() - s.placedAt);
    });
    sessions.on('ended', (s) => {
      if (s.placedAt !== undefined) this.add(this.lifetimes, s.region, this.clock.now() - s.placedAt);
    });
  }

  recordStartup(region: string, ms: number): void {
    this.add(this.startups, region, ms);
  }

  recordLifetime(region: string, ms: number): void {
    this.add(this.lifetimes, region, ms);
  }

  /**
   * Seconds until the viewer at `position` (1 = next) has a picture, to the nearest second (an
   * expectation: rounding up would bias it); undefined while the region has fewer than
   * QUEUE_WAIT_MIN_SAMPLES recent lifetimes or no slot serves it.
   */
  estimateSeconds(region: string, position: number, capacity: RegionCapacity): number | undefined {
    const lifetimes = this.recent(this.lifetimes, region);
    if (lifetimes.length < QUEUE_WAIT_MIN_SAMPLES || capacity.slots <= 0) return undefined;
    const meanLifetime = lifetimes.reduce((sum, ms) => sum + ms, 0) / lifetimes.length;
    const departures = Math.max(0, position - capacity.freeSlots);
    const startups = this.recent(this.startups, region).sort((a, b) => a - b);
    const startup = startups.length === 0 ? 0 : startups[Math.floor(startups.length / 2)]!;
    return Math.round(((departures * meanLifetime) / capacity.slots + startup) / 1000);
  }

  private add(samples: Map<string, Sample[]>, region: string, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    const list = samples.get(region) ?? [];
    list.push({ at: this.clock.now(), ms });
    if (list.length > QUEUE_WAIT_SAMPLES) list.splice(0, list.length - QUEUE_WAIT_SAMPLES);
    samples.set(region, list);
  }

  private recent(samples: Map<string, Sample[]>, region: string): number[] {
    const since = this.clock.now() - QUEUE_WAIT_SAMPLE_MAX_AGE_MS;
    return (samples.get(region) ?? []).filter((s) => s.at >= since).map((s) => s.ms);
  }
}
