// Prometheus metrics: process defaults plus fleet gauges read at scrape time (workers by link state,
// sessions by status, queue length per project, builds by status, warm instances by state), HTTP
// request counts by route, agent streams refused for a shared worker identity, the time from a viewer's arrival to its first video (warm or cold), and
// the session relays' counters as the agents report them.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RelayCounters, SessionActivity } from '@pixelfleet/proto';
import { BUILD_STATUSES, type BuildStatus } from '../builds/build-stages';
import { SESSION_STATUSES, type SessionStatus } from '../sessions/session-status';
import type { WorkerRegistry } from '../workers/registry';

/** The counts the product gauges read at each scrape (one indexed query each). */
export interface FleetCounts {
  /** Sessions not yet Terminated, by project and status (the history is not scanned). */
  countNotTerminatedByProjectAndStatus(): { projectId: string; status: SessionStatus; n: number }[];
  /** Builds by status, read from the store at each scrape (the gauge's collect awaits it). */
  countBuildsByStatus(): Promise<{ status: BuildStatus; n: number }[]>;
}

/** What the warm pools say at a scrape, and each session's first video (sessions/warm-pool.ts, SessionService). */
export interface WarmPoolSource {
  countByState(): { starting: number; ready: number; ending: number };
  totals(): { claims: number; misses: number };
  stoppedBuilds(): unknown[];
  /** Calls back when the relay first saw video reach a session's viewer; `warm` when a warm instance served it. */
  onFirstVideo(listener: (secondsSinceArrival: number, warm: boolean) => void): void;
}

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
}

/**
 * holds: true when the worker holds the session now (SessionService.heldBy). An agent's report
 * counts only for those: a rogue agent cannot make up sessions, or report another worker's.
 */
export function createMetrics(workers: WorkerRegistry, holds: (workerId: string, sessionId: string) => boolean, counts: FleetCounts, warm: WarmPoolSource): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'pixelfleet_' });
  const httpRequests = new Counter({
    name: 'pixelfleet_http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'pixelfleet_workers',
    help: 'Enrolled workers by status',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of ['connected', 'disconnected', 'unreachable', 'draining'] as const) this.set({ status: s }, 0);
      for (const w of workers.list()) this.inc({ status: w.status });
    },
  });
  new Gauge({
    name: 'pixelfleet_agent_streams',
    help: 'Open agent Connect streams',
    registers: [registry],
    collect() {
      this.set(workers.liveStreamCount());
    },
  });
  const identityConflicts = new Counter({
    name: 'pixelfleet_worker_identity_conflicts_total',
    help: "Agent Connect streams refused because another agent process holds the worker's identity (a server cloned with worker.json), since start",
    registers: [registry],
  });
  workers.on('identityConflict', () => identityConflicts.inc());
  new Gauge({
    name: 'pixelfleet_sessions',
    help: 'Sessions by status, all projects (Terminated ones are history, not counted)',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of SESSION_STATUSES) if (s !== 'Terminated') this.set({ status: s }, 0);
      for (const { status, n } of counts.countNotTerminatedByProjectAndStatus()) this.inc({ status }, n);
    },
  });
  new Gauge({
    name: 'pixelfleet_queue_length',
    help: 'Viewers waiting (sessions Enqueued), by project; a project with none is not listed',
    labelNames: ['project'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { projectId, status, n } of counts.countNotTerminatedByProjectAndStatus()) if (status === 'Enqueued') this.set({ project: projectId }, n);
    },
  });
  new Gauge({
    name: 'pixelfleet_builds',
    help: 'Builds by pipeline status',
    labelNames: ['status'] as const,
    registers: [registry],
    // Read at the scrape, as the other fleet gauges are (prom-client awaits an async collect):
    // one GROUP BY per scrape, never stale. The gauge is reset only once the counts are in.
    async collect() {
      const byStatus = await counts.countBuildsByStatus();
      this.reset();
      for (const s of BUILD_STATUSES) this.set({ status: s }, 0);
      for (const { status, n } of byStatus) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'pixelfleet_warm_instances',
    help: 'Unclaimed warm instances by state, all projects',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      for (const [state, n] of Object.entries(warm.countByState())) this.set({ state }, n);
    },
  });
  new Counter({
    name: 'pixelfleet_warm_claims_total',
    help: 'Viewers served by a warm instance since the control plane started',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(warm.totals().claims);
    },
  });
  new Counter({
    name: 'pixelfleet_warm_misses_total',
    help: 'Viewers of a project with a warm pool who waited for a launch, since the control plane started',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(warm.totals().misses);
    },
  });
  new Gauge({
    name: 'pixelfleet_warm_builds_stopped',
    help: 'Live builds no longer warmed because their warm instances kept failing',
    registers: [registry],
    collect() {
      this.set(warm.stoppedBuilds().length);
    },
  });
  const firstVideo = new Histogram({
    name: 'pixelfleet_session_first_video_seconds',
    help: "From a viewer's arrival (its session created, or a warm instance claimed) to the relay seeing video reach it, by how it was served",
    labelNames: ['start'] as const,
    buckets: [0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120],
    registers: [registry],
  });
  warm.onFirstVideo((seconds, served) => firstVideo.observe({ start: served ? 'warm' : 'cold' }, seconds));
  const relay = new RelayMetrics(registry);
  workers.on('sessionActivity', (workerId, activity) => relay.record(workerId, activity.filter((a) => holds(workerId, a.sessionId))));
  return { registry, httpRequests };
}

