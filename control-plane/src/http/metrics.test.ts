import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createMetrics, type FleetCounts, type WarmPoolSource } from './metrics';
import type { RelayCounters, SessionActivity } from '@pixelfleet/proto';
import type { RegistryEvents, WorkerRegistry } from '../workers/registry';

/** A worker registry that only lets the test play heartbeats and identity conflicts to its listeners. */
function heartbeats(): { registry: WorkerRegistry; beat: (workerId: string, activity: SessionActivity[]) => void; conflict: (workerId: string) => void } {
  type ActivityListener = (...args: RegistryEvents['sessionActivity']) => void;
  type ConflictListener = (...args: RegistryEvents['identityConflict']) => void;
  const listeners: ActivityListener[] = [];
  const conflictListeners: ConflictListener[] = [];
  const on = (event: keyof RegistryEvents, l: ActivityListener & ConflictListener) =>
    event === 'sessionActivity' ? listeners.push(l) : event === 'identityConflict' ? conflictListeners.push(l) : 0;
  const registry = { list: () => [], liveStreamCount: () => 0, on } as unknown as WorkerRegistry;
  return { registry, beat: (workerId, activity) => listeners.forEach((l) => l(workerId, activity)), conflict: (workerId) => conflictListeners.forEach((l) => l(workerId)) };
}

/** No sessions, no builds (the product gauges have their own test with a real database: control-plane-surface.test.ts). */
const noCounts: FleetCounts = { countNotTerminatedByProjectAndStatus: () => [], countBuildsByStatus: () => Promise.resolve([]) };

/** Warm pools as a test plays them: their counts, and first videos it reports. */
function pools(): { source: WarmPoolSource; firstVideo: (seconds: number, warm: boolean) => void } {
  let listener: (seconds: number, warm: boolean) => void = () => undefined;
  const source: WarmPoolSource = {
    countByState: () => ({ starting: 1, ready: 2, ending: 0 }),
    totals: () => ({ claims: 7, misses: 3 }),
    stoppedBuilds: () => [{}],
    onFirstVideo: (l) => (listener = l),
  };
  return { source, firstVideo: (seconds, warm) => listener(seconds, warm) };
}
const noPools = pools().source;

const counters = (over: Partial<RelayCounters> = {}): RelayCounters => ({
  keyframeRequestsMade: 0,
  keyframeRequestsToApp: 0,
  keyframeRequestsCoalesced: 0,
  ingestPacketsMissing: 0,
  ingestPacketsAbandoned: 0,
  viewerPacketsResent: 0,
  viewerNackMisses: 0,
  rembBps: 0,
  viewersShownVideo: 0,
  ...over,
});

async function value(metrics: ReturnType<typeof createMetrics>, name: string): Promise<number> {
  const text = await metrics.registry.metrics();
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
}

describe('relay counters in /metrics', () => {
  it("add each session's growth between heartbeats, across sessions and workers", async () => {
    const { registry, beat } = heartbeats();
    const metrics = createMetrics(registry, () => true, noCounts, noPools);
    beat('w1', [{ sessionId: 's1', lastInputAtMs: undefined, relay: counters({ keyframeRequestsToApp: 2, ingestPacketsMissing: 40 }) }]);
    beat('w1', [{ sessionId: 's1', lastInputAtMs: undefined, relay: counters({ keyframeRequestsToApp: 3, ingestPacketsMissing: 40 }) }]);
    beat('w2', [
      { sessionId: 's2', lastInputAtMs: undefined, relay: counters({ keyframeRequestsToApp: 1 }) },
      { sessionId: 's3', lastInputAtMs: undefined, relay: undefined },
    ]);
    expect(await value(metrics, 'pixelfleet_relay_keyframe_requests_to_app_total')).toBe(4);
    expect(await value(metrics, 'pixelfleet_relay_ingest_packets_missing_total')).toBe(40);
    expect(await value(metrics, 'pixelfleet_relay_viewer_nack_misses_total')).toBe(0);
  });

  it('count only sessions the reporting worker holds: made-up sessions and another worker\'s are left out', async () => {
    const { registry, beat } = heartbeats();
    const held = new Set(['w1/s1', 'w2/s2']);
    const metrics = createMetrics(registry, (workerId, sessionId) => held.has(`${workerId}/${sessionId}`), noCounts, noPools);
    beat('w1', [
      { sessionId: 's1', lastInputAtMs: undefined, relay: counters({ keyframeRequestsMade: 3 }) },
      { sessionId: 'made_up', lastInputAtMs: undefined, relay: counters({ keyframeRequestsMade: 1_000_000 }) },
      { sessionId: 's2', lastInputAtMs: undefined, relay: counters({ keyframeRequestsMade: 500 }) },
    ]);
    expect(await value(metrics, 'pixelfleet_relay_keyframe_requests_total')).toBe(3);
  });

  it('forget a session its worker no longer reports, so a new session of that id counts from zero', async () => {
    const { registry, beat } = heartbeats();
    const metrics = createMetrics(registry, () => true, noCounts, noPools);
    beat('w1', [{ sessionId: 's1', lastInputAtMs: undefined, relay: counters({ viewerPacketsResent: 10 }) }]);
    beat('w1', [{ sessionId: 's9', lastInputAtMs: undefined, relay: counters() }]);
    beat('w1', [{ sessionId: 's1', lastInputAtMs: undefined, relay: counters({ viewerPacketsResent: 4 }) }]);
    expect(await value(metrics, 'pixelfleet_relay_viewer_packets_resent_total')).toBe(14);
  });
});

