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
import { KeyedSerial } from '../lib/keyed-serial';
import type { BuildCopiesRepository, BuildCopy } from '../repositories/build-copies';
import type { BuildRecord, BuildsRepository } from '../repositories/builds';
import type { ProjectsRepository } from '../repositories/projects';
import type { WorkerRegistry } from '../workers/registry';
import type { AdvanceBuild } from './build-pipeline';
import { DISTRIBUTING } from './build-stages';
import { RunnableBuilds } from './runnable-builds';

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

/**
 * The store answers with promises, so the distribution's steps are ordered explicitly:
 * - per build (`perBuild`): every step that reads and writes a build's copies or status (start,
 *   a copy's outcome, a Hello's claim, a catch-up's send, the deadline, a canRun lookup) runs one
 *   at a time, in the order it came. A copy is recorded once per outcome, in order, and two workers
 *   reporting at once settle the build once: the second finds it no longer distributing.
 * - per worker (`perWorker`): the registry's events about a worker (Hello, a command finished,
 *   undrained) are taken in the order the registry emitted them, as when they ran inside its emit.
 * - per project (`perProject`): an approval and the live build it sets are one step, so the build
 *   approved last is the one left live.
 * The registry's listeners and the scheduler's canRun stay synchronous: the listeners start their
 * work and return (failures are logged), canRun answers from RunnableBuilds.
 */
export class BuildDistribution {
  private readonly deadlines = new Map<string, TimerHandle>();
  private readonly perBuild = new KeyedSerial<string>();
  private readonly perWorker = new KeyedSerial<string>();
  private readonly perProject = new KeyedSerial<string>();
  private readonly runnable = new RunnableBuilds();
  /** Pairs being read from the store for canRun (`uploadId\nworkerId`). */
  private readonly lookingUp = new Set<string>();
  /** Work started in the background (listeners, deadlines, lookups), until it settles. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly deps: BuildDistributionDeps) {
    // Once closed, nothing: the next start takes each worker's copies up again from its Hello.
    deps.registry.on('commandFinished', (workerId, command, ack) => {
      if (this.closed || command.kind !== 'prepareBuild') return;
      this.inBackground('copy finished', { workerId, uploadId: command.uploadId }, () => this.perWorker.run(workerId, () => this.onCommandFinished(workerId, command, ack)));
    });
    deps.registry.on('helloAccepted', (workerId, hello) => {
      if (this.closed) return;
      // Taken in before any scheduling run the Hello asks for can place a session on the worker.
      const catchUp = this.runnable.beginCatchUp(workerId);
      this.inBackground('hello', { workerId }, async () => {
        try {
          await this.perWorker.run(workerId, () => this.onHello(workerId, hello));
        } finally {
          catchUp.end();
          this.deps.requestScheduling();
        }
      });
    });
    // Undrained: it catches up now (an offline worker gets the commands with its next Hello).
    deps.registry.on('drainChanged', (workerId, draining) => {
      if (this.closed || draining) return;
      this.inBackground('undrained', { workerId }, () => this.perWorker.run(workerId, () => this.catchUp(workerId, (_uploadId, copy) => copy?.phase === 'ready')));
    });
  }

  /**
   * The build entered `Distributing to Servers` (the build service's call): copy it to the
   * region's workers. Resolves once the copies are sent and recorded (or the build settled).
   */
  start(build: BuildRecord): Promise<void> {
    // Closed: the build stays distributing, and the next start arms its deadline again (resumeAtStart).
    if (this.closed) return Promise.resolve();
    return this.perBuild.run(build.uploadId, async () => {
      // Read again in this build's turn: a step before it (a settlement) may have moved it on.
      const current = await this.deps.builds.findById(build.uploadId);
      if (current === undefined || current.status !== DISTRIBUTING) return;
      this.runnable.noteBuild(current.uploadId, current);
      const project = this.deps.projects.findById(current.projectId);
      if (project === undefined) return;
      if (current.archive === undefined) {
        // A local build (no source, no archive) is each agent's launcher.command: there is nothing to copy.
        if (current.fileUrl === undefined) await this.approve(current, 'a local build needs no copy');
        else await this.deps.advance(current.uploadId, 'Reject', NO_ARCHIVE_OBJECTION);
        return;
      }
      const targets = this.deps.registry.placeable(project.region);
      this.deps.log.info({ uploadId: current.uploadId, region: project.region, workers: targets.length }, 'distributing build');
      // The deadline first: a send that fails (a worker removed meanwhile) must not leave the build distributing forever.
      this.armDeadline(current.uploadId, this.deps.deadlineMs);
      for (const w of targets) {
        try {
          await this.send(current, w.workerId);
        } catch (err) {
          this.deps.log.error({ err, step: 'send', uploadId: current.uploadId, workerId: w.workerId }, 'a build distribution step failed');
        }
      }
      await this.settle(current.uploadId);
    });
  }

