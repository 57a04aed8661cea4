// The one HTTP download of a build archive, used by the control plane (a customer's fileUrl) and
// the agent (the control plane's archive link): streamed to `<destPath>.part` through a pipelined
// write stream, every hop checked by the caller's policy, Range resume (If-Range), stall timeout
// and full-jitter retries on the injected Clock, ZIP header, byte cap or expected size, SHA-256
// on the way, then rename into place. It ends with the file or an ArchiveDownloadError.
// Longer than ~400 lines: one download's state (hops, resume validator, retries, stall, hash) is
// shared by every step; the policy and the failure words live beside it (download-failure.ts).
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest, type RequestOptions as HttpsRequestOptions } from 'node:https';
import { rootCertificates } from 'node:tls';
import type { LookupFunction } from 'node:net';
import { dirname } from 'node:path';
import { backoffDelayMs, type Clock, type TimerHandle } from '@pixelfleet/common';
import { ArchiveDownloadError, errorCode, failureWords, isRetryable, type DownloadFailure } from './download-failure';

/** What a hop policy says of one URL (the first, or a redirect target). */
export type HopVerdict = { ok: true; url: URL; lookup?: LookupFunction } | { ok: false; reason: string };

/**
 * Checks one hop before it is requested. `hop` is 0 for the first URL. A `lookup` pins the
 * connection to the addresses the policy checked (each attempt opens a fresh connection for it).
 */
export type HopPolicy = (raw: string, hop: number) => Promise<HopVerdict>;

/** Retries of network errors, stalls and 5xx/408/429 answers. */
export interface ArchiveDownloadRetry {
  /** Failed attempts in a row before giving up (default 5). An attempt that brought at least 1 MiB starts the count again. */
  maxAttempts: number;
  /** Backoff ceiling of the first retry, in ms (default 1,000); doubles per failure. */
  initialMs: number;
  /** Largest backoff ceiling, in ms (default 30,000); the delay is uniform below it (full jitter). */
  maxMs: number;
}

export const DEFAULT_ARCHIVE_DOWNLOAD_RETRY: Readonly<ArchiveDownloadRetry> = Object.freeze({ maxAttempts: 5, initialMs: 1_000, maxMs: 30_000 });

/** How the download is doing. */
export interface DownloadProgress {
  /** Bytes of the file on disk so far (a resumed download counts its earlier part). */
  bytes: number;
  /** The file's size when known (the expected size, Content-Length or Content-Range), else undefined. */
  totalBytes: number | undefined;
  /** Bytes received per second since the previous report. */
  bytesPerSecond: number;
  /** Seconds left at that rate, when the size is known and the rate is not zero. */
  etaSeconds: number | undefined;
}

