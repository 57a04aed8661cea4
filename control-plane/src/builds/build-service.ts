// Builds' domain: submit one (upload-file), activate one (distribute-file, set-active-build), list a
// project's builds, and the pipeline's steps. Every status change asks the stage table
// (build-stages.ts) and is committed with its updatedAt; only then are its fleet event recorded
// and its webhook sent. The routes authorize first and call in here.
import { ApiError, conflict, notFound } from '../errors';
import type { EventLog } from '../events/event-log';
import type { Clock } from '@pixelfleet/common';
import type { IdSource } from '../lib/ids';
import { KeyedSerial } from '../lib/keyed-serial';
import type { BuildRecord, BuildsRepository, BuildStageEntry } from '../repositories/builds';
import { checkOutboundUrl, type UrlPolicyOptions } from '../webhooks/url-policy';
import { buildEventEnvelope, type BuildEvent } from '../webhooks/webhook-envelope';
import type { WebhookSender } from '../webhooks/webhook-sender';
import type { BuildCallLimit } from './build-call-limit';
import { BUILD_STAGES, DISTRIBUTING, INITIAL_BUILD_STATUS, requireBuildMove, type BuildMove, type BuildStatus } from './build-stages';
import { BuildPipeline, type BuildPipelineOptions, type BuildProgress } from './build-pipeline';

/** `autoRelease` when the upload does not say (the spec leaves it open): stop at Ready. */
export const DEFAULT_AUTO_RELEASE = false;

export interface BuildServiceDeps {
  builds: BuildsRepository;
  events: EventLog;
  webhooks: Pick<WebhookSender, 'emit'>;
  /** The spec's build-call window, taken after every other check of a build call has passed. */
  buildCalls: BuildCallLimit;
  /** The outbound URL policy a `fileUrl` must pass. */
  urlPolicy: UrlPolicyOptions;
  clock: Clock;
  ids: IdSource;
  /** How the pipeline downloads, scans and saves; without it (tests of the API alone) builds wait in `pending`. */
  pipeline?: BuildPipelineOptions;
  /**
   * Copies a build that entered `Distributing to Servers` to the region's workers
   * (build-distribution.ts); resolves once the copies are sent and recorded.
   */
  distribution?: { start(build: BuildRecord): Promise<void> };
}

export interface SubmitBuild {
  /** The caller, whose build-call window the submission uses. */
  userId: string;
  projectId: string;
  fileUrl: string;
  autoRelease: boolean;
}

/** A build as the dashboard's builds page shows it. */
export interface BuildTimeline {
  build: BuildRecord;
  stages: BuildStageEntry[];
  /** Bytes, rate and time left of the stage the pipeline is working on; undefined when it is not. */
  progress: BuildProgress | undefined;
}

export class BuildService {
  /** Takes each submitted build through its stages; asked by name from submit(). */
  readonly pipeline: BuildPipeline | undefined;
  /**
   * Each build's status changes, one at a time: one is committed and fired before the next is
   * tried, so a build's fleet events and webhooks go out in the order its statuses were entered.
   */
  private readonly moves = new KeyedSerial<string>();

  constructor(private readonly deps: BuildServiceDeps) {
    this.pipeline =
      deps.pipeline &&
      new BuildPipeline({ ...deps.pipeline, advance: (uploadId, to, objection) => this.advance(uploadId, to, objection), builds: deps.builds, clock: deps.clock });
  }

  /**
   * upload-file, after authorization: the fileUrl policy (400 `Invalid fileUrl: …`), the caller's
   * build-call window (429), then a new `pending` build; fires `build.uploaded`.
   */
  async submit(input: SubmitBuild): Promise<BuildRecord> {
    const verdict = await checkOutboundUrl(input.fileUrl, this.deps.urlPolicy);
    if (!verdict.ok) throw new ApiError('invalidField', { detail: `Invalid fileUrl: ${verdict.reason}` });
    const giveBack = this.deps.buildCalls.take(input.userId);
    const now = this.deps.clock.now();
    const build: BuildRecord = {
      uploadId: this.deps.ids.next('upl'),
      projectId: input.projectId,
      fileUrl: input.fileUrl,
      status: INITIAL_BUILD_STATUS,
      objection: undefined,
      autoRelease: input.autoRelease,
      live: false,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.deps.builds.insert(build);
    } catch (err) {
      // Not stored, so not accepted: the window is the caller's again.
      giveBack();
      throw err;
    }
    await this.fire(build, BUILD_STAGES[INITIAL_BUILD_STATUS].event, { uploadId: build.uploadId, autoRelease: build.autoRelease });
    this.pipeline?.enqueue(build.uploadId);
    return build;
  }