  /** At start: builds a previous run left distributing get their deadline back (their copies' acks still arrive). */
  async resumeAtStart(): Promise<void> {
    for (const build of await this.deps.builds.listDistributing()) {
      this.armDeadline(build.uploadId, Math.max(0, build.updatedAt + this.deps.deadlineMs - this.deps.clock.now()));
      await this.perBuild.run(build.uploadId, () => this.settle(build.uploadId));
    }
  }

  /**
   * True when the worker may run sessions of this live build: it holds it ready, or it is a local
   * build. Synchronous (the scheduler's placement runs in one go): answered from what the
   * distribution knows; a pair it does not know yet is no until read from the store, and a yes
   * read there asks the scheduler for another run.
   */
  canRun(workerId: string, uploadId: string): boolean {
    const known = this.runnable.answer(workerId, uploadId);
    if (known !== undefined) return known;
    this.lookUp(workerId, uploadId);
    return false;
  }

  /** Resolves once the work in flight has settled (tests; close()). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /**
   * Stops the deadlines and takes no new work (an ack or a Hello that arrives while the service
   * shuts down is taken up from the store at the next start: deadlines are armed again, and each
   * worker catches up on its Hello); resolves once the work in flight has settled, before the
   * database closes.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.deadlines.values()) t.cancel();
    this.deadlines.clear();
    await this.idle();
  }

  /** Runs work the caller does not wait for (a listener, a timer); a failure is logged with what failed. Nothing once closed. */
  private inBackground(step: string, fields: { workerId?: string; uploadId?: string }, work: () => Promise<unknown>): void {
    if (this.closed) return;
    const running = work().catch((err: unknown) => this.deps.log.error({ err, step, ...fields }, 'a build distribution step failed'));
    this.inFlight.add(running);
    void running.finally(() => this.inFlight.delete(running));
  }

  /** Reads whether the worker holds the build, in the build's turn; a yes asks the scheduler for another run. */
  private lookUp(workerId: string, uploadId: string): void {
    const key = `${uploadId}\n${workerId}`;
    if (this.closed || this.lookingUp.has(key)) return;
    this.lookingUp.add(key);
    this.inBackground('can run', { workerId, uploadId }, async () => {
      try {
        const yes = await this.perBuild.run(uploadId, async () => {
          const build = await this.deps.builds.findById(uploadId);
          this.runnable.noteBuild(uploadId, build);
          if (build?.archive === undefined) return true;
          const ready = (await this.deps.copies.find(uploadId, workerId))?.phase === 'ready';
          this.runnable.noteCopy(uploadId, workerId, ready);
          return ready;
        });
        if (yes) this.deps.requestScheduling();
      } finally {
        this.lookingUp.delete(key);
      }
    });
  }

  /** Sends the worker the build (PrepareBuild) and records its copy as sent; in the build's turn. */
  private async send(build: BuildRecord, workerId: string): Promise<void> {
    const archive = build.archive!;
    // Not runnable there from now: the copy being sent replaces whatever the worker had.
    this.runnable.noteCopy(build.uploadId, workerId, false);
    const { url } = this.deps.issueLink({ workerId, uploadId: build.uploadId, sha256: archive.sha256 });
    this.deps.registry.sendCommand(workerId, { kind: 'prepareBuild', uploadId: build.uploadId, projectId: build.projectId, downloadUrl: url, sizeBytes: archive.bytes, sha256: archive.sha256 });
    await this.putCopy({ uploadId: build.uploadId, workerId, phase: 'sent', error: undefined, updatedAt: this.deps.clock.now() });
  }

  /** Records the worker's copy, then notes it for canRun; in the build's turn. */
  private async putCopy(copy: BuildCopy): Promise<void> {
    await this.deps.copies.put(copy);
    this.runnable.noteCopy(copy.uploadId, copy.workerId, copy.phase === 'ready');
  }

  private async onCommandFinished(workerId: string, command: Extract<AgentCommand, { kind: 'prepareBuild' }>, ack: AgentAck): Promise<void> {
    const ready = ack.phase === 'SUCCEEDED';
    const error = ready ? undefined : [ack.errorCode, ack.errorMessage].filter((t) => t !== '').join(': ') || 'failed';
    await this.perBuild.run(command.uploadId, async () => {
      await this.putCopy({ uploadId: command.uploadId, workerId, phase: ready ? 'ready' : 'failed', error, updatedAt: this.deps.clock.now() });
      if (!ready) this.deps.log.warn({ uploadId: command.uploadId, workerId, error }, 'a worker could not prepare the build');
      // The scheduler may now place sessions of this build on the worker.
      if (ready) this.deps.requestScheduling();
      await this.settle(command.uploadId);
    });
  }