/** The lines the download logs (a pino Logger fits). */
export interface DownloadLog {
  debug(fields: object, msg: string): void;
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

export interface ArchiveDownloadOptions {
  url: string;
  /** Where the archive lands; it is written to `<destPath>.part` first. */
  destPath: string;
  hopPolicy: HopPolicy;
  /**
   * PEM of the CA(s) an https hop's certificate must chain to on the first URL's origin, instead of
   * Node's bundled roots (the agent's `tls.caFile`); on another origin (an object store the first
   * one redirects to) beside them. Default: the bundled roots. The host name is checked either way.
   */
  ca?: string | Buffer;
  /** Redirects followed before giving up. */
  maxRedirects: number;
  /**
   * An Authorization header for the hops on the first URL's origin (the agent's worker credential
   * on the control plane's archive route); never sent to another origin (an object store's
   * presigned URL, which carries its own signature and would refuse a second credential).
   */
  authorization?: string;
  /**
   * `advertised`: Range only to a server that said `Accept-Ranges: bytes` (or, after a restart, to
   * resume a kept part); `assumed`: the server is known to serve ranges (the control plane's archive route).
   */
  ranges: 'advertised' | 'assumed';
  /** A cap on the file's size in bytes (too-large past it). */
  maxBytes?: number;
  /** The size the file must have (size-mismatch otherwise; a shorter answer is retried). */
  expectedBytes?: number;
  /** Lower-case hex SHA-256 the file must have: a wrong one downloads the whole file once more, then hash-mismatch. */
  expectedSha256?: string;
  clock: Clock;
  /** Uniform in [0, 1): the backoff's jitter (default Math.random). */
  random?: () => number;
  log: DownloadLog;
  retry?: ArchiveDownloadRetry;
  /** No byte (or no answer) for this long fails the attempt, in ms of the clock (default 60,000). */
  stallTimeoutMs?: number;
  /** Progress is reported at most this often, in ms of the clock (default 5,000; 0: every chunk). */
  progressIntervalMs?: number;
  /** Called with progress; a throwing callback is logged and ignored. */
  onProgress?: (progress: DownloadProgress) => void;
  /** Called once a retry's wait is scheduled on the clock. */
  onBackoff?: (delayMs: number, failures: number) => void;
  /** fsync the file and its folder around the rename (default true): a recorded download survives a power loss. */
  durable?: boolean;
  /** Aborts with kind `aborted`; the `.part` is kept (when it holds bytes) for a resume. */
  signal?: AbortSignal;
}

export interface DownloadedArchive {
  bytes: number;
  sha256: string;
}

/** An attempt that brought this many bytes resets the failure count: a long download over a flaky link still finishes. */
const PROGRESS_RESETS_FAILURES_BYTES = 1024 * 1024;
/** The write stream buffers up to this much before write() asks to wait for 'drain'. */
const WRITE_HIGH_WATER_MARK = 1024 * 1024;
const ZIP_LOCAL_FILE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const ZIP_EMPTY_ARCHIVE = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;

const isZipStart = (head: Buffer) => head.subarray(0, 4).equals(ZIP_LOCAL_FILE) || head.subarray(0, 4).equals(ZIP_EMPTY_ARCHIVE);

/**
 * Downloads `url` to `destPath` (see the file comment); resolves with the file's size and SHA-256.
 * @throws ArchiveDownloadError; the `.part` stays (a resume starts after it) except after a hash mismatch.
 */
export async function downloadArchive(options: ArchiveDownloadOptions): Promise<DownloadedArchive> {
  return new ArchiveDownload(options).run();
}

/** A failure of one attempt (caught by the retry loop). */
class AttemptFailure extends Error {
  constructor(
    readonly failure: DownloadFailure,
    options?: { cause?: unknown },
  ) {
    super(failureWords(failure), options);
  }
}

class ArchiveDownload {
  private readonly part: string;
  private readonly retry: ArchiveDownloadRetry;
  private readonly stallTimeoutMs: number;
  private readonly abortFailure = new AttemptFailure({ kind: 'aborted' });
  private hash: Hash = createHash('sha256');
  /** Bytes in the `.part` file and in the hash. */
  private offset = 0;
  private totalBytes: number | undefined;
  /** Whether a Range request may resume (`advertised` mode): undefined until a server has said. */
  private rangesAccepted: boolean | undefined;
  /** The next attempt starts from byte 0 (a refused or misplaced resume). */
  private startOver = false;
  /** Strong ETag or Last-Modified of the file, sent as If-Range so a changed file is sent whole. */
  private validator: string | undefined;
  /** Ends the request, response or backoff wait in flight with the given failure (stall, abort). */
  private interrupt: ((err: AttemptFailure) => void) | undefined;
  private stall: TimerHandle | undefined;
  private lastActivityAt: number;
  private received = 0;
  private lastReport: { at: number; received: number };

  constructor(private readonly o: ArchiveDownloadOptions) {
    this.part = `${o.destPath}.part`;
    this.retry = o.retry ?? DEFAULT_ARCHIVE_DOWNLOAD_RETRY;
    this.stallTimeoutMs = o.stallTimeoutMs ?? 60_000;
    this.lastActivityAt = o.clock.now();
    this.lastReport = { at: o.clock.now(), received: 0 };
  }

