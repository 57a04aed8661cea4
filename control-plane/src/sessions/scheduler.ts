// The scheduler: places the head of each project's line on a worker of the project's region
// with a free slot, then tends the warm pools (warm-pool.ts). The session lifecycle asks for a run
// (requestRun) wherever a session may have become placeable or a slot was freed: a viewer joined,
// a session ended, a worker said Hello, changed link or drain, a warm instance was claimed, and
// every WARM_POOL_REFRESH_MS. Runs are coalesced into one on the next turn of the event loop (after
// the gateway has told a new viewer its session) and synchronous, so placements never race.
//
// Viewers come first: a viewer who waits for a slot while another project's warm instance idles in
// the region has that instance stopped for it (oldest first, no more than the viewers waiting), and
// pools are filled only in regions where nobody waits for a slot.
import type { Logger } from 'pino';
import type { Project, ProjectsRepository } from '../repositories/projects';
import { ACTIVE_SUBSCRIPTION } from '../auth/project-access';
import type { SessionRecord } from '../repositories/sessions';
import type { WorkerRegistry } from '../workers/registry';
import { choosePlacement } from './placement';
import type { SessionEndCause } from './session-end';
import type { SessionQueues } from './session-queue';
import type { WarmInstance, WarmPools } from './warm-pool';

/** What the scheduler needs of the lifecycle (SessionService). */
export interface PlacementTarget {
  readonly queues: SessionQueues;
  readonly warm: WarmPools;
  counts(projectId: string): { liveUser: number };
  place(sessionId: string, workerId: string, project: Project): SessionRecord;
  launchWarm(project: Project, workerId: string): SessionRecord;
  end(sessionId: string, cause: SessionEndCause): SessionRecord;
}

/** Viewers of a region still waiting for a slot after a run placed what it could, and the builds they wait for. */
interface WaitingForSlots {
  viewers: number;
  projects: Set<string>;
  uploads: Set<string>;
}

export class Scheduler {
  private pending = false;
  private closed = false;
  /** Completed runs; for diagnostics and tests. */
  runs = 0;

  constructor(
    private readonly sessions: PlacementTarget,
    private readonly projects: ProjectsRepository,
    private readonly registry: WorkerRegistry,
    private readonly log: Logger,
    /** True when the worker holds the build ready (a distributed build), or needs none (a local build). */
    private readonly canRunBuild: (workerId: string, uploadId: string) => boolean = () => true,
  ) {}

