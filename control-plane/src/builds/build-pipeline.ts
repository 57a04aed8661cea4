// The build pipeline: takes a submitted build from `pending` through download, extract & scan and
// save to `Ready` (autoRelease false) or `Distributing to Servers` (true), one stage at a time
// through BuildService.advance, so every status is committed before its event and webhook fire.
// Builds run in submission order, a few at a time. Every stage is safe to run again, so a build a
// restart caught mid-stage resumes from its recorded status: the download from its `.part` file
// (Range), the scan from the downloaded archive, the save (content-addressed, so saving the same
// archive twice stores it once). What cannot resume ends `Reject` with an objection saying so.
// The archive is read twice in all, each time at disk speed: hashed as it downloads, then
// scanned (inflated and checked, never extracted: only the agents run it); the save renames it
// into the blob store under the digest the download computed.
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ArchiveRejection, verifyArchive, type ArchiveLimits } from '@pixelfleet/build-archive';
import type { Clock } from '@pixelfleet/common';
import type { BlobStore } from '../blobs/blob-store';
import type { BuildRecord, BuildsRepository } from '../repositories/builds';
import { BuildDownloadError, discardPartialDownload, DownloadAbortedError, downloadBuild, type DownloadRetry, type UrlCheck } from './build-download';
import type { BuildStatus } from './build-stages';

/** What `pixelfleet admin builds` and the logs show of a build the pipeline is working on. */
export interface BuildProgress {
  status: BuildStatus;
  /** Bytes downloaded, scanned or saved so far in this stage. */
  bytes: number;
  /** The stage's total, when known. */
  totalBytes: number | undefined;
  /** Download rate, bytes per second (downloads only). */
  bytesPerSecond: number | undefined;
  /** Seconds left at that rate, when known. */
  etaSeconds: number | undefined;
}

/** The build service's one step (BuildService.advance): a status change through the stage table, committed, then fired. */
export type AdvanceBuild = (uploadId: string, to: BuildStatus, objection?: string) => Promise<BuildRecord>;

export interface BuildPipelineOptions {
  blobs: BlobStore;
  /** Where downloads land (`<dataDir>/pipeline`): `<uploadId>.zip` and its `.part`; on the blob store's file system, the save is a rename. */
  workDir: string;
  /** The outbound URL policy, for the fileUrl and every redirect. */
  checkUrl: UrlCheck;
  /** `limits.maxBuildBytes`: the archive's cap while downloading and saving. */
  maxBuildBytes: number;
  archiveLimits: ArchiveLimits;
  downloadRetry?: DownloadRetry;
  /** A download attempt that receives nothing for this long fails and is retried. */
  stallTimeoutMs?: number;
  /** Builds processed at once (each is one download and one scan). */
  concurrency: number;
  log: Logger;
}

export interface BuildPipelineDeps extends BuildPipelineOptions {
  advance: AdvanceBuild;
  builds: BuildsRepository;
  clock: Clock;
}

/** The objection of a build a restart caught where it cannot resume. */
export const INTERRUPTED_OBJECTION = 'processing was interrupted by a restart of the service and the downloaded archive is gone; please submit the build again';
/** The objection when something failed on our side, not the archive's (the log says what). */
export const INTERNAL_OBJECTION = 'the build could not be processed because of an error in the service; please submit it again';

