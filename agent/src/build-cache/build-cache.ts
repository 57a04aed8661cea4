// The agent's build cache, owner of `<dataDir>/builds/`: PrepareBuild downloads a distributed
// build (Range-resumable, hash-checked), extracts it behind the build archive's guards into
// `<uploadId>/` and records it in the index; DeleteBuild and eviction remove builds, never one a
// running session holds (before a download, eviction makes room for the build it brings). The
// session runtime acquires a build for as long as its app runs.
// Longer than ~400 lines: the one owner of `<dataDir>/builds/` (downloads, extraction, index,
// eviction, leases all change the same folder); the download and index live beside it.
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { mkdir, rename, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CachedBuild, PrepareBuildCommand } from '@pixelfleet/proto';
import type { Clock } from '@pixelfleet/common';
import { ArchiveRejection, DEFAULT_ARCHIVE_LIMITS, extractArchive, sizeOnDisk, type ArchiveLimits, type ArchiveManifest } from '@pixelfleet/build-archive';
import { CommandFailure } from '../commands/command';
import { DEFAULT_BUILD_DOWNLOAD_RETRY, downloadVerified, type BuildDownloadRetry, type BuildDownloadTls } from './build-download';
import { readBuildIndex, writeBuildIndex, type CachedBuildRecord } from './build-index';

export interface BuildCacheOptions {
  /** The folder the cache owns, `<dataDir>/builds`; created when missing. */
  dir: string;
  /** Evict builds beyond each project's two newest while the builds (and a download's estimate) take more than this (bytes). */
  maxBytes: number;
  clock: Clock;
  log: Logger;
  /** Guards for extraction (default DEFAULT_ARCHIVE_LIMITS). */
  limits?: ArchiveLimits;
  /** Download retries (default DEFAULT_BUILD_DOWNLOAD_RETRY). */
  retry?: Partial<BuildDownloadRetry>;
  /** Uniform in [0, 1): the backoff's jitter (default Math.random). */
  random?: () => number;
  /** Free bytes beside a folder (default fs.statfs): checked before the download, and by extractArchive. */
  freeBytes?: (dir: string) => Promise<number>;
  /** Called once a download retry's wait is scheduled on the clock. */
  onBackoff?: (uploadId: string, delayMs: number, failures: number) => void;
  /** The worker token once enrolled: sent with each archive download (the route checks the link's worker against it). */
  workerToken?: () => string | undefined;
  /** The agent config's `tls` for downloads: `caFile` trusted as on the control link, `insecure` for plain http:// to another machine (default {}). */
  tls?: BuildDownloadTls;
}

/** A build held for a running session: its files stay until release(). */
export interface BuildLease {
  /** The extracted build's root folder. */
  readonly path: string;
  readonly manifest: ArchiveManifest;
  /** Lets the build go (idempotent); a deletion or eviction waiting for it then runs. */
  release(): void;
}

/** Unreal's Saved folder of an extracted packaged build: `<build>/<Project>/Saved` (code and Blueprint-only projects alike). */
export function unrealSavedDir(buildDir: string, manifest: Pick<ArchiveManifest, 'projectName'>): string {
  return join(buildDir, manifest.projectName, 'Saved');
}

/** What a build's extracted tree is estimated to take, per archive byte, while PrepareBuild does not say it. */
const EXTRACTED_PER_ARCHIVE_BYTE = 2;
/** Share of the progress percent the download takes; extraction fills the rest. */
const DOWNLOAD_SHARE = 70;
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,128}$/;
const SHA256 = /^[0-9a-f]{64}$/;
const INDEX_FILE = 'index.json';
const DELETING = '.deleting-';