  /** Asks for a run on the next turn; many requests in one turn make one run. */
  requestRun(): void {
    if (this.pending || this.closed) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      if (!this.closed) this.runNow();
    });
  }

  /** One scheduling pass over every project with someone waiting, then over the warm pools. */
  runNow(): void {
    this.runs += 1;
    const waiting = new Map<string, WaitingForSlots>();
    for (const projectId of this.sessions.queues.projectsWaiting()) {
      try {
        const left = this.schedule(projectId);
        if (left === undefined) continue;
        const region = waiting.get(left.project.region) ?? { viewers: 0, projects: new Set(), uploads: new Set() };
        region.viewers += left.viewers;
        region.projects.add(projectId);
        region.uploads.add(left.uploadId);
        waiting.set(left.project.region, region);
      } catch (err) {
        this.log.error({ err, projectId }, 'scheduling failed for project');
      }
    }
    try {
      for (const [region, left] of waiting) this.preemptWarm(region, left);
      this.tendPools(new Set(waiting.keys()));
    } catch (err) {
      this.log.error({ err }, 'tending the warm pools failed');
    }
  }

  close(): void {
    this.closed = true;
  }

  /** Places the project's line while slots allow; returns what still waits for a slot (not for the project's own limit). */
  private schedule(projectId: string): { project: Project; viewers: number; uploadId: string } | undefined {
    const project = this.projects.findById(projectId);
    const refuse: SessionEndCause | undefined = !project || !project.enabled ? 'projectDisabled' : project.liveUploadId === undefined ? 'appNotFound' : undefined;
    const liveUploadId = project?.liveUploadId;
    if (!project || liveUploadId === undefined || refuse !== undefined) {
      this.endWaiting(projectId, refuse ?? 'projectDisabled');
      return undefined;
    }
    for (let head = this.sessions.queues.head(projectId); head !== undefined; head = this.sessions.queues.head(projectId)) {
      const limit = project.settings.maxConcurrentSessions;
      if (limit > 0 && this.sessions.counts(projectId).liveUser >= limit) return undefined;
      // Only workers holding the live build; one still copying it catches up and is placed on then.
      const workerId = choosePlacement(this.registry.placeable(project.region).filter((w) => this.canRunBuild(w.workerId, liveUploadId)));
      if (workerId === undefined) {
        if (!this.registry.hasServiceableWorker(project.region)) {
          this.endWaiting(projectId, 'noWorker');
          return undefined;
        }
        return { project, viewers: this.sessions.queues.length(projectId), uploadId: liveUploadId };
      }
      this.sessions.place(head, workerId, project);
    }
    return undefined;
  }

  /**
   * Viewers of the region wait for slots: idle warm instances of other projects, on workers that
   * hold a build they wait for, are stopped for them, longest idle first, as many as wait (less the
   * instances already stopping, whose slots are about to be free).
   */
  private preemptWarm(region: string, left: WaitingForSlots): void {
    let needed = left.viewers - this.sessions.warm.endingInRegion(region);
    const serves = (i: WarmInstance) => !left.projects.has(i.projectId) && [...left.uploads].some((u) => this.canRunBuild(i.workerId, u));
    for (const instance of this.sessions.warm.idleInRegion(region)) {
      if (needed <= 0) return;
      if (!serves(instance)) continue;
      this.log.info({ sessionId: instance.sessionId, projectId: instance.projectId, region }, "warm instance stopped for another project's waiting viewer");
      this.sessions.end(instance.sessionId, 'warmInstancePreempted');
      needed -= 1;
    }
  }

  /**
   * Each pool to what its project wants now: instances of a build no longer live, of a project that
   * takes no viewers, or on a draining worker are stopped, a surplus too (the youngest first); a
   * shortfall is launched, one instance per project in turn, where the region has a free slot,
   * nobody of the region waits for one, and the build is not stopped or waiting out a failure.
   */
  private tendPools(regionsWaiting: ReadonlySet<string>): void {
    const warm = this.sessions.warm;
    const shortfalls: { project: Project; uploadId: string; missing: number }[] = [];
    for (const projectId of warm.projectsToTend()) {
      const project = this.projects.findById(projectId);
      const live = project !== undefined && project.enabled && project.subscriptionStatus === ACTIVE_SUBSCRIPTION ? project.liveUploadId : undefined;
      const kept: WarmInstance[] = [];
      const placeable = project === undefined ? [] : this.registry.placeable(project.region);
      const takesSessions = new Set(placeable.map((w) => w.workerId));
      for (const instance of warm.ofProject(projectId)) {
        if (live === undefined) this.sessions.end(instance.sessionId, 'warmInstanceSurplus');
        else if (instance.uploadId !== live) this.sessions.end(instance.sessionId, 'warmInstanceReplaced');
        else if (!takesSessions.has(instance.workerId) && this.registry.get(instance.workerId).draining) this.sessions.end(instance.sessionId, 'warmInstanceSurplus');
        else kept.push(instance);
      }
      if (project === undefined || live === undefined) continue;
      const wanted = warm.wanted(project);
      for (const surplus of kept.slice(wanted).reverse()) this.sessions.end(surplus.sessionId, 'warmInstanceSurplus');
      const missing = wanted - kept.length;
      if (missing > 0 && !regionsWaiting.has(project.region) && warm.mayLaunch(projectId, live)) shortfalls.push({ project, uploadId: live, missing });
    }
    while (shortfalls.length > 0) {
      for (const shortfall of [...shortfalls]) {
        const { project, uploadId } = shortfall;
        const workerId = choosePlacement(this.registry.placeable(project.region).filter((w) => this.canRunBuild(w.workerId, uploadId)));
        if (workerId !== undefined) this.sessions.launchWarm(project, workerId);
        shortfall.missing -= 1;
        if (workerId === undefined || shortfall.missing === 0) shortfalls.splice(shortfalls.indexOf(shortfall), 1);
      }
    }
  }

  private endWaiting(projectId: string, cause: SessionEndCause): void {
    for (const sessionId of [...this.sessions.queues.waiting(projectId)]) this.sessions.end(sessionId, cause);
  }
}