  async run(): Promise<DownloadedArchive> {
    const { clock, log, signal } = this.o;
    const started = clock.now();
    const onAbort = () => this.interrupt?.(this.abortFailure);
    signal?.addEventListener('abort', onAbort);
    try {
      await mkdir(dirname(this.o.destPath), { recursive: true });
      await this.adoptPartial();
      log.info({ host: hostOf(this.o.url), resumeFrom: this.offset, maxBytes: this.o.maxBytes, expectedBytes: this.o.expectedBytes }, 'build download started');
      for (let whole = 1; ; whole += 1) {
        await this.fetchRest();
        const sha256 = this.hash.digest('hex');
        const expected = this.o.expectedSha256;
        if (expected === undefined || sha256 === expected) {
          await this.commit();
          log.info({ bytes: this.offset, sha256, durationMs: clock.now() - started }, 'build downloaded');
          return { bytes: this.offset, sha256 };
        }
        await rm(this.part, { force: true });
        const bytes = this.offset;
        this.restart();
        if (whole >= 2) throw new ArchiveDownloadError({ kind: 'hash-mismatch', expected, actual: sha256 }, bytes);
        log.warn({ expected, actual: sha256 }, 'downloaded build has the wrong SHA-256; downloading it again');
      }
    } catch (err) {
      this.stopStallTimer();
      if (signal?.aborted || (err instanceof AttemptFailure && err.failure.kind === 'aborted')) {
        // An empty .part goes; one with bytes stays, whether counted yet or not (an abort while a
        // kept .part is being re-hashed leaves offset 0 and the file whole).
        if ((await sizeOnDisk(this.part)) === 0) await rm(this.part, { force: true });
        log.info({ bytes: this.offset }, 'build download aborted; .part kept for a resume');
        throw new ArchiveDownloadError({ kind: 'aborted' }, this.offset);
      }
      if (err instanceof AttemptFailure) throw new ArchiveDownloadError(err.failure, this.offset, 0, { cause: err.cause });
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Attempts (with retries) until the `.part` holds the whole file. */
  private async fetchRest(): Promise<void> {
    const { log, signal } = this.o;
    if (this.o.expectedBytes !== undefined && this.offset === this.o.expectedBytes) return;
    let failures = 0;
    for (;;) {
      if (signal?.aborted) throw this.abortFailure;
      const receivedBefore = this.received;
      try {
        await this.attempt();
        this.stopStallTimer();
        return;
      } catch (err) {
        this.stopStallTimer();
        const failure = this.classify(err);
        if (!isRetryable(failure.failure) || signal?.aborted) throw failure;
        failures = this.received - receivedBefore >= PROGRESS_RESETS_FAILURES_BYTES ? 1 : failures + 1;
        if (failures >= this.retry.maxAttempts) throw new ArchiveDownloadError(failure.failure, this.offset, failures, { cause: failure.cause });
        const delayMs = backoffDelayMs(failures - 1, this.retry, this.o.random ?? Math.random);
        log.warn({ failures, delayMs, bytes: this.offset, error: failure.message }, 'build download failed; retrying');
        const wait = this.sleep(delayMs);
        this.o.onBackoff?.(delayMs, failures);
        await wait;
      }
    }
  }

  /** Takes over a `.part` left by an aborted or killed run: hashes its bytes so the download resumes after them. */
  private async adoptPartial(): Promise<void> {
    let size: number;
    try {
      size = (await stat(this.part)).size;
    } catch {
      return;
    }
    const cap = this.o.expectedBytes ?? this.o.maxBytes ?? Infinity;
    if (size < 4 || size > cap) return;
    let head: Buffer | undefined;
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(this.part, this.o.signal ? { signal: this.o.signal } : {}) as AsyncIterable<Buffer>) {
      head ??= chunk.subarray(0, 4);
      if (!isZipStart(head)) return;
      hash.update(chunk);
    }
    this.hash = hash;
    this.offset = size;
    this.o.log.info({ bytes: size }, 'resuming a build download from its .part file');
  }

  /** Starts the file over: a server that cannot resume sends it whole. */
  private restart(): void {
    this.hash = createHash('sha256');
    this.offset = 0;
    this.startOver = false;
  }

  private canResume(): boolean {
    return this.o.ranges === 'assumed' || this.rangesAccepted !== false;
  }

  private async attempt(): Promise<void> {
    if (this.offset > 0 && (this.startOver || !this.canResume())) this.restart();
    const resumeAt = this.offset;
    const { res, redirectedHost } = await this.follow(resumeAt);
    const status = res.statusCode ?? 0;
    if (status === 416 && resumeAt > 0) {
      res.destroy();
      const total = /^bytes \*\/(\d+)$/.exec(res.headers['content-range'] ?? '');
      if (total !== null && Number(total[1]) === resumeAt && this.fits(resumeAt)) return; // the .part was already whole
      this.refuseResume();
      throw new AttemptFailure({ kind: 'cannot-resume', wrongPlace: false });
    }
    if (status !== 200 && status !== 206) {
      res.destroy();
      throw new AttemptFailure({ kind: 'http-status', status, ...(redirectedHost === undefined ? {} : { redirectedHost }) });
    }
    let announced: number | undefined;
    if (status === 206) {
      const range = CONTENT_RANGE.exec(res.headers['content-range'] ?? '');
      if (range === null || Number(range[1]) !== resumeAt) {
        res.destroy();
        this.refuseResume();
        throw new AttemptFailure({ kind: 'cannot-resume', wrongPlace: true });
      }
      this.rangesAccepted = true;
      announced = range[3] === '*' ? undefined : Number(range[3]);
    } else {
      if (resumeAt > 0) {
        this.o.log.info({ bytes: resumeAt }, 'the server sent the whole file instead of the rest; starting over');
        this.restart();
      }
      if (this.o.ranges === 'advertised') this.rangesAccepted = res.headers['accept-ranges']?.toLowerCase() === 'bytes';
      const length = res.headers['content-length'];
      announced = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
    }
    this.totalBytes = announced ?? this.o.expectedBytes;
    if (announced !== undefined && this.o.maxBytes !== undefined && announced > this.o.maxBytes) {
      res.destroy();
      throw new AttemptFailure({ kind: 'too-large', maxBytes: this.o.maxBytes, totalBytes: announced });
    }
    if (announced !== undefined && this.o.expectedBytes !== undefined && announced !== this.o.expectedBytes) {
      res.destroy();
      throw new AttemptFailure({ kind: 'size-mismatch', expectedBytes: this.o.expectedBytes, servedBytes: announced });
    }
    const etag = res.headers.etag;
    this.validator = etag !== undefined && !etag.startsWith('W/') ? etag : res.headers['last-modified'];
    await this.receive(res);
  }

  /** Whether `bytes` is a size the file may have. */
  private fits(bytes: number): boolean {
    return (this.o.expectedBytes === undefined || bytes === this.o.expectedBytes) && (this.o.maxBytes === undefined || bytes <= this.o.maxBytes);
  }

  private refuseResume(): void {
    this.startOver = true;
    if (this.o.ranges === 'advertised') this.rangesAccepted = false;
  }

  /**
   * Streams the body into the `.part` file after `offset`, checking, counting and hashing. Writes
   * are pipelined: the loop waits only when the write stream's buffer is full ('drain'), never per
   * chunk, so the network and the disk work at once.
   */
  private async receive(res: IncomingMessage): Promise<void> {
    // 0600: a customer's build, in a folder other accounts may pass through (app-accounts.ts).
    const out = createWriteStream(this.part, { flags: this.offset === 0 ? 'w' : 'r+', start: this.offset, mode: 0o600, highWaterMark: WRITE_HIGH_WATER_MARK });
    let diskError: unknown;
    const closed = new Promise<void>((resolve) => out.once('close', () => resolve()));
    out.on('error', (err) => {
      diskError ??= err;
      res.destroy(new AttemptFailure({ kind: 'disk', code: errorCode(err) }, { cause: err }));
    });
    let head: Buffer | undefined = this.offset === 0 ? Buffer.alloc(0) : undefined;
    const cap = this.o.expectedBytes ?? this.o.maxBytes ?? Infinity;
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        this.lastActivityAt = this.o.clock.now();
        let data = chunk;
        if (head !== undefined) {
          head = Buffer.concat([head, chunk]);
          if (head.length < 4) continue;
          if (!isZipStart(head)) throw new AttemptFailure({ kind: 'not-zip', head, contentType: res.headers['content-type'] });
          data = head;
          head = undefined;
        }
        if (this.offset + data.length > cap) throw this.overflow();
        this.hash.update(data);
        this.offset += data.length;
        this.received += data.length;
        if (!out.write(data) && diskError === undefined) await Promise.race([once(out, 'drain'), closed]);
        this.report();
      }
      if (head !== undefined) throw new AttemptFailure({ kind: 'not-zip', head, contentType: res.headers['content-type'] });
      if (this.totalBytes !== undefined && this.offset !== this.totalBytes) throw new AttemptFailure({ kind: 'cut-short', bytes: this.offset, totalBytes: this.totalBytes });
    } catch (err) {
      res.destroy();
      // The bytes already counted still reach the file (end, not destroy), so offset stays its size for a resume.
      out.end();
      await closed;
      if (diskError !== undefined) throw new AttemptFailure({ kind: 'disk', code: errorCode(diskError) }, { cause: diskError });
      throw err;
    }
    out.end();
    await closed;
    if (diskError !== undefined) throw new AttemptFailure({ kind: 'disk', code: errorCode(diskError) }, { cause: diskError });
  }