export class BuildCache {
  private readonly records = new Map<string, CachedBuildRecord>();
  /** Downloads in flight: the work itself, and what callers of prepare() wait for. */
  private readonly preparing = new Map<string, { sha256: string; promise: Promise<CachedBuildRecord>; answer: Promise<CachedBuildRecord>; abort: AbortController }>();
  private readonly holds = new Map<string, number>();
  /** Builds to delete once their last lease is released (no longer listed). */
  private readonly deferredDeletes = new Set<string>();
  private readonly closing = new AbortController();
  /** Removals and evictions run one at a time, in order. */
  private removals: Promise<void> = Promise.resolve();
  /** Bytes each build being prepared is expected to take (its archive and its extracted tree). */
  private readonly reserved = new Map<string, number>();
  private readonly limits: ArchiveLimits;
  private readonly retry: BuildDownloadRetry;
  private readonly log: Logger;

  /** Loads the index and sweeps leftovers (synchronous: runs once, before any command). */
  constructor(private readonly options: BuildCacheOptions) {
    this.limits = options.limits ?? DEFAULT_ARCHIVE_LIMITS;
    this.retry = { ...DEFAULT_BUILD_DOWNLOAD_RETRY, ...options.retry };
    this.log = options.log;
    this.sweep();
  }

  /** Builds for the Hello inventory: ready ones, and those being prepared (ready false). */
  list(): CachedBuild[] {
    const ready = [...this.records.values()].filter((r) => !this.deferredDeletes.has(r.uploadId)).map((r) => ({ uploadId: r.uploadId, sha256: r.sha256, ready: true }));
    const pending = [...this.preparing].filter(([id]) => !this.records.has(id)).map(([id, p]) => ({ uploadId: id, sha256: p.sha256, ready: false }));
    return [...ready, ...pending];
  }

  /** The ready build's record, or undefined. */
  get(uploadId: string): CachedBuildRecord | undefined {
    return this.deferredDeletes.has(uploadId) ? undefined : this.records.get(uploadId);
  }

  /** Where a build is (or would be) extracted: `<dir>/<uploadId>`. */
  pathOf(uploadId: string): string {
    return join(this.options.dir, checkedUploadId(uploadId));
  }

