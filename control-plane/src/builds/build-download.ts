// The control plane's download of a build's `fileUrl`: streamed to `<destPath>.part` (never held
// in memory), every hop (the URL and each redirect) checked by the URL policy and connected through
// the addresses it checked, the first bytes checked for a ZIP header, the byte cap enforced, SHA-256
// computed on the way, network errors and 5xx retried with full-jitter backoff (resuming with Range
// where the server allows it), then fsync and rename. It ends with the file, a `Reject` or
// `Download Failed` objection in a customer's words, or an abort that keeps the `.part` to resume.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { backoffDelayMs, type Clock } from '@pixelfleet/signaling';
import { pinnedLookup, type UrlVerdict } from '../webhooks/url-policy';
import { byteWords, clientErrorWords, errorCode, isCertificateError, networkErrorWords, notZipWords, statusWords, type DownloadFailureReason } from './download-words';

/** Checks one URL (the fileUrl and every redirect target); the app passes `(raw) => checkOutboundUrl(raw, policy)`. */
export type UrlCheck = (raw: string) => Promise<UrlVerdict>;

/** How the download is doing, for `pixelfleet admin builds` and the logs. */
export interface DownloadProgress {
  /** Bytes of the file on disk so far (a resumed download counts its earlier part). */
  bytes: number;
  /** The file's size when the server said it (Content-Length or Content-Range), else undefined. */
  totalBytes: number | undefined;
  /** Bytes received per second since the previous report. */
  bytesPerSecond: number;
  /** Seconds left at that rate, when the size is known and the rate is not zero. */
  etaSeconds: number | undefined;
}

/** Retries of network errors and 5xx/408/429 answers. */
export interface DownloadRetry {
  /** Failed attempts in a row before `Download Failed` (default 5). An attempt that brought at least 1 MiB starts the count again. */
  maxAttempts: number;
  /** Backoff ceiling of the first retry, in ms (default 1,000); doubles per failure. */
  baseDelayMs: number;
  /** Largest backoff ceiling, in ms (default 30,000). The delay is uniform below the ceiling (full jitter). */
  maxDelayMs: number;
}

export const DEFAULT_DOWNLOAD_RETRY: DownloadRetry = { maxAttempts: 5, baseDelayMs: 1_000, maxDelayMs: 30_000 };
/** Redirects followed from the fileUrl before giving up (browsers follow 20, curl -L 50; storage links use one or two). */
export const MAX_DOWNLOAD_REDIRECTS = 10;
/** An attempt that brought this many bytes resets the failure count: a long download over a flaky link still finishes. */
const PROGRESS_RESETS_FAILURES_BYTES = 1024 * 1024;

export interface DownloadBuildOptions {
  url: string;
  /** Where the archive lands; it is written to `<destPath>.part` first. */
  destPath: string;
  checkUrl: UrlCheck;
  /** The build size cap, in bytes (`limits.maxBuildBytes`). */
  maxBytes: number;
  clock: Clock;
  /** Uniform in [0, 1): the backoff's jitter (default Math.random). */
  random?: () => number;
  log: Logger;
  retry?: DownloadRetry;
  /** No byte (or no answer) for this long fails the attempt, in ms (default 60,000). */
  stallTimeoutMs?: number;
  /** Progress is reported at most this often, in ms of the clock (default 5,000). */
  progressIntervalMs?: number;
  /** Default MAX_DOWNLOAD_REDIRECTS. */
  maxRedirects?: number;
  /** Called with progress; a throwing callback is logged and ignored. */
  onProgress?: (progress: DownloadProgress) => void;
  signal?: AbortSignal;
}

export interface DownloadedBuild {
  bytes: number;
  sha256: string;
}

/** The build status a failed download ends in. */
export type DownloadOutcome = 'Reject' | 'Download Failed';