  private overflow(): AttemptFailure {
    if (this.o.expectedBytes !== undefined) return new AttemptFailure({ kind: 'size-mismatch', expectedBytes: this.o.expectedBytes, servedBytes: undefined });
    return new AttemptFailure({ kind: 'too-large', maxBytes: this.o.maxBytes ?? Infinity, totalBytes: undefined });
  }

  /** Requests the URL and follows redirects, each hop checked by the policy; resolves with the final answer (and its host, when on another origin). */
  private async follow(resumeAt: number): Promise<{ res: IncomingMessage; redirectedHost?: string }> {
    let target = this.o.url;
    let firstOrigin: string | undefined;
    for (let hop = 0; ; hop += 1) {
      const verdict = await this.o.hopPolicy(target, hop);
      if (!verdict.ok) throw new AttemptFailure({ kind: 'refused-url', hop, url: target, reason: verdict.reason });
      firstOrigin ??= verdict.url.origin;
      const home = verdict.url.origin === firstOrigin;
      const headers: OutgoingHttpHeaders = { 'user-agent': 'Pixelfleet-Build-Download/1', accept: '*/*', 'accept-encoding': 'identity' };
      if (this.o.authorization !== undefined && home) headers.authorization = this.o.authorization;
      if (resumeAt > 0) {
        headers.range = `bytes=${resumeAt}-`;
        if (this.validator !== undefined) headers['if-range'] = this.validator;
      }
      const res = await this.get(verdict, headers, home);
      const location = res.headers.location;
      if (!REDIRECTS.has(res.statusCode ?? 0) || location === undefined) return home ? { res } : { res, redirectedHost: verdict.url.host };
      res.destroy();
      if (hop >= this.o.maxRedirects) throw new AttemptFailure({ kind: 'too-many-redirects', maxRedirects: this.o.maxRedirects });
      try {
        target = new URL(location, verdict.url).href;
      } catch {
        throw new AttemptFailure({ kind: 'bad-redirect' });
      }
      this.o.log.debug({ host: hostOf(target), hop: hop + 1 }, 'build download redirected');
    }
  }

