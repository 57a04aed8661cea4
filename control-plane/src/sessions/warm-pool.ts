// Warm pools: per project, app instances launched before any viewer comes, so a viewer is served in
// the time WebRTC takes rather than the seconds an Unreal app takes to load. A warm instance is a
// session row with `pooled` set: placed and started by the ordinary StartSession (its slot, app
// record, restart recovery and logs are a session's), its relay already ingesting once the app
// identifies. A new viewer claims one (SessionService.claimWarm) and it becomes that viewer's
// session; the scheduler (scheduler.ts) refills pools only when no viewer of the region waits, and
// stops other projects' idle instances when one does.
//
// This room keeps what the lifecycle and the scheduler ask about the pools: the index of unclaimed
// instances (kept by every status change, rebuilt from the table at start), how many each project
// wants now (its minimum, grown while viewers waited longer than its target), and the run of
// failures that stops a build being warmed (stored, so a restart does not begin a crash loop anew).
import type { Logger } from 'pino';
import type { Clock } from '@pixelfleet/common';
import type { EventLog } from '../events/event-log';
import type { Project } from '../repositories/projects';
import type { SessionRecord } from '../repositories/sessions';
import type { WarmBuildFailures, WarmPoolFailuresRepository } from '../repositories/warm-pool-failures';

/** Warm instances of one build failing in a row (launch failed, or the app exited unclaimed) before the build stops being warmed. */
export const WARM_FAILURES_TO_STOP = 3;
/** After the n-th failure in a row, the next warm launch of the project waits WARM_RETRY_BASE_MS × 2^(n-1). */
export const WARM_RETRY_BASE_MS = 5_000;
/** A pool grown past its minimum shrinks back after this long without a viewer waiting past the target. */
export const WARM_POOL_QUIET_MS = 10 * 60_000;
/** How often the pools are looked at without a session event: a new live build, a retry time passed, the project list re-read. */
export const WARM_POOL_REFRESH_MS = 5_000;

/** One unclaimed warm instance as the scheduler sees it. */
export interface WarmInstance {
  readonly sessionId: string;
  readonly projectId: string;
  readonly region: string;
  readonly workerId: string;
  /** The build it runs: a new live build replaces it. */
  readonly uploadId: string | undefined;
  readonly placedAt: number;
  /** The order the index first saw it in (launch order; at a restart, the store's): ties of placedAt, which is in ms, go by it. */
  readonly order: number;
  /** Its app identified itself on the agent's signalling: a claim is served as fast as WebRTC goes. */
  ready: boolean;
  /** Terminating: it still holds its slot until its agent confirms the stop. */
  ending: boolean;
}

/** What the admin output and the metrics show of one project's pool. */
export interface WarmPoolView {
  projectId: string;
  wanted: number;
  starting: number;
  ready: number;
  ending: number;
  /** Viewers served by a warm instance, and viewers of a project with a pool who had to wait for a launch, since this control plane started. */
  claims: number;
  misses: number;
  /** Why the live build is not warmed, when it is not. */
  stopped?: { uploadId: string; failures: number; reason: string; at: number };
}

