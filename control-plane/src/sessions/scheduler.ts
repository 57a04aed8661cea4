// The scheduler: places the head of each project's line on a worker of the project's region
// with a free slot. The session lifecycle asks for a run (requestRun) wherever a session may have
// become placeable or a slot was freed: a viewer joined, a session ended, a worker said Hello,
// changed link or drain. Runs are coalesced into one on the next turn of the event loop (after
// the gateway has told a new viewer its session) and synchronous, so placements never race.
import type { Logger } from 'pino';
import type { Project, ProjectsRepository } from '../repositories/projects';
import type { SessionRecord } from '../repositories/sessions';
import type { WorkerRegistry } from '../workers/registry';
import { choosePlacement } from './placement';
import type { SessionEndCause } from './session-end';
import type { SessionQueues } from './session-queue';

/** What the scheduler needs of the lifecycle (SessionService). */
export interface PlacementTarget {
  readonly queues: SessionQueues;
  counts(projectId: string): { liveUser: number };
  place(sessionId: string, workerId: string, project: Project): SessionRecord;
  end(sessionId: string, cause: SessionEndCause): SessionRecord;
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

  /** One scheduling pass over every project with someone waiting. */
  runNow(): void {
    this.runs += 1;
    for (const projectId of this.sessions.queues.projectsWaiting()) {
      try {
        this.schedule(projectId);
      } catch (err) {
        this.log.error({ err, projectId }, 'scheduling failed for project');
      }
    }
  }

  close(): void {
    this.closed = true;
  }

  private schedule(projectId: string): void {
    const project = this.projects.findById(projectId);
    const refuse: SessionEndCause | undefined = !project || !project.enabled ? 'projectDisabled' : project.liveUploadId === undefined ? 'appNotFound' : undefined;
    const liveUploadId = project?.liveUploadId;
    if (!project || liveUploadId === undefined || refuse !== undefined) {
      this.endWaiting(projectId, refuse ?? 'projectDisabled');
      return;
    }
    for (let head = this.sessions.queues.head(projectId); head !== undefined; head = this.sessions.queues.head(projectId)) {
      const limit = project.settings.maxConcurrentSessions;
      if (limit > 0 && this.sessions.counts(projectId).liveUser >= limit) return;
      // Only workers holding the live build; one still copying it catches up and is placed on then.
      const workerId = choosePlacement(this.registry.placeable(project.region).filter((w) => this.canRunBuild(w.workerId, liveUploadId)));
      if (workerId === undefined) {
        if (!this.registry.hasServiceableWorker(project.region)) this.endWaiting(projectId, 'noWorker');
        return;
      }
      this.sessions.place(head, workerId, project);
    }
  }

  private endWaiting(projectId: string, cause: SessionEndCause): void {
    for (const sessionId of [...this.sessions.queues.waiting(projectId)]) this.sessions.end(sessionId, cause);
  }
}