  /** One GET on a fresh connection (a pooled one would skip a pinned lookup); the stall timer runs until the body ends. */
  private get(verdict: Extract<HopVerdict, { ok: true }>, headers: OutgoingHttpHeaders, home: boolean): Promise<IncomingMessage> {
    this.startStallTimer();
    return new Promise<IncomingMessage>((resolve, reject) => {
      const options: HttpsRequestOptions = { method: 'GET', headers, agent: false };
      if (verdict.lookup !== undefined) options.lookup = verdict.lookup;
      const https = verdict.url.protocol === 'https:';
      if (https && this.o.ca !== undefined) options.ca = home ? this.o.ca : [...rootCertificates, this.o.ca];
      const send = https ? httpsRequest : httpRequest;
      const req = send(verdict.url, options, (res) => {
        this.lastActivityAt = this.o.clock.now();
        this.interrupt = (err) => res.destroy(err);
        resolve(res);
      });
      this.interrupt = (err) => req.destroy(err);
      req.on('error', (err) => reject(err));
      if (this.o.signal?.aborted) req.destroy(this.abortFailure);
      req.end();
    });
  }

  /**
   * Fails the exchange in flight once nothing arrived for stallTimeoutMs of the clock. One timer,
   * re-armed for the time left when it fires early, so a chunk costs no timer of its own.
   */
  private startStallTimer(): void {
    this.stopStallTimer();
    this.lastActivityAt = this.o.clock.now();
    const check = () => {
      const idle = this.o.clock.now() - this.lastActivityAt;
      if (idle >= this.stallTimeoutMs) {
        this.stall = undefined;
        this.interrupt?.(new AttemptFailure({ kind: 'stalled', stallTimeoutMs: this.stallTimeoutMs }));
      } else this.stall = this.o.clock.setTimeout(check, this.stallTimeoutMs - idle);
    };
    this.stall = this.o.clock.setTimeout(check, this.stallTimeoutMs);
  }