/** The download ended for good: `objection` is the sentence for the build record and its webhook. Nothing is left on disk. */
export class BuildDownloadError extends Error {
  override readonly name = 'BuildDownloadError';
  constructor(
    readonly outcome: DownloadOutcome,
    readonly reason: DownloadFailureReason,
    readonly objection: string,
  ) {
    super(objection);
  }
}

/**
 * The signal aborted the download (shutdown). The `.part` file is kept: calling downloadBuild again
 * with the same destPath re-hashes it and resumes with Range, so a restarted pipeline loses nothing.
 */
export class DownloadAbortedError extends Error {
  override readonly name = 'DownloadAbortedError';
  constructor(readonly partialBytes: number) {
    super(`download aborted after ${partialBytes} bytes; the .part file is kept for a resume`);
  }
}

/** A failure worth another attempt, in words. */
class RetryableFailure extends Error {
  constructor(
    readonly words: string,
    readonly reason: 'network' | 'http-status',
  ) {
    super(words);
  }
}

/** The disk refused a write (ENOSPC and the like). */
class DiskFailure extends Error {
  constructor(override readonly cause: unknown) {
    super('write failed');
  }
}

const ZIP_LOCAL_FILE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const ZIP_EMPTY_ARCHIVE = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;

const isZipStart = (head: Buffer) => head.subarray(0, 4).equals(ZIP_LOCAL_FILE) || head.subarray(0, 4).equals(ZIP_EMPTY_ARCHIVE);

/** Removes a download's `.part` file (the pipeline calls it when it gives a build up for good). */
export async function discardPartialDownload(destPath: string): Promise<void> {
  await rm(`${destPath}.part`, { force: true });
}

/**
 * Downloads `url` to `destPath` (see the file comment). Resolves with the size and SHA-256 of the
 * file; throws BuildDownloadError (terminal, `.part` removed) or DownloadAbortedError (`.part` kept).
 */
export async function downloadBuild(options: DownloadBuildOptions): Promise<DownloadedBuild> {
  return new BuildDownload(options).run();
}

class BuildDownload {
  private readonly part: string;
  private readonly retry: DownloadRetry;
  private readonly stallTimeoutMs: number;
  private hash: Hash = createHash('sha256');
  /** Bytes in the `.part` file and in the hash. */
  private offset = 0;
  private totalBytes: number | undefined;
  /** Whether a Range request may resume: undefined until a server has said. */
  private rangesAccepted: boolean | undefined;
  /** Strong ETag or Last-Modified of the file, sent as If-Range so a changed file is sent whole. */
  private validator: string | undefined;
  /** Ends the request or response in flight with the given error (stall, abort). */
  private interrupt: ((err: Error) => void) | undefined;
  private lastActivityAt: number;
  /** A request or response is in flight (the stall check applies only then, never to a backoff wait). */
  private exchanging = false;
  private received = 0;
  private lastReport: { at: number; received: number };
  private readonly abortError = new Error('aborted');

  constructor(private readonly o: DownloadBuildOptions) {
    this.part = `${o.destPath}.part`;
    this.retry = o.retry ?? DEFAULT_DOWNLOAD_RETRY;
    this.stallTimeoutMs = o.stallTimeoutMs ?? 60_000;
    this.lastActivityAt = o.clock.now();
    this.lastReport = { at: o.clock.now(), received: 0 };
  }