  /**
   * Holds a ready build for a running session: DeleteBuild and eviction leave it alone until
   * the lease is released.
   * @throws CommandFailure BUILD_NOT_READY when the cache does not hold it.
   */
  acquire(uploadId: string): BuildLease {
    const record = this.get(uploadId);
    if (!record) throw new CommandFailure('BUILD_NOT_READY', `build ${uploadId} is not ready on this worker`);
    this.holds.set(uploadId, (this.holds.get(uploadId) ?? 0) + 1);
    let released = false;
    return {
      path: this.pathOf(uploadId),
      manifest: record.manifest,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.holds.get(uploadId) ?? 1) - 1;
        if (left > 0) {
          this.holds.set(uploadId, left);
          return;
        }
        this.holds.delete(uploadId);
        if (this.deferredDeletes.has(uploadId)) void this.enqueue(() => this.remove(uploadId));
        void this.enqueue(() => this.evict());
      },
    };
  }

  /**
   * PrepareBuild: download, verify, extract and record the build; at once when it is already
   * ready. Progress is a percent over download (0–70) and extraction (70–100).
   * @throws CommandFailure HASH_MISMATCH, SIZE_MISMATCH, DOWNLOAD_FAILED, DISK_FULL, an archive
   *   rejection's code with its objection, BAD_COMMAND; nothing but a `.part` is left behind.
   */
  prepare(command: PrepareBuildCommand, onProgress: (percent: number) => void = () => {}, signal?: AbortSignal): Promise<CachedBuildRecord> {
    try {
      return this.startPrepare(command, onProgress, signal);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private startPrepare(command: PrepareBuildCommand, onProgress: (percent: number) => void, signal: AbortSignal | undefined): Promise<CachedBuildRecord> {
    const uploadId = checkedUploadId(command.uploadId);
    const sha256 = command.sha256.toLowerCase();
    if (!SHA256.test(sha256)) throw new CommandFailure('BAD_COMMAND', 'the PrepareBuild command has no valid SHA-256');
    if (!Number.isSafeInteger(command.sizeBytes) || command.sizeBytes <= 0) throw new CommandFailure('BAD_COMMAND', 'the PrepareBuild command has no valid size');
    const known = this.records.get(uploadId);
    if (known) {
      if (known.sha256 !== sha256) throw new CommandFailure('BUILD_CONFLICT', `build ${uploadId} is already cached with SHA-256 ${known.sha256}, not ${sha256}`);
      // Asked again (a rollback, a re-distribution): it counts as the newest, and a deletion waiting for its release is called off.
      this.deferredDeletes.delete(uploadId);
      const refreshed = { ...known, preparedAtMs: this.options.clock.now() };
      this.records.set(uploadId, refreshed);
      this.saveIndex();
      onProgress(100);
      return Promise.resolve(refreshed);
    }
    const running = this.preparing.get(uploadId);
    if (running) return running.answer;
    const abort = new AbortController();
    const signals = [abort.signal, this.closing.signal, ...(signal ? [signal] : [])];
    const combined = AbortSignal.any(signals);
    const promise = this.download(uploadId, { ...command, uploadId, sha256 }, onProgress, combined)
      .catch((err: unknown) => {
        if (!combined.aborted) throw err;
        // Whatever the step that noticed the abort threw, the command ends with the reason.
        const reason: unknown = combined.reason;
        throw reason instanceof CommandFailure ? reason : new CommandFailure('ABORTED', `preparing build ${uploadId} was stopped: ${(reason as Error).message}`);
      })
      .finally(() => {
        this.preparing.delete(uploadId);
        this.reserved.delete(uploadId);
      });
    // A prepare stopped by close() never settles for its caller: the command gets no outcome, so
    // the journal records none and the control plane's redelivery after a restart resumes the
    // download from its `.part`, exactly as after a kill.
    const answer = new Promise<CachedBuildRecord>((resolve, reject) => {
      promise.then(resolve, (err: unknown) => {
        if (!this.closing.signal.aborted) reject(err instanceof Error ? err : new Error(String(err)));
      });
    });
    this.preparing.set(uploadId, { sha256, promise, answer, abort });
    return answer;
  }

  /** DeleteBuild: removes the build (and any partial download); deferred while a session holds it. */
  async delete(uploadId: string): Promise<void> {
    const id = checkedUploadId(uploadId);
    const running = this.preparing.get(id);
    if (running) {
      running.abort.abort(new CommandFailure('BUILD_DELETED', `build ${id} was deleted while it was being prepared`));
      await running.promise.catch(() => undefined);
    }
    if ((this.holds.get(id) ?? 0) > 0) {
      this.deferredDeletes.add(id);
      this.log.info({ uploadId: id }, 'build in use by a session; deleting it once released');
      return;
    }
    await this.enqueue(() => this.remove(id));
  }

  /** Resolves once the removals and evictions queued so far have run. */
  async whenIdle(): Promise<void> {
    await this.removals;
  }

  /** Aborts downloads in flight (their `.part` stays for a resume; their prepare() never settles) and waits for removals; idempotent. */
  async close(): Promise<void> {
    this.closing.abort(new Error('the build cache is closing'));
    await Promise.allSettled([...this.preparing.values()].map((p) => p.promise));
    await this.removals;
  }

  private async download(uploadId: string, command: PrepareBuildCommand, onProgress: (percent: number) => void, signal: AbortSignal): Promise<CachedBuildRecord> {
    const log = this.log.child({ uploadId, projectId: command.projectId });
    const dir = this.options.dir;
    const part = join(dir, `${uploadId}.zip.part`);
    const zip = join(dir, `${uploadId}.zip`);
    const dest = join(dir, uploadId);
    await mkdir(dir, { recursive: true });
    let lastPercent = -1;
    const report = (percent: number) => {
      const whole = Math.floor(percent);
      if (whole <= lastPercent) return;
      lastPercent = whole;
      onProgress(whole);
    };
    const started = this.options.clock.now();
    // A verified archive left by a kill during extraction: the download finds it whole and only hashes it.
    await rename(zip, part).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    // A folder without a record (the agent died between extraction and the index write) is redone.
    await rm(dest, { recursive: true, force: true });
    log.info({ sizeBytes: command.sizeBytes }, 'preparing build');
    // Room first: the ready builds plus what the builds being prepared will take must fit under
    // maxBytes. When they cannot, the download goes on: the free-disk checks still guard the disk.
    const reserve = command.sizeBytes * (1 + EXTRACTED_PER_ARCHIVE_BYTE);
    this.reserved.set(uploadId, reserve);
    await this.enqueue(async () => {
      if (!(await this.evict())) {
        log.warn({ reserveBytes: reserve, cacheBytes: this.cachedBytes(), maxBytes: this.options.maxBytes }, 'the build cache cannot make room for this build (each project keeps its two newest, sessions hold others); preparing it anyway');
      }
    }).catch(() => undefined); // a failed removal is logged by enqueue; the build still comes
    // The archive must fit beside what is already downloaded; extraction checks its own needs.
    const free = await (this.options.freeBytes ?? statfsFreeBytes)(dir);
    const missing = command.sizeBytes - (await sizeOnDisk(part));
    if (free < missing) {
      throw new CommandFailure('DISK_FULL', `the worker has too little free disk for the build: it needs ${missing} more bytes and ${free} are free`);
    }
    await downloadVerified({
      url: command.downloadUrl,
      zipPath: zip,
      sizeBytes: command.sizeBytes,
      sha256: command.sha256,
      clock: this.options.clock,
      retry: this.retry,
      random: this.options.random ?? Math.random,
      onBytes: (bytes) => report((bytes / command.sizeBytes) * DOWNLOAD_SHARE),
      onBackoff: (delayMs, failures) => this.options.onBackoff?.(uploadId, delayMs, failures),
      signal,
      log,
      ...(this.options.tls ? { tls: this.options.tls } : {}),
      workerToken: this.options.workerToken?.(),
    });
    let manifest: ArchiveManifest;
    try {
      manifest = await extractArchive(zip, dest, this.limits, {
        signal,
        onProgress: (p) => report(DOWNLOAD_SHARE + (p.bytesTotal > 0 ? (p.bytesDone / p.bytesTotal) * (100 - DOWNLOAD_SHARE) : 0)),
        ...(this.options.freeBytes ? { freeBytes: this.options.freeBytes } : {}),
      });
    } catch (err) {
      if (signal.aborted) throw err;
      // A verified archive that fails the guards will fail them again: nothing is kept.
      await rm(zip, { force: true });
      if (err instanceof ArchiveRejection) {
        log.warn({ code: err.code, objection: err.objection }, 'distributed build rejected');
        throw new CommandFailure(err.code, err.objection);
      }
      throw err;
    }
    const record: CachedBuildRecord = { uploadId, projectId: command.projectId, sha256: command.sha256, archiveBytes: command.sizeBytes, manifest, preparedAtMs: this.options.clock.now() };
    this.records.set(uploadId, record);
    this.reserved.delete(uploadId);
    this.saveIndex();
    await rm(zip, { force: true });
    report(100);
    log.info({ durationMs: this.options.clock.now() - started, totalBytes: manifest.totalBytes, executable: manifest.executable }, 'build ready');
    void this.enqueue(() => this.evict());
    return record;
  }

  /**
   * Keeps each project's two most recently prepared builds (the live one and the one before,
   * for rollback); evicts the others, oldest first, while the builds and the bytes reserved by
   * builds being prepared exceed maxBytes. A build a session holds is skipped (evicted on a later
   * pass once released). Resolves with whether everything now fits.
   */
  private async evict(): Promise<boolean> {
    const live = [...this.records.values()];
    const reserved = [...this.reserved.values()].reduce((sum, n) => sum + n, 0);
    let total = live.reduce((sum, r) => sum + r.manifest.totalBytes, reserved);
    if (total <= this.options.maxBytes) return true;
    const byProject = new Map<string, CachedBuildRecord[]>();
    for (const r of live) byProject.set(r.projectId, [...(byProject.get(r.projectId) ?? []), r]);
    const kept = new Set<string>();
    for (const builds of byProject.values()) {
      for (const r of [...builds].sort(newestFirst).slice(0, 2)) kept.add(r.uploadId);
    }
    const candidates = live.filter((r) => !kept.has(r.uploadId)).sort((a, b) => newestFirst(b, a));
    for (const r of candidates) {
      if (total <= this.options.maxBytes) break;
      if ((this.holds.get(r.uploadId) ?? 0) > 0) continue;
      this.log.info({ uploadId: r.uploadId, projectId: r.projectId, totalBytes: r.manifest.totalBytes, cacheBytes: total, maxBytes: this.options.maxBytes }, 'evicting build');
      await this.remove(r.uploadId);
      total -= r.manifest.totalBytes;
    }
    return total <= this.options.maxBytes;
  }

  /** Bytes the ready builds take on disk. */
  private cachedBytes(): number {
    return [...this.records.values()].reduce((sum, r) => sum + r.manifest.totalBytes, 0);
  }

  /** Drops the record (index first), then the files: a crash mid-way leaves only sweepable leftovers. */
  private async remove(uploadId: string): Promise<void> {
    if ((this.holds.get(uploadId) ?? 0) > 0) return;
    this.deferredDeletes.delete(uploadId);
    const dir = this.options.dir;
    const doomed = join(dir, `${DELETING}${uploadId}-${randomBytes(4).toString('hex')}`);
    let moved = true;
    await rename(join(dir, uploadId), doomed).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      moved = false;
    });
    if (this.records.delete(uploadId)) this.saveIndex();
    await Promise.all([
      moved ? rm(doomed, { recursive: true, force: true }) : undefined,
      rm(join(dir, `${uploadId}.zip.part`), { force: true }),
      rm(join(dir, `${uploadId}.zip`), { force: true }),
    ]);
    this.log.info({ uploadId }, 'build deleted');
  }

  private enqueue(step: () => Promise<unknown>): Promise<void> {
    const next = this.removals.then(async () => {
      await step();
    });
    this.removals = next.catch((err: unknown) => this.log.error({ err }, 'build removal failed'));
    return next;
  }

  private saveIndex(): void {
    writeBuildIndex(join(this.options.dir, INDEX_FILE), [...this.records.values()]);
  }

  /**
   * On start: drops index records whose folder is gone, removes half-extracted (`.extracting-`)
   * and half-deleted folders and build folders the index does not know; keeps `.part` and
   * verified `.zip` downloads for a resume.
   */
  private sweep(): void {
    const dir = this.options.dir;
    let records: CachedBuildRecord[] = [];
    try {
      records = readBuildIndex(join(dir, INDEX_FILE));
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'build index unreadable; starting with an empty cache');
    }
    let changed = false;
    for (const r of records) {
      if (UPLOAD_ID.test(r.uploadId) && isDirectory(join(dir, r.uploadId))) this.records.set(r.uploadId, r);
      else changed = true;
    }
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    for (const name of names) {
      if (name === INDEX_FILE || name.endsWith('.zip.part') || name.endsWith('.zip')) continue;
      const path = join(dir, name);
      if (!isDirectory(path) || this.records.has(name)) continue;
      this.log.info({ folder: name }, 'removing a leftover build folder');
      rmSync(path, { recursive: true, force: true });
    }
    if (changed) this.saveIndex();
  }
}

async function statfsFreeBytes(dir: string): Promise<number> {
  const fsStats = await statfs(dir);
  return fsStats.bavail * fsStats.bsize;
}

function newestFirst(a: CachedBuildRecord, b: CachedBuildRecord): number {
  return b.preparedAtMs - a.preparedAtMs;
}

function checkedUploadId(uploadId: string): string {
  if (!UPLOAD_ID.test(uploadId)) throw new CommandFailure('BAD_COMMAND', 'the upload id is not a valid build id');
  return uploadId;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