  /**
   * distribute-file and set-active-build, after authorization: the project's upload (404 `Upload
   * not found`, also for another project's), a status an activation may start from (400), the
   * caller's build-call window (429), then `Distributing to Servers`; fires `build.distributing`.
   * setLive: the dashboard's Set Live, whose webhook reports the status as `Distribute` (spec).
   */
  async activate(input: { userId: string; projectId: string; uploadId: string; setLive?: boolean }): Promise<BuildRecord> {
    const build = await this.findOfProject(input.projectId, input.uploadId);
    requireBuildMove(build.uploadId, build.status, DISTRIBUTING, 'activation');
    const giveBack = this.deps.buildCalls.take(input.userId);
    let moved: BuildRecord | undefined;
    try {
      moved = await this.commitMove(build, DISTRIBUTING, 'activation', undefined, { uploadId: build.uploadId, by: input.userId, ...(input.setLive ? { setLive: true } : {}) }, input.setLive === true);
    } catch (err) {
      // The store refused or did not answer the move (its firing cannot fail: the event log logs its
      // own failures and webhooks are sent in the background): not accepted, the window goes back.
      giveBack();
      throw err;
    }
    if (moved === undefined) {
      // Another call moved it first (a second activation, a settlement): this call was not accepted,
      // so it gives its window back and is refused for the status the build has now.
      giveBack();
      const now = await this.findOfProject(input.projectId, input.uploadId);
      requireBuildMove(now.uploadId, now.status, DISTRIBUTING, 'activation');
      throw conflict(`Build ${build.uploadId} changed status while moving to ${DISTRIBUTING}`);
    }
    await this.deps.distribution?.start(moved);
    return moved;
  }

  /**
   * One step of the pipeline (download, extract, save, distribute, finish), as the stage table
   * allows; `objection` is the reason of a `Reject` or `Download Failed`.
   */
  async advance(uploadId: string, to: BuildStatus, objection?: string): Promise<BuildRecord> {
    const build = await this.deps.builds.findById(uploadId);
    if (!build) throw notFound(`build ${uploadId} not found`);
    return this.move(build, to, 'pipeline', objection, objection === undefined ? { uploadId } : { uploadId, objection });
  }

  /** A project's builds, newest first. */
  list(projectId: string): Promise<BuildRecord[]> {
    return this.deps.builds.listByProject(projectId);
  }

  /**
   * A page of a project's builds, newest first, each with the stages it entered and the pipeline's
   * progress on it (while it works on it), and how many builds the project has. The page and the
   * stages are two reads: a move committed between them shows in the next poll, never lost.
   */
  async timelines(projectId: string, page: { limit: number; skip: number }): Promise<{ total: number; timelines: BuildTimeline[] }> {
    const { total, builds } = await this.deps.builds.pageByProject(projectId, page.limit, page.skip);
    const stages = await this.deps.builds.stagesOf(builds.map((b) => b.uploadId));
    return { total, timelines: builds.map((build) => ({ build, stages: stages.get(build.uploadId) ?? [], progress: this.pipeline?.progressOf(build.uploadId) })) };
  }

  /** An upload of another project is as unknown as a missing one. */
  private async findOfProject(projectId: string, uploadId: string): Promise<BuildRecord> {
    const build = await this.deps.builds.findById(uploadId);
    if (!build || build.projectId !== projectId) throw new ApiError('uploadNotFound');
    return build;
  }

  /**
   * setLive: the webhook reports the status the spec gives Set Live (the stage's setLiveStatus).
   * The status is compared and set in one statement (moveStatus), so of two callers that read the
   * same status (a pipeline step and an activation, two settlements), the second is refused and
   * fires nothing; the commit and its firing are one step of the build's `moves`. The
   * distribution starts after that step (it may move the build itself: a local build is approved).
   */
  private async move(build: BuildRecord, to: BuildStatus, move: BuildMove, objection: string | undefined, data: Record<string, unknown>, setLive = false): Promise<BuildRecord> {
    const moved = await this.commitMove(build, to, move, objection, data, setLive);
    if (moved === undefined) throw conflict(`Build ${build.uploadId} changed status while moving to ${to}`);
    if (to === DISTRIBUTING) await this.deps.distribution?.start(moved);
    return moved;
  }

  /** The move's commit and its firing, one step of the build's `moves`; undefined when the build had left `build.status` meanwhile. */
  private commitMove(build: BuildRecord, to: BuildStatus, move: BuildMove, objection: string | undefined, data: Record<string, unknown>, setLive: boolean): Promise<BuildRecord | undefined> {
    const stage = requireBuildMove(build.uploadId, build.status, to, move);
    return this.moves.run(build.uploadId, async () => {
      const now = this.deps.clock.now();
      // Only from the status the table was asked about: a change that came in between is refused, not overwritten.
      if (!(await this.deps.builds.moveStatus(build.uploadId, build.status, to, objection, now))) return undefined;
      const entered: BuildRecord = { ...build, status: to, objection, updatedAt: now };
      await this.fire(entered, stage.event, data, setLive ? stage.setLiveStatus : undefined);
      return entered;
    });
  }

  /** The fleet event and then the webhook of a build that has entered its status (already committed). */
  private async fire(build: BuildRecord, event: BuildEvent, data: Record<string, unknown>, reportedStatus: string = build.status): Promise<void> {
    await this.deps.events.record(event, { projectId: build.projectId }, data);
    this.deps.webhooks.emit(build.projectId, buildEventEnvelope(event, reportedStatus, build, this.deps.clock.now()));
  }
}