export class BuildPipeline {
  private readonly waiting: string[] = [];
  private readonly running = new Map<string, AbortController>();
  private readonly progress = new Map<string, BuildProgress>();
  private readonly idleWaiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly deps: BuildPipelineDeps) {}

  /** A build was submitted (or found unfinished): it runs when a place is free. */
  enqueue(uploadId: string): void {
    if (this.closed || this.running.has(uploadId) || this.waiting.includes(uploadId)) return;
    this.waiting.push(uploadId);
    this.pump();
  }

  /**
   * At start: every build a previous run left in a pipeline status resumes from there. A build
   * submitted meanwhile is enqueued once (enqueue skips a build waiting or running), and a listed
   * build that has moved on since is left alone (process() starts from the status it reads then).
   */
  async resumeUnfinished(): Promise<void> {
    for (const build of await this.deps.builds.listUnfinished()) {
      this.deps.log.info({ uploadId: build.uploadId, status: build.status }, 'resuming an unfinished build');
      this.enqueue(build.uploadId);
    }
  }

  /** The build's progress while the pipeline works on it. */
  progressOf(uploadId: string): BuildProgress | undefined {
    return this.progress.get(uploadId);
  }

  /** Resolves when no build is waiting or running (tests, shutdown). */
  idle(): Promise<void> {
    if (this.waiting.length === 0 && this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking builds and aborts the running ones where they stand; they stay in their status
   * (a download keeps its `.part`) and resume on the next start. Resolves once they have stopped.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.waiting.length = 0;
    for (const controller of this.running.values()) controller.abort(new Error('the control plane is shutting down'));
    await this.idle();
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.deps.concurrency && this.waiting.length > 0) {
      const uploadId = this.waiting.shift()!;
      const controller = new AbortController();
      this.running.set(uploadId, controller);
      // process() ends every failure of the build itself; what escapes it (the store not answering
      // while the build is read or ended) is logged, and the build resumes from its status at the next start.
      void this.process(uploadId, controller.signal)
        .catch((err: unknown) => this.deps.log.error({ err, uploadId }, 'build processing stopped by an unexpected error'))
        .finally(() => {
          this.running.delete(uploadId);
          this.progress.delete(uploadId);
          this.pump();
          if (this.waiting.length === 0 && this.running.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
        });
    }
  }

  private async process(uploadId: string, signal: AbortSignal): Promise<void> {
    const log = this.deps.log.child({ uploadId });
    const paths = this.pathsOf(uploadId);
    let build = await this.deps.builds.findById(uploadId);
    if (build === undefined) return;
    try {
      await mkdir(this.deps.workDir, { recursive: true });
      if (build.status === 'pending') build = await this.deps.advance(uploadId, 'Downloading Files');
      if (build.status === 'Downloading Files') build = await this.download(build, paths, signal, log);
      if (build.status === 'Extracting & Scanning') build = await this.scan(build, paths, signal, log);
      if (build.status === 'Saving to Repository') build = await this.save(build, paths, log);
    } catch (err) {
      if (signal.aborted || err instanceof DownloadAbortedError) {
        log.info({ status: build.status }, 'build processing stopped for the shutdown; it resumes at the next start');
        return;
      }
      await this.fail(build, err, paths, log);
    }
  }

  private async download(build: BuildRecord, paths: WorkPaths, signal: AbortSignal, log: Logger): Promise<BuildRecord> {
    // A restart between the download's rename and the next status finds the archive whole.
    if (!existsSync(paths.zip)) {
      if (build.fileUrl === undefined) throw new Error('a pipeline build without a fileUrl');
      const started = this.deps.clock.now();
      // Shown at once; the download reports real figures every few seconds.
      this.progress.set(build.uploadId, { status: 'Downloading Files', bytes: 0, totalBytes: undefined, bytesPerSecond: undefined, etaSeconds: undefined });
      const downloaded = await downloadBuild({
        url: build.fileUrl,
        destPath: paths.zip,
        checkUrl: this.deps.checkUrl,
        maxBytes: this.deps.maxBuildBytes,
        clock: this.deps.clock,
        log,
        ...(this.deps.downloadRetry ? { retry: this.deps.downloadRetry } : {}),
        ...(this.deps.stallTimeoutMs ? { stallTimeoutMs: this.deps.stallTimeoutMs } : {}),
        // The download logs each report itself.
        onProgress: (p) => this.progress.set(build.uploadId, { status: 'Downloading Files', bytes: p.bytes, totalBytes: p.totalBytes, bytesPerSecond: p.bytesPerSecond, etaSeconds: p.etaSeconds }),
        signal,
      });
      // Recorded before the next status: the save moves this very file into the store under it.
      await this.deps.builds.recordArchive(build.uploadId, { sha256: downloaded.sha256, bytes: downloaded.bytes });
      log.info({ bytes: downloaded.bytes, sha256: downloaded.sha256, ms: this.deps.clock.now() - started }, 'build downloaded');
    }
    return this.deps.advance(build.uploadId, 'Extracting & Scanning');
  }

  /**
   * Inspects the central directory (guards, limits, the Unreal layout: the manifest), then reads
   * every entry's data through the same checks as the agents' extraction (CRC-32, sizes).
   */
  private async scan(build: BuildRecord, paths: WorkPaths, signal: AbortSignal, log: Logger): Promise<BuildRecord> {
    if (!existsSync(paths.zip)) return this.deps.advance(build.uploadId, 'Reject', INTERRUPTED_OBJECTION);
    const manifest = await verifyArchive(paths.zip, this.deps.archiveLimits, {
      signal,
      onProgress: (p) => this.progress.set(build.uploadId, { status: 'Extracting & Scanning', bytes: p.bytesDone, totalBytes: p.bytesTotal, bytesPerSecond: undefined, etaSeconds: undefined }),
    });
    await this.deps.builds.recordManifest(build.uploadId, manifest);
    log.info({ platform: manifest.platform, projectName: manifest.projectName, executable: manifest.executable, fileCount: manifest.fileCount, totalBytes: manifest.totalBytes }, 'build scanned');
    return this.deps.advance(build.uploadId, 'Saving to Repository');
  }

  /**
   * The archive goes to the blob store (content-addressed) under the digest its download computed;
   * an archive a restart left unhashed (killed between the download's rename and its record) is
   * hashed as it is copied in. Then the build is Ready or distributing.
   */
  private async save(build: BuildRecord, paths: WorkPaths, log: Logger): Promise<BuildRecord> {
    const recorded = (await this.deps.builds.findById(build.uploadId))?.archive;
    if (recorded === undefined || !(await this.deps.blobs.has(recorded.sha256))) {
      if (!existsSync(paths.zip)) return this.deps.advance(build.uploadId, 'Reject', INTERRUPTED_OBJECTION);
      if (recorded !== undefined) {
        await this.deps.blobs.adopt(paths.zip, { sha256: recorded.sha256, size: recorded.bytes });
        log.info({ sha256: recorded.sha256, bytes: recorded.bytes }, 'build saved to the repository');
      } else {
        const stored = await this.deps.blobs.write(createReadStream(paths.zip), this.deps.maxBuildBytes);
        await this.deps.builds.recordArchive(build.uploadId, { sha256: stored.sha256, bytes: stored.size });
        log.info({ sha256: stored.sha256, bytes: stored.size }, 'build saved to the repository (hashed again: the download left no record)');
      }
    }
    await rm(paths.zip, { force: true });
    return this.deps.advance(build.uploadId, build.autoRelease ? 'Distributing to Servers' : 'Ready');
  }

  /** The build ends: the archive's or the download's objection, or ours; its work files go. */
  private async fail(build: BuildRecord, err: unknown, paths: WorkPaths, log: Logger): Promise<void> {
    const current = (await this.deps.builds.findById(build.uploadId)) ?? build;
    let to: BuildStatus;
    let objection: string;
    if (err instanceof BuildDownloadError) {
      to = err.outcome;
      objection = err.objection;
    } else if (err instanceof ArchiveRejection) {
      to = 'Reject';
      objection = err.objection;
    } else if (isDiskFull(err)) {
      to = current.status === 'Downloading Files' ? 'Download Failed' : 'Reject';
      objection = 'the service ran out of disk space while processing the build; please submit it again later';
    } else {
      log.error({ err, status: current.status }, 'build processing failed');
      to = current.status === 'Downloading Files' ? 'Download Failed' : 'Reject';
      objection = INTERNAL_OBJECTION;
    }
    log.warn({ status: current.status, to, objection }, 'build ended');
    await this.removeWork(paths);
    try {
      await this.deps.advance(build.uploadId, to, objection);
    } catch (moveErr) {
      log.error({ err: moveErr, status: current.status, to }, 'the failed build could not be moved to its end status');
    }
  }

  private async removeWork(paths: WorkPaths): Promise<void> {
    await rm(paths.zip, { force: true });
    await discardPartialDownload(paths.zip);
  }

  private pathsOf(uploadId: string): WorkPaths {
    return { zip: join(this.deps.workDir, `${uploadId}.zip`) };
  }
}

interface WorkPaths {
  /** The downloaded archive (its download writes `<zip>.part` first). */
  zip: string;
}

function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}