  async run(): Promise<DownloadedBuild> {
    const { clock, log, signal } = this.o;
    const started = clock.now();
    await mkdir(dirname(this.o.destPath), { recursive: true });
    await this.adoptPartial();
    log.info({ host: hostOf(this.o.url), resumeFrom: this.offset, maxBytes: this.o.maxBytes }, 'build download started');
    const onAbort = () => this.interrupt?.(this.abortError);
    signal?.addEventListener('abort', onAbort);
    const stallCheck = clock.setInterval(() => {
      if (this.exchanging && clock.now() - this.lastActivityAt >= this.stallTimeoutMs) this.interrupt?.(new RetryableFailure(`the server sent nothing for ${Math.round(this.stallTimeoutMs / 1000)} s`, 'network'));
    }, Math.min(1_000, this.stallTimeoutMs));
    try {
      let failures = 0;
      for (;;) {
        if (signal?.aborted) throw this.abortError;
        const before = this.offset;
        try {
          this.exchanging = true;
          await this.attempt();
          break;
        } catch (err) {
          this.exchanging = false;
          if (!(err instanceof RetryableFailure) || signal?.aborted) throw err;
          if (this.offset - before >= PROGRESS_RESETS_FAILURES_BYTES) failures = 0;
          failures += 1;
          if (failures >= this.retry.maxAttempts) {
            const times = failures === 1 ? 'once' : `${failures} times in a row`;
            throw new BuildDownloadError('Download Failed', err.reason, `the download failed ${times}; last error: ${err.words}`);
          }
          const delayMs = backoffDelayMs(failures - 1, { initialMs: this.retry.baseDelayMs, maxMs: this.retry.maxDelayMs }, this.o.random ?? Math.random);
          log.warn({ failures, delayMs, bytes: this.offset, error: err.words }, 'build download failed; retrying');
          await this.sleep(delayMs);
        }
      }
      this.exchanging = false;
      await this.commit();
      const sha256 = this.hash.digest('hex');
      log.info({ bytes: this.offset, sha256, durationMs: clock.now() - started }, 'build downloaded');
      return { bytes: this.offset, sha256 };
    } catch (err) {
      if (err === this.abortError || signal?.aborted) {
        await this.keepOrDropEmptyPart();
        log.info({ bytes: this.offset }, 'build download aborted; .part kept for a resume');
        throw new DownloadAbortedError(this.offset);
      }
      await rm(this.part, { force: true });
      if (err instanceof BuildDownloadError) {
        log.info({ outcome: err.outcome, reason: err.reason, objection: err.objection, bytes: this.offset }, 'build download ended');
        throw err;
      }
      log.error({ err }, 'build download failed unexpectedly');
      throw new BuildDownloadError('Download Failed', 'network', 'the download failed because of an internal error; please submit the build again');
    } finally {
      stallCheck.cancel();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Takes over a `.part` left by an aborted or interrupted run: hashes its bytes so the download resumes after them. */
  private async adoptPartial(): Promise<void> {
    let size: number;
    try {
      size = (await stat(this.part)).size;
    } catch {
      return;
    }
    if (size < 4 || size > this.o.maxBytes) return;
    let head: Buffer | undefined;
    for await (const chunk of createReadStream(this.part) as AsyncIterable<Buffer>) {
      head ??= chunk.subarray(0, 4);
      if (!isZipStart(head)) return;
      this.hash.update(chunk);
    }
    this.offset = size;
    this.o.log.info({ bytes: size }, 'resuming a build download from its .part file');
  }

  /** Starts the file over: a server that cannot resume sends it whole. */
  private restart(): void {
    this.hash = createHash('sha256');
    this.offset = 0;
  }

  private async attempt(): Promise<void> {
    if (this.offset > 0 && this.rangesAccepted === false) this.restart();
    const resumeAt = this.offset;
    const res = await this.follow(resumeAt);
    const status = res.statusCode ?? 0;
    if (status >= 500 || status === 408 || status === 429) {
      res.destroy();
      throw new RetryableFailure(`the server answered ${statusWords(status)}`, 'http-status');
    }
    if (status === 416 && resumeAt > 0) {
      res.destroy();
      const total = /^bytes \*\/(\d+)$/.exec(res.headers['content-range'] ?? '');
      if (total !== null && Number(total[1]) === resumeAt) return; // the .part was already whole
      this.rangesAccepted = false;
      throw new RetryableFailure('the server could not resume the download', 'network');
    }
    if (status >= 400) {
      res.destroy();
      throw new BuildDownloadError('Download Failed', 'http-status', clientErrorWords(status));
    }
    if (status !== 200 && status !== 206) {
      res.destroy();
      throw new BuildDownloadError('Download Failed', 'http-status', `the server answered ${statusWords(status)} instead of sending the file`);
    }
    if (status === 206) {
      const range = CONTENT_RANGE.exec(res.headers['content-range'] ?? '');
      if (range === null || Number(range[1]) !== resumeAt) {
        res.destroy();
        this.rangesAccepted = false;
        throw new RetryableFailure('the server resumed the download at the wrong place', 'network');
      }
      this.rangesAccepted = true;
      this.totalBytes = range[3] === '*' ? undefined : Number(range[3]);
    } else {
      if (resumeAt > 0) {
        this.o.log.info({ bytes: resumeAt }, 'the server sent the whole file instead of the rest; starting over');
        this.restart();
      }
      this.rangesAccepted = res.headers['accept-ranges']?.toLowerCase() === 'bytes';
      const length = res.headers['content-length'];
      this.totalBytes = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
    }
    if (this.totalBytes !== undefined && this.totalBytes > this.o.maxBytes) {
      res.destroy();
      throw this.tooLarge(this.totalBytes);
    }
    const etag = res.headers.etag;
    this.validator = etag !== undefined && !etag.startsWith('W/') ? etag : res.headers['last-modified'];
    await this.receive(res);
  }

  /** Streams the body into the `.part` file after `offset`, checking, counting and hashing. */
  private async receive(res: IncomingMessage): Promise<void> {
    const out = createWriteStream(this.part, { flags: this.offset === 0 ? 'w' : 'r+', start: this.offset, highWaterMark: 1024 * 1024 });
    let diskError: unknown;
    out.on('error', (err) => {
      diskError ??= err;
      res.destroy(new DiskFailure(err));
    });
    const closed = new Promise<void>((resolve) => out.once('close', () => resolve()));
    let head: Buffer | undefined = this.offset === 0 ? Buffer.alloc(0) : undefined;
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        this.lastActivityAt = this.o.clock.now();
        let data = chunk;
        if (head !== undefined) {
          head = Buffer.concat([head, chunk]);
          if (head.length < 4) continue;
          if (!isZipStart(head)) throw new BuildDownloadError('Reject', 'not-zip', notZipWords(head, res.headers['content-type']));
          data = head;
          head = undefined;
        }
        if (this.offset + data.length > this.o.maxBytes) throw this.tooLarge(undefined);
        this.hash.update(data);
        this.offset += data.length;
        this.received += data.length;
        if (!out.write(data) && diskError === undefined) await once(out, 'drain');
        this.report();
      }
      if (head !== undefined) throw new BuildDownloadError('Reject', 'not-zip', notZipWords(head, res.headers['content-type']));
      if (this.totalBytes !== undefined && this.offset !== this.totalBytes) {
        throw new RetryableFailure(`the connection closed before the whole file arrived (${byteWords(this.offset)} of ${byteWords(this.totalBytes)})`, 'network');
      }
    } catch (err) {
      res.destroy();
      // The bytes already counted still reach the file (end, not destroy), so offset stays its size for a resume.
      out.end();
      await closed;
      if (diskError !== undefined) throw this.diskFailure(diskError);
      throw this.classify(err);
    }
    out.end();
    await closed;
    if (diskError !== undefined) throw this.diskFailure(diskError);
  }