describe('identity conflicts in /metrics', () => {
  it('count every stream refused because another agent process holds the worker identity', async () => {
    const { registry, conflict } = heartbeats();
    const metrics = createMetrics(registry, () => true, noCounts, noPools);
    expect(await value(metrics, 'pixelfleet_worker_identity_conflicts_total')).toBe(0);
    conflict('w1');
    conflict('w1');
    conflict('w2');
    expect(await value(metrics, 'pixelfleet_worker_identity_conflicts_total')).toBe(3);
  });
});

describe('warm pools in /metrics', () => {
  it('read the pools at each scrape, and put each first video in the warm or the cold histogram', async () => {
    const { source, firstVideo } = pools();
    const metrics = createMetrics(heartbeats().registry, () => true, noCounts, source);
    firstVideo(0.42, true);
    firstVideo(11.3, false);
    firstVideo(12.1, false);
    const text = await metrics.registry.metrics();
    expect(text).toContain('pixelfleet_warm_instances{state="ready"} 2');
    expect(text).toContain('pixelfleet_warm_instances{state="starting"} 1');
    expect(text).toContain('pixelfleet_warm_instances{state="ending"} 0');
    expect(await value(metrics, 'pixelfleet_warm_claims_total')).toBe(7);
    expect(await value(metrics, 'pixelfleet_warm_misses_total')).toBe(3);
    expect(await value(metrics, 'pixelfleet_warm_builds_stopped')).toBe(1);
    expect(text).toContain('pixelfleet_session_first_video_seconds_bucket{le="0.5",start="warm"} 1');
    expect(text).toContain('pixelfleet_session_first_video_seconds_bucket{le="10",start="cold"} 0');
    expect(text).toContain('pixelfleet_session_first_video_seconds_bucket{le="20",start="cold"} 2');
    expect(text).toContain('pixelfleet_session_first_video_seconds_count{start="cold"} 2');
  });
});

describe('builds in /metrics', () => {
  it('are read from the store at each scrape (the store answers with a promise), every status listed', async () => {
    let byStatus = [{ status: 'Ready' as const, n: 3 }];
    const counts: FleetCounts = { countNotTerminatedByProjectAndStatus: () => [], countBuildsByStatus: () => Promise.resolve(byStatus) };
    const metrics = createMetrics(heartbeats().registry, () => true, counts, noPools);
    let text = await metrics.registry.metrics();
    expect(text).toContain('pixelfleet_builds{status="Ready"} 3');
    expect(text).toContain('pixelfleet_builds{status="pending"} 0');
    byStatus = [{ status: 'Ready', n: 4 }];
    text = await metrics.registry.metrics();
    expect(text).toContain('pixelfleet_builds{status="Ready"} 4');
  });
});

describe('docs/operations.md §9', () => {
  it("lists every metric this file defines, and no other (the process's own and the relay counters, documented apart, aside)", async () => {
    const guide = readFileSync(fileURLToPath(new URL('../../../docs/operations.md', import.meta.url)), 'utf8');
    const section = guide.slice(guide.indexOf('## 9. Metrics'), guide.indexOf('## 10.'));
    const documented = [...section.matchAll(/^\| `(pixelfleet_[a-z_]+)` \|/gm)].map((m) => m[1]).sort();
    const text = await createMetrics(heartbeats().registry, () => true, noCounts, noPools).registry.metrics();
    const defined = [...new Set([...text.matchAll(/^# TYPE (pixelfleet_[a-z_]+) /gm)].map((m) => m[1]!))]
      .filter((name) => !name.startsWith('pixelfleet_relay_') && !name.startsWith('pixelfleet_process_') && !name.startsWith('pixelfleet_nodejs_'))
      .sort();
    expect(documented).toEqual(defined);
  });
});
