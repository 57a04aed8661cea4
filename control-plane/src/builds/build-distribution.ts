// Distribution: a build in `Distributing to Servers` is copied to every connected, undrained worker
// of its project's region (PrepareBuild with a download link bound to that worker and build, its
// size and SHA-256; the agent downloads with Range resume, verifies and extracts). Each worker's
// copy is recorded (build_copies); when every copy has settled the build is `Approved` and becomes
// the project's live build if at least one worker has it ready, else `Reject` naming each worker
// and why. A deadline (`distribution.deadlineSeconds`) settles it with what is ready by then. A
// worker that connects later catches up with its region's live builds before it takes their
// sessions: placement only picks workers holding the project's live build.
import type { Logger } from 'pino';
import type { AgentAck, AgentCommand, AgentHello } from '@pixelfleet/proto';
import type { Clock, TimerHandle } from '@pixelfleet/common';
import type { BuildCopiesRepository } from '../repositories/build-copies';
import type { BuildRecord, BuildsRepository } from '../repositories/builds';
import type { ProjectsRepository } from '../repositories/projects';
import type { WorkerRegistry } from '../workers/registry';
import type { AdvanceBuild } from './build-pipeline';
import { DISTRIBUTING } from './build-stages';

export interface BuildDistributionDeps {
  builds: BuildsRepository;
  copies: BuildCopiesRepository;
  projects: ProjectsRepository;
  registry: WorkerRegistry;
  /** A download link for the worker (archive-links.ts). */
  issueLink: (link: { workerId: string; uploadId: string; sha256: string }) => { url: string };
  advance: AdvanceBuild;
  /** Asks the scheduler for a run (a worker became able to take a project's sessions). */
  requestScheduling: () => void;
  /** How long a distribution may take before it is settled with what is ready. */
  deadlineMs: number;
  clock: Clock;
  log: Logger;
}

/** A submitted build activated before the pipeline saved its archive (its status was changed by hand). */
export const NO_ARCHIVE_OBJECTION = 'the build has no archive in the repository to distribute; please submit it again';

export class BuildDistribution {
  private readonly deadlines = new Map<string, TimerHandle>();

  constructor(private readonly deps: BuildDistributionDeps) {
    deps.registry.on('commandFinished', (workerId, command, ack) => this.onCommandFinished(workerId, command, ack));
    deps.registry.on('helloAccepted', (workerId, hello) => this.onHello(workerId, hello));
    // Undrained: it catches up now (an offline worker gets the commands with its next Hello).
    deps.registry.on('drainChanged', (workerId, draining) => {
      if (!draining) this.catchUp(workerId, (uploadId) => this.deps.copies.find(uploadId, workerId)?.phase === 'ready');
    });
  }

  /** The build entered `Distributing to Servers` (the build service's call): copy it to the region's workers. */
  start(build: BuildRecord): void {
    const project = this.deps.projects.findById(build.projectId);
    if (project === undefined) return;
    if (build.archive === undefined) {
      // A local build (no source, no archive) is each agent's launcher.command: there is nothing to copy.
      if (build.fileUrl === undefined) this.approve(build, 'a local build needs no copy');
      else this.deps.advance(build.uploadId, 'Reject', NO_ARCHIVE_OBJECTION);
      return;
    }
    const targets = this.deps.registry.placeable(project.region);
    this.deps.log.info({ uploadId: build.uploadId, region: project.region, workers: targets.length }, 'distributing build');
    for (const w of targets) this.send(build, w.workerId);
    this.armDeadline(build.uploadId, this.deps.deadlineMs);
    this.settle(build.uploadId);
  }

  /** At start: builds a previous run left distributing get their deadline back (their copies' acks still arrive). */
  resumeAtStart(): void {
    for (const build of this.deps.builds.listDistributing()) {
      this.armDeadline(build.uploadId, Math.max(0, build.updatedAt + this.deps.deadlineMs - this.deps.clock.now()));
      this.settle(build.uploadId);
    }
  }

  /** True when the worker may run sessions of this live build: it holds it ready, or it is a local build. */
  canRun(workerId: string, uploadId: string): boolean {
    const build = this.deps.builds.findById(uploadId);
    if (build === undefined || build.archive === undefined) return true;
    return this.deps.copies.find(uploadId, workerId)?.phase === 'ready';
  }

  close(): void {
    for (const t of this.deadlines.values()) t.cancel();
    this.deadlines.clear();
  }

  private send(build: BuildRecord, workerId: string): void {
    const archive = build.archive!;
    const { url } = this.deps.issueLink({ workerId, uploadId: build.uploadId, sha256: archive.sha256 });
    this.deps.registry.sendCommand(workerId, { kind: 'prepareBuild', uploadId: build.uploadId, projectId: build.projectId, downloadUrl: url, sizeBytes: archive.bytes, sha256: archive.sha256 });
    this.deps.copies.put({ uploadId: build.uploadId, workerId, phase: 'sent', error: undefined, updatedAt: this.deps.clock.now() });
  }