  /** Requests the URL and follows redirects, each hop checked by the URL policy; resolves with the final answer. */
  private async follow(resumeAt: number): Promise<IncomingMessage> {
    const maxRedirects = this.o.maxRedirects ?? MAX_DOWNLOAD_REDIRECTS;
    let target = this.o.url;
    for (let hop = 0; ; hop += 1) {
      const verdict = await this.o.checkUrl(target);
      if (!verdict.ok) {
        const host = hostOf(target);
        const where = hop === 0 ? 'the URL is refused' : host === undefined ? 'the URL redirected to an address that is refused' : `the URL redirected to ${host}, which is refused`;
        throw new BuildDownloadError('Download Failed', 'refused-url', `${where}: it ${verdict.reason}`);
      }
      const headers: OutgoingHttpHeaders = { 'user-agent': 'Pixelfleet-Build-Download/1', accept: '*/*', 'accept-encoding': 'identity' };
      if (resumeAt > 0) {
        headers.range = `bytes=${resumeAt}-`;
        if (this.validator !== undefined) headers['if-range'] = this.validator;
      }
      const res = await this.get(verdict, headers);
      const location = res.headers.location;
      if (!REDIRECTS.has(res.statusCode ?? 0) || location === undefined) return res;
      res.destroy();
      if (hop >= maxRedirects) throw new BuildDownloadError('Download Failed', 'too-many-redirects', `the URL redirected more than ${maxRedirects} times`);
      try {
        target = new URL(location, verdict.url).href;
      } catch {
        throw new BuildDownloadError('Download Failed', 'refused-url', 'the URL redirected to an address that is not a valid URL');
      }
      this.o.log.debug({ host: hostOf(target), hop: hop + 1 }, 'build download redirected');
    }
  }