  /**
   * A worker (re)connected: what it holds ready is recorded from its Hello — believed only for a
   * copy this control plane sent it (a claim is not a copy: issue 22) — and, unless it is drained,
   * it catches up with the live build of every project of its region, and with any build being
   * distributed there. A drained worker gets no builds: it catches up when undrained.
   */
  private async onHello(workerId: string, hello: AgentHello): Promise<void> {
    const claims = hello.cachedBuilds.filter((claim) => claim.ready);
    // Every claim is queued in its build's turn at once, ahead of anything the Hello sets off after it.
    const believed = await Promise.all(
      claims.map((claim) =>
        this.perBuild.run(claim.uploadId, async () => {
          const copy = await this.deps.copies.find(claim.uploadId, workerId);
          if (copy === undefined || copy.phase === 'failed') return false;
          if (copy.phase === 'sent') await this.putCopy({ uploadId: claim.uploadId, workerId, phase: 'ready', error: undefined, updatedAt: this.deps.clock.now() });
          else this.runnable.noteCopy(claim.uploadId, workerId, true);
          return true;
        }),
      ),
    );
    const held = new Set(claims.filter((_, i) => believed[i]).map((claim) => claim.uploadId));
    if (!this.deps.registry.get(workerId).draining) await this.catchUp(workerId, (uploadId) => held.has(uploadId));
  }

  /** Sends the worker what its region runs or is being given, except what it holds. */
  private async catchUp(workerId: string, holds: (uploadId: string, copy: BuildCopy | undefined) => boolean): Promise<void> {
    const worker = this.deps.registry.get(workerId);
    const distributing = await this.deps.builds.listDistributing();
    const wanted = [...this.deps.projects.liveUploadsInRegion(worker.region), ...distributing.filter((b) => this.regionOf(b) === worker.region).map((b) => b.uploadId)];
    for (const uploadId of new Set(wanted)) {
      await this.perBuild.run(uploadId, async () => {
        const build = await this.deps.builds.findById(uploadId);
        this.runnable.noteBuild(uploadId, build);
        if (build?.archive === undefined) return;
        const copy = await this.deps.copies.find(uploadId, workerId);
        // A copy already on its way is resent by the registry with the worker's unfinished commands.
        if (holds(uploadId, copy) || copy?.phase === 'sent') {
          this.runnable.noteCopy(uploadId, workerId, copy?.phase === 'ready');
          return;
        }
        this.deps.log.info({ uploadId, workerId }, 'worker catches up with a build');
        await this.send(build, workerId);
      });
    }
  }

  /**
   * Ends the distribution once every copy has settled: Approved if any worker has it ready, else
   * Reject. In the build's turn: a second settlement finds the build no longer distributing.
   */
  private async settle(uploadId: string, deadlinePassed = false): Promise<void> {
    const build = await this.deps.builds.findById(uploadId);
    if (build === undefined || build.status !== DISTRIBUTING) {
      this.clearDeadline(uploadId);
      return;
    }
    const copies = await this.deps.copies.listOfBuild(uploadId);
    const ready = copies.filter((c) => c.phase === 'ready');
    const pending = copies.filter((c) => c.phase === 'sent');
    if (!deadlinePassed && (copies.length === 0 || pending.length > 0)) return;
    if (ready.length > 0) {
      await this.approve(build, `${ready.length} of ${copies.length} workers ready`);
      return;
    }
    this.clearDeadline(uploadId);
    await this.deps.advance(uploadId, 'Reject', this.objectionFor(build, copies, deadlinePassed));
  }

  private async approve(build: BuildRecord, why: string): Promise<void> {
    this.clearDeadline(build.uploadId);
    await this.perProject.run(build.projectId, async () => {
      await this.deps.advance(build.uploadId, 'Approved');
      this.deps.projects.setLiveUpload(build.projectId, build.uploadId);
    });
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
        this.inBackground('deadline', { uploadId }, () => this.perBuild.run(uploadId, () => this.settle(uploadId, true)));
      }, ms),
    );
  }

  private clearDeadline(uploadId: string): void {
    this.deadlines.get(uploadId)?.cancel();
    this.deadlines.delete(uploadId);
  }
}