  private onCommandFinished(workerId: string, command: AgentCommand, ack: AgentAck): void {
    if (command.kind !== 'prepareBuild') return;
    const ready = ack.phase === 'SUCCEEDED';
    const error = ready ? undefined : [ack.errorCode, ack.errorMessage].filter((t) => t !== '').join(': ') || 'failed';
    this.deps.copies.put({ uploadId: command.uploadId, workerId, phase: ready ? 'ready' : 'failed', error, updatedAt: this.deps.clock.now() });
    if (!ready) this.deps.log.warn({ uploadId: command.uploadId, workerId, error }, 'a worker could not prepare the build');
    // The scheduler may now place sessions of this build on the worker.
    if (ready) this.deps.requestScheduling();
    this.settle(command.uploadId);
  }

  /**
   * A worker (re)connected: what it holds ready is recorded from its Hello — believed only for a
   * copy this control plane sent it (a claim is not a copy: issue 22) — and, unless it is drained,
   * it catches up with the live build of every project of its region, and with any build being
   * distributed there. A drained worker gets no builds: it catches up when undrained.
   */
  private onHello(workerId: string, hello: AgentHello): void {
    const held = new Set<string>();
    for (const claim of hello.cachedBuilds) {
      if (!claim.ready) continue;
      const copy = this.deps.copies.find(claim.uploadId, workerId);
      if (copy === undefined || copy.phase === 'failed') continue;
      held.add(claim.uploadId);
      if (copy.phase === 'sent') this.deps.copies.put({ uploadId: claim.uploadId, workerId, phase: 'ready', error: undefined, updatedAt: this.deps.clock.now() });
    }
    if (!this.deps.registry.get(workerId).draining) this.catchUp(workerId, (uploadId) => held.has(uploadId));
  }

  /** Sends the worker what its region runs or is being given, except what it holds. */
  private catchUp(workerId: string, holds: (uploadId: string) => boolean): void {
    const worker = this.deps.registry.get(workerId);
    const wanted = [...this.deps.projects.liveUploadsInRegion(worker.region), ...this.deps.builds.listDistributing().filter((b) => this.regionOf(b) === worker.region).map((b) => b.uploadId)];
    for (const uploadId of new Set(wanted)) {
      if (holds(uploadId)) continue;
      const build = this.deps.builds.findById(uploadId);
      if (build?.archive === undefined) continue;
      // A copy already on its way is resent by the registry with the worker's unfinished commands.
      if (this.deps.copies.find(uploadId, workerId)?.phase === 'sent') continue;
      this.deps.log.info({ uploadId, workerId }, 'worker catches up with a build');
      this.send(build, workerId);
    }
  }

  /** Ends the distribution once every copy has settled: Approved if any worker has it ready, else Reject. */
  private settle(uploadId: string, deadlinePassed = false): void {
    const build = this.deps.builds.findById(uploadId);
    if (build === undefined || build.status !== DISTRIBUTING) {
      this.clearDeadline(uploadId);
      return;
    }
    const copies = this.deps.copies.listOfBuild(uploadId);
    const ready = copies.filter((c) => c.phase === 'ready');
    const pending = copies.filter((c) => c.phase === 'sent');
    if (!deadlinePassed && (copies.length === 0 || pending.length > 0)) return;
    if (ready.length > 0) {
      this.approve(build, `${ready.length} of ${copies.length} workers ready`);
      return;
    }
    this.clearDeadline(uploadId);
    this.deps.advance(uploadId, 'Reject', this.objectionFor(build, copies, deadlinePassed));
  }

  private approve(build: BuildRecord, why: string): void {
    this.clearDeadline(build.uploadId);
    this.deps.advance(build.uploadId, 'Approved');
    this.deps.projects.setLiveUpload(build.projectId, build.uploadId);
    this.deps.log.info({ uploadId: build.uploadId, projectId: build.projectId, why }, 'build approved: it is the live build');
    this.deps.requestScheduling();
  }

  /** Names each worker and what went wrong, in words a customer can read. */
  private objectionFor(build: BuildRecord, copies: readonly { workerId: string; phase: string; error: string | undefined }[], deadlinePassed: boolean): string {
    const region = this.regionOf(build) ?? 'its region';
    if (copies.length === 0) return `no streaming server in ${region} was available to receive the build`;
    const named = copies.map((c) => `${this.nameOf(c.workerId)} (${c.phase === 'failed' ? c.error ?? 'failed' : 'not ready in time'})`).join(', ');
    const why = deadlinePassed ? `no streaming server had the build ready within ${Math.round(this.deps.deadlineMs / 60_000)} minutes` : 'the copy to every streaming server failed';
    return `${why}: ${named}`.slice(0, 1_000);
  }

  private nameOf(workerId: string): string {
    try {
      return this.deps.registry.get(workerId).hostname;
    } catch {
      return workerId;
    }
  }

  private regionOf(build: BuildRecord): string | undefined {
    return this.deps.projects.findById(build.projectId)?.region;
  }

  private armDeadline(uploadId: string, ms: number): void {
    this.clearDeadline(uploadId);
    this.deadlines.set(
      uploadId,
      this.deps.clock.setTimeout(() => {
        this.deadlines.delete(uploadId);
        this.settle(uploadId, true);
      }, ms),
    );
  }

  private clearDeadline(uploadId: string): void {
    this.deadlines.get(uploadId)?.cancel();
    this.deadlines.delete(uploadId);
  }
}