  private stopStallTimer(): void {
    this.stall?.cancel();
    this.stall = undefined;
  }

  /** A thrown value as an attempt's failure: ours pass, the rest are network errors. */
  private classify(err: unknown): AttemptFailure {
    if (err instanceof AttemptFailure) return err;
    return new AttemptFailure({ kind: 'network', code: errorCode(err), message: err instanceof Error ? err.message : String(err) }, { cause: err });
  }

  private report(): void {
    const { clock, onProgress, progressIntervalMs = 5_000 } = this.o;
    const now = clock.now();
    if (now - this.lastReport.at < progressIntervalMs) return;
    const elapsedMs = now - this.lastReport.at;
    const bytesPerSecond = elapsedMs > 0 ? Math.round(((this.received - this.lastReport.received) * 1000) / elapsedMs) : 0;
    const total = this.totalBytes;
    const progress: DownloadProgress = {
      bytes: this.offset,
      totalBytes: total,
      bytesPerSecond,
      etaSeconds: total !== undefined && bytesPerSecond > 0 ? Math.ceil((total - this.offset) / bytesPerSecond) : undefined,
    };
    this.lastReport = { at: now, received: this.received };
    try {
      onProgress?.(progress);
    } catch (err) {
      this.o.log.error({ err }, 'download progress listener threw');
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = this.o.clock.setTimeout(resolve, ms);
      this.interrupt = (err) => {
        timer.cancel();
        reject(err);
      };
    });
  }

  /** (fsync the file,) rename it into place (, fsync the folder). */
  private async commit(): Promise<void> {
    const durable = this.o.durable ?? true;
    if (durable) {
      const file = await open(this.part, 'r+');
      try {
        await file.sync();
      } finally {
        await file.close();
      }
    }
    await rename(this.part, this.o.destPath);
    if (durable) await syncDirectory(dirname(this.o.destPath));
  }
}

/** fsync of a directory makes a rename durable; Windows cannot open a directory for it (the rename is journaled there). */
async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(dir, 'r');
  } catch (err) {
    if (process.platform === 'win32') return;
    throw err;
  }
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function hostOf(raw: string): string | undefined {
  try {
    return new URL(raw).host;
  } catch {
    return undefined;
  }
}

/** Bytes of the file at path; 0 when it does not exist. */
export async function sizeOnDisk(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}