/** Relay counters summed over the fleet: name → (help, which RelayCounters total feeds it). */
const RELAY_COUNTERS: Readonly<Record<string, { help: string; from: keyof RelayCounters }>> = {
  pixelfleet_relay_keyframe_requests_total: { help: 'Keyframe requests made by session relays (viewers, joins, unrepairable loss)', from: 'keyframeRequestsMade' },
  pixelfleet_relay_keyframe_requests_to_app_total: { help: 'Keyframe requests session relays sent to the app', from: 'keyframeRequestsToApp' },
  pixelfleet_relay_keyframe_requests_coalesced_total: { help: 'Keyframe requests folded into one already asked for', from: 'keyframeRequestsCoalesced' },
  pixelfleet_relay_ingest_packets_missing_total: { help: 'Video packets from apps found missing on workers (NACKed to the app)', from: 'ingestPacketsMissing' },
  pixelfleet_relay_ingest_packets_abandoned_total: { help: 'Missing video packets apps could not resend', from: 'ingestPacketsAbandoned' },
  pixelfleet_relay_viewer_packets_resent_total: { help: 'Packets resent to viewers from relay send histories', from: 'viewerPacketsResent' },
  pixelfleet_relay_viewer_nack_misses_total: { help: 'Packets viewers asked for that a relay no longer held', from: 'viewerNackMisses' },
  pixelfleet_relay_viewers_shown_video_total: { help: 'Viewers whose receiver reports acknowledged a whole keyframe', from: 'viewersShownVideo' },
};

/**
 * Turns the per-session totals of each heartbeat into fleet counters: each session's growth since
 * its worker's previous report is added. A worker's report lists all its running sessions, so an
 * ended session drops out with its worker's next report; the last seconds of a session, between
 * its last heartbeat and its end, are not counted.
 */
class RelayMetrics {
  private readonly counters: { counter: Counter; from: keyof RelayCounters }[];
  private readonly byWorker = new Map<string, Map<string, RelayCounters>>();

  constructor(registry: Registry) {
    this.counters = Object.entries(RELAY_COUNTERS).map(([name, { help, from }]) => ({ counter: new Counter({ name, help, registers: [registry] }), from }));
  }

  record(workerId: string, activity: readonly SessionActivity[]): void {
    const previous = this.byWorker.get(workerId);
    const latest = new Map<string, RelayCounters>();
    for (const { sessionId, relay } of activity) {
      if (relay === undefined) continue;
      const before = previous?.get(sessionId);
      for (const { counter, from } of this.counters) {
        const grown = relay[from] - (before?.[from] ?? 0);
        if (grown > 0) counter.inc(grown);
      }
      latest.set(sessionId, relay);
    }
    this.byWorker.set(workerId, latest);
  }
}