export class WarmPools {
  private readonly instances = new Map<string, WarmInstance>();
  private nextOrder = 0;
  private poolProjects: string[] = [];
  private readonly growth = new Map<string, { extra: number; lastWaitPastTargetAt: number }>();
  private readonly retryAt = new Map<string, number>();
  private readonly claimsOf = new Map<string, number>();
  private readonly missesOf = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly failures: WarmPoolFailuresRepository,
    /** The projects whose settings ask for a pool (ProjectsRepository.listWithWarmPools). */
    private readonly listPoolProjects: () => string[],
    private readonly events: EventLog,
    private readonly log: Logger,
  ) {}

  /** Reads again which projects ask for a pool (at start, on a settings change, every WARM_POOL_REFRESH_MS). */
  refreshProjects(): void {
    this.poolProjects = this.listPoolProjects();
  }

  /** The projects the scheduler tends: those asking for a pool and those still holding unclaimed instances. */
  projectsToTend(): string[] {
    const ids = new Set(this.poolProjects);
    for (const i of this.instances.values()) ids.add(i.projectId);
    return [...ids];
  }

  /** A pooled session was placed, moved or restored: the index follows it (a Terminated one, or one claimed, leaves it). */
  tracked(s: SessionRecord): void {
    if (s.pooled !== true || s.status === 'Terminated' || s.assignedWorker === undefined) {
      this.instances.delete(s.sessionId);
      return;
    }
    const known = this.instances.get(s.sessionId);
    this.instances.set(s.sessionId, {
      sessionId: s.sessionId,
      projectId: s.projectId,
      region: s.region,
      workerId: s.assignedWorker,
      uploadId: s.uploadId,
      placedAt: s.placedAt ?? s.updatedAt,
      order: known?.order ?? this.nextOrder++,
      ready: known?.ready === true || s.identifiedAt !== undefined,
      ending: s.status === 'Terminating',
    });
  }

  /** Its app identified itself: it is ready, and its build's run of failures is over. */
  identified(sessionId: string): void {
    const instance = this.instances.get(sessionId);
    if (instance === undefined) return;
    instance.ready = true;
    if (instance.uploadId !== undefined && this.failures.find(instance.projectId, instance.uploadId) !== undefined) this.failures.clear(instance.projectId);
    this.retryAt.delete(instance.projectId);
  }

  /** A viewer took it: it is that viewer's session now. */
  claimed(sessionId: string): void {
    const instance = this.instances.get(sessionId);
    if (instance === undefined) return;
    this.instances.delete(sessionId);
    this.claimsOf.set(instance.projectId, (this.claimsOf.get(instance.projectId) ?? 0) + 1);
  }

  /**
   * The instance a new viewer of the project takes: a ready one before one still starting, then the
   * one launched longest ago; never one ending, of another build than the live one, or on a worker
   * that takes no sessions now (draining, or its link down).
   */
  claimable(projectId: string, liveUploadId: string | undefined, workerTakesSessions: (workerId: string) => boolean): WarmInstance | undefined {
    let best: WarmInstance | undefined;
    for (const i of this.instances.values()) {
      if (i.projectId !== projectId || i.ending || i.uploadId !== liveUploadId || !workerTakesSessions(i.workerId)) continue;
      if (best === undefined || (i.ready && !best.ready) || (i.ready === best.ready && byAge(i, best) < 0)) best = i;
    }
    return best;
  }

  /** The project's unclaimed instances not ending, launched longest ago first. */
  ofProject(projectId: string): WarmInstance[] {
    return [...this.instances.values()].filter((i) => i.projectId === projectId && !i.ending).sort(byAge);
  }

  /** The region's unclaimed instances not ending, launched longest ago first (the first stopped for a waiting viewer). */
  idleInRegion(region: string): WarmInstance[] {
    return [...this.instances.values()].filter((i) => i.region === region && !i.ending).sort(byAge);
  }

  /** Unclaimed instances of the region that are ending: slots about to be free. */
  endingInRegion(region: string): number {
    let n = 0;
    for (const i of this.instances.values()) if (i.region === region && i.ending) n += 1;
    return n;
  }

  /**
   * How many unclaimed instances the project wants now: its minimum plus what waits past its target
   * added (gone after WARM_POOL_QUIET_MS without one). Not capped by the slots the region has now:
   * a worker away for a moment does not make the pool a surplus; launches take free slots only.
   */
  wanted(project: Project): number {
    const { warmPoolMinIdle } = project.settings;
    if (warmPoolMinIdle <= 0) return 0;
    const grown = this.growth.get(project.projectId);
    if (grown !== undefined && this.clock.now() - grown.lastWaitPastTargetAt >= WARM_POOL_QUIET_MS) this.growth.delete(project.projectId);
    return warmPoolMinIdle + (this.growth.get(project.projectId)?.extra ?? 0);
  }

  /**
   * A viewer of the project was placed after waiting in line waitedMs: past the project's target, its
   * pool grows by one, up to the region's slots (regionSlots: those of its workers taking sessions
   * now, read only then: a placement of a project without a target reads nothing more).
   */
  viewerWaited(project: Project, waitedMs: number, regionSlots: () => number): void {
    const { warmPoolMinIdle, warmPoolQueueWaitTargetSeconds } = project.settings;
    if (warmPoolMinIdle > 0) this.missesOf.set(project.projectId, (this.missesOf.get(project.projectId) ?? 0) + 1);
    if (warmPoolMinIdle <= 0 || warmPoolQueueWaitTargetSeconds <= 0 || waitedMs <= warmPoolQueueWaitTargetSeconds * 1000) return;
    const extra = Math.min(Math.max(0, regionSlots() - warmPoolMinIdle), (this.growth.get(project.projectId)?.extra ?? 0) + 1);
    this.growth.set(project.projectId, { extra, lastWaitPastTargetAt: this.clock.now() });
    this.log.info({ projectId: project.projectId, waitedMs, wanted: warmPoolMinIdle + extra }, 'a viewer waited past the warm pool target; the pool grows');
  }

  /** True when the project's live build may be warmed now: not stopped after failures, and past its retry time. */
  mayLaunch(projectId: string, uploadId: string): boolean {
    if (this.failures.find(projectId, uploadId)?.stoppedAt !== undefined) return false;
    return this.clock.now() >= (this.retryAt.get(projectId) ?? 0);
  }

  /**
   * An unclaimed instance failed (its launch, or its app exited by itself): the project waits before
   * its next warm launch, longer each time, and after WARM_FAILURES_TO_STOP in a row the build is no
   * longer warmed (a fleet event, a warn line) until a new live build or new pool settings.
   */
  failed(s: SessionRecord, reason: string): void {
    if (s.uploadId === undefined) return;
    const now = this.clock.now();
    const before = this.failures.find(s.projectId, s.uploadId);
    if (before?.stoppedAt !== undefined) return;
    const failures = (before?.failures ?? 0) + 1;
    const stopped = failures >= WARM_FAILURES_TO_STOP;
    this.failures.put({ projectId: s.projectId, uploadId: s.uploadId, failures, lastFailureAt: now, lastReason: reason, stoppedAt: stopped ? now : undefined });
    this.retryAt.set(s.projectId, now + WARM_RETRY_BASE_MS * 2 ** (failures - 1));
    if (!stopped) {
      this.log.warn({ projectId: s.projectId, sessionId: s.sessionId, uploadId: s.uploadId, failures, reason }, 'a warm instance failed; the next one waits');
      return;
    }
    this.log.warn({ projectId: s.projectId, uploadId: s.uploadId, failures, reason }, 'warm instances of this build keep failing; it is no longer warmed');
    this.events.record('warmPool.stopped', { projectId: s.projectId }, { uploadId: s.uploadId, failures, reason });
  }

  /** New pool settings or a new live build: warm the project again from a clean slate. */
  forgetFailures(projectId: string): void {
    this.failures.clear(projectId);
    this.retryAt.delete(projectId);
  }

  /** Builds that stopped being warmed, for the metrics. */
  stoppedBuilds(): WarmBuildFailures[] {
    return this.failures.listStopped();
  }

  /** Unclaimed instances by state, over every pool. */
  countByState(): { starting: number; ready: number; ending: number } {
    const counts = { starting: 0, ready: 0, ending: 0 };
    for (const i of this.instances.values()) counts[stateOf(i)] += 1;
    return counts;
  }

  /** Claims and misses since start, over every pool. */
  totals(): { claims: number; misses: number } {
    let claims = 0;
    let misses = 0;
    for (const n of this.claimsOf.values()) claims += n;
    for (const n of this.missesOf.values()) misses += n;
    return { claims, misses };
  }

  /** One project's pool as the admin output shows it. */
  view(project: Project): WarmPoolView {
    const counts = { starting: 0, ready: 0, ending: 0 };
    for (const i of this.instances.values()) if (i.projectId === project.projectId) counts[stateOf(i)] += 1;
    const stopped = project.liveUploadId === undefined ? undefined : this.failures.find(project.projectId, project.liveUploadId);
    return {
      projectId: project.projectId,
      wanted: this.wanted(project),
      ...counts,
      claims: this.claimsOf.get(project.projectId) ?? 0,
      misses: this.missesOf.get(project.projectId) ?? 0,
      ...(stopped?.stoppedAt === undefined ? {} : { stopped: { uploadId: stopped.uploadId, failures: stopped.failures, reason: stopped.lastReason, at: stopped.stoppedAt } }),
    };
  }
}

const byAge = (a: WarmInstance, b: WarmInstance): number => a.placedAt - b.placedAt || a.order - b.order;

function stateOf(i: WarmInstance): 'starting' | 'ready' | 'ending' {
  return i.ending ? 'ending' : i.ready ? 'ready' : 'starting';
}