  /** One GET to the addresses the policy checked (a fresh connection: a pooled one would skip the pinned lookup). */
  private get(verdict: Extract<UrlVerdict, { ok: true }>, headers: OutgoingHttpHeaders): Promise<IncomingMessage> {
    this.lastActivityAt = this.o.clock.now();
    return new Promise<IncomingMessage>((resolve, reject) => {
      const options: RequestOptions = { method: 'GET', headers, agent: false };
      if (verdict.addresses !== undefined) options.lookup = pinnedLookup(verdict.addresses);
      const send = verdict.url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(verdict.url, options, (res) => {
        this.lastActivityAt = this.o.clock.now();
        this.interrupt = (err) => res.destroy(err);
        resolve(res);
      });
      this.interrupt = (err) => req.destroy(err);
      req.on('error', (err) => reject(this.classify(err)));
      if (this.o.signal?.aborted) req.destroy(this.abortError);
      req.end();
    });
  }

  /** A thrown value in the attempt's terms: terminal ones pass, certificate errors end it, other network errors are retried. */
  private classify(err: unknown): Error {
    if (err instanceof BuildDownloadError || err instanceof RetryableFailure) return err;
    if (err === this.abortError) return this.abortError;
    if (err instanceof DiskFailure) return this.diskFailure(err.cause);
    if (isCertificateError(err)) return new BuildDownloadError('Download Failed', 'network', networkErrorWords(err));
    return new RetryableFailure(networkErrorWords(err), 'network');
  }

  private diskFailure(err: unknown): BuildDownloadError {
    const code = errorCode(err);
    this.o.log.error({ err, bytes: this.offset }, 'build download could not be written');
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      return new BuildDownloadError('Download Failed', 'no-space', `the service ran out of disk space after ${byteWords(this.offset)} of the download; please submit the build again later`);
    }
    return new BuildDownloadError('Download Failed', 'no-space', `the download could not be written to disk${code === '' ? '' : ` (${code})`}; please submit the build again later`);
  }

  private tooLarge(total: number | undefined): BuildDownloadError {
    const cap = byteWords(this.o.maxBytes);
    const objection = total === undefined ? `the file is larger than the ${cap} build size cap` : `the file is ${byteWords(total)}, larger than the ${cap} build size cap`;
    return new BuildDownloadError('Reject', 'too-large', objection);
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
    this.o.log.info(progress, 'build download progress');
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

  /** fsync the file, rename it into place, fsync the folder: a recorded download is whole after a power loss. */
  private async commit(): Promise<void> {
    const file = await open(this.part, 'r+');
    try {
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(this.part, this.o.destPath);
    await syncDirectory(dirname(this.o.destPath));
  }

  private async keepOrDropEmptyPart(): Promise<void> {
    if (this.offset === 0) await rm(this.part, { force: true });
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
