// The control plane's download of a build's `fileUrl`: the shared archive download
// (`@pixelfleet/build-archive`) with the URL policy as its hop policy (every hop checked and
// connected through the addresses it checked), the build size cap, durable rename into place, and
// its failures in a customer's words: a `Reject` or `Download Failed` objection, or an abort that
// keeps the `.part` to resume.
import { rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ArchiveDownloadError, byteWords, downloadArchive, statusWords, type DownloadFailure, type DownloadProgress, type HopPolicy } from '@pixelfleet/build-archive';
import type { Clock } from '@pixelfleet/common';
import { pinnedLookup, type UrlVerdict } from '../webhooks/url-policy';
import { clientErrorWords, notZipWords, type DownloadFailureReason } from './download-words';

export type { DownloadProgress };

/** Checks one URL (the fileUrl and every redirect target); the app passes `(raw) => checkOutboundUrl(raw, policy)`. */
export type UrlCheck = (raw: string) => Promise<UrlVerdict>;

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

/** Removes a download's `.part` file (the pipeline calls it when it gives a build up for good). */
export async function discardPartialDownload(destPath: string): Promise<void> {
  await rm(`${destPath}.part`, { force: true });
}

/**
 * Downloads `url` to `destPath` (see the file comment). Resolves with the size and SHA-256 of the
 * file; throws BuildDownloadError (terminal, `.part` removed) or DownloadAbortedError (`.part` kept).
 */
export async function downloadBuild(o: DownloadBuildOptions): Promise<DownloadedBuild> {
  const retry = o.retry ?? DEFAULT_DOWNLOAD_RETRY;
  const hopPolicy: HopPolicy = async (raw) => {
    const verdict = await o.checkUrl(raw);
    if (!verdict.ok) return verdict;
    return verdict.addresses === undefined ? { ok: true, url: verdict.url } : { ok: true, url: verdict.url, lookup: pinnedLookup(verdict.addresses) };
  };
  try {
    return await downloadArchive({
      url: o.url,
      destPath: o.destPath,
      hopPolicy,
      maxRedirects: o.maxRedirects ?? MAX_DOWNLOAD_REDIRECTS,
      ranges: 'advertised',
      maxBytes: o.maxBytes,
      clock: o.clock,
      log: o.log,
      retry: { maxAttempts: retry.maxAttempts, initialMs: retry.baseDelayMs, maxMs: retry.maxDelayMs },
      ...(o.random ? { random: o.random } : {}),
      ...(o.stallTimeoutMs !== undefined ? { stallTimeoutMs: o.stallTimeoutMs } : {}),
      ...(o.progressIntervalMs !== undefined ? { progressIntervalMs: o.progressIntervalMs } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
      onProgress: (progress) => {
        o.log.info(progress, 'build download progress');
        o.onProgress?.(progress);
      },
    });
  } catch (err) {
    if (err instanceof ArchiveDownloadError && err.failure.kind === 'aborted') throw new DownloadAbortedError(err.bytes);
    await discardPartialDownload(o.destPath);
    if (!(err instanceof ArchiveDownloadError)) {
      o.log.error({ err }, 'build download failed unexpectedly');
      throw new BuildDownloadError('Download Failed', 'network', 'the download failed because of an internal error; please submit the build again');
    }
    if (err.failure.kind === 'disk') o.log.error({ err: err.cause, bytes: err.bytes }, 'build download could not be written');
    const ended = buildDownloadError(err, o.maxBytes);
    o.log.info({ outcome: ended.outcome, reason: ended.reason, objection: ended.objection, bytes: err.bytes }, 'build download ended');
    throw ended;
  }
}

/** The shared download's failure in a customer's words (the objections this service has always written). */
function buildDownloadError(err: ArchiveDownloadError, maxBytes: number): BuildDownloadError {
  const f: DownloadFailure = err.failure;
  if (err.failedAttempts > 0) {
    const times = err.failedAttempts === 1 ? 'once' : `${err.failedAttempts} times in a row`;
    return new BuildDownloadError('Download Failed', f.kind === 'http-status' ? 'http-status' : 'network', `the download failed ${times}; last error: ${err.message}`);
  }
  switch (f.kind) {
    case 'refused-url': {
      const host = URL.canParse(f.url) ? new URL(f.url).host : undefined;
      const where = f.hop === 0 ? 'the URL is refused' : host === undefined ? 'the URL redirected to an address that is refused' : `the URL redirected to ${host}, which is refused`;
      return new BuildDownloadError('Download Failed', 'refused-url', `${where}: it ${f.reason}`);
    }
    case 'bad-redirect':
      return new BuildDownloadError('Download Failed', 'refused-url', err.message);
    case 'too-many-redirects':
      return new BuildDownloadError('Download Failed', 'too-many-redirects', err.message);
    case 'http-status':
      return new BuildDownloadError('Download Failed', 'http-status', f.status >= 400 ? clientErrorWords(f.status) : `the server answered ${statusWords(f.status)} instead of sending the file`);
    case 'not-zip':
      return new BuildDownloadError('Reject', 'not-zip', notZipWords(f.head, f.contentType));
    case 'too-large': {
      const cap = byteWords(maxBytes);
      return new BuildDownloadError('Reject', 'too-large', f.totalBytes === undefined ? `the file is larger than the ${cap} build size cap` : `the file is ${byteWords(f.totalBytes)}, larger than the ${cap} build size cap`);
    }
    case 'disk':
      if (f.code === 'ENOSPC' || f.code === 'EDQUOT') {
        return new BuildDownloadError('Download Failed', 'no-space', `the service ran out of disk space after ${byteWords(err.bytes)} of the download; please submit the build again later`);
      }
      return new BuildDownloadError('Download Failed', 'no-space', `the download could not be written to disk${f.code === '' ? '' : ` (${f.code})`}; please submit the build again later`);
    case 'network':
      return new BuildDownloadError('Download Failed', 'network', err.message);
    default:
      // Retried kinds end only through failedAttempts; the expected size and hash are the agent's.
      return new BuildDownloadError('Download Failed', 'network', 'the download failed because of an internal error; please submit the build again');
  }
}
