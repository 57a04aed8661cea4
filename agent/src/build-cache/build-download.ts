// The agent's download of a distributed build from the control plane: the shared archive download
// (`@pixelfleet/build-archive`'s archive-download.ts) of the command's short-lived URL into `<uploadId>.zip`,
// the control link's trust (`tls.caFile`; plain http:// only to a loopback host or with
// `buildCache.insecureDownloads` / `tls.insecure`) on every hop, the size and SHA-256 the command names, Range resume of a
// kept `.part`; its failures become the command's codes (DOWNLOAD_FAILED, SIZE_MISMATCH, HASH_MISMATCH, …).
// A control plane on object storage redirects each attempt to a presigned URL of the store: the
// redirect is followed to that host without the worker token (which stays with the control plane).
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { crossesNetworkInPlaintext, type Clock } from '@pixelfleet/common';
import { ArchiveDownloadError, downloadArchive, type HopPolicy } from '@pixelfleet/build-archive';
import { CommandFailure } from '../commands/command';

/** Retries of network errors, stalls and 5xx/408/429 answers. */
export interface BuildDownloadRetry {
  /** Failed attempts in a row before the command fails DOWNLOAD_FAILED (default 5). An attempt that brought 1 MiB or more starts the count again. */
  maxAttempts: number;
  /** Backoff ceiling of the first retry, in ms (default 1,000); doubles per failure. */
  initialMs: number;
  /** Largest backoff ceiling, in ms (default 30,000); the delay is uniform below it (full jitter). */
  maxMs: number;
  /** A response that sends nothing for this long (ms, default 60,000) counts as a network error. */
  stallTimeoutMs: number;
}

export const DEFAULT_BUILD_DOWNLOAD_RETRY: Readonly<BuildDownloadRetry> = Object.freeze({ maxAttempts: 5, initialMs: 1_000, maxMs: 30_000, stallTimeoutMs: 60_000 });

/** Redirects followed before giving up. */
const MAX_REDIRECTS = 5;

/**
 * The agent config's `tls` as it applies to build downloads: the same trust as the control link.
 * The name checked is the URL's host (`tls.serverName` belongs to the control link alone).
 */
export interface BuildDownloadTls {
  /** PEM file of the CA(s) an https build URL's certificate must chain to (read at each download); unset: Node's bundled roots. */
  caFile?: string | undefined;
  /** true (`buildCache.insecureDownloads` or `tls.insecure`): a plain http:// build URL to another machine is accepted, with a warning. Plain http:// to a loopback host always is. */
  insecure?: boolean | undefined;
}

export interface BuildDownloadOptions {
  url: string;
  /** Where the verified archive lands (`<uploadId>.zip`); it is written to `<zipPath>.part` first. */
  zipPath: string;
  sizeBytes: number;
  /** Lower-case hex SHA-256 the archive must have. */
  sha256: string;
  clock: Clock;
  retry: BuildDownloadRetry;
  random: () => number;
  /** Bytes of the archive on disk so far (a resumed download starts at its part's size). */
  onBytes: (bytes: number) => void;
  /** Called once a retry's wait is scheduled on the clock (logs, tests). */
  onBackoff?: (delayMs: number, failures: number) => void;
  signal: AbortSignal;
  log: Logger;
  /** Trust and plaintext rule (default {}: bundled roots, plaintext to loopback only). */
  tls?: BuildDownloadTls;
  /** The worker token: the control plane's archive route serves a link only to the worker it names (`Authorization: Bearer`). */
  workerToken?: string | undefined;
}

/**
 * Leaves zipPath holding exactly sizeBytes whose SHA-256 is `sha256`. A wrong hash deletes the
 * file and downloads the whole archive once more; a second wrong hash fails HASH_MISMATCH.
 * @throws CommandFailure HASH_MISMATCH, SIZE_MISMATCH, DOWNLOAD_FAILED (a refused certificate or
 *   plaintext URL included), DISK_FULL, WRITE_FAILED; ArchiveDownloadError `aborted` when `signal`
 *   aborts (the part is kept for a later resume).
 */
export async function downloadVerified(o: BuildDownloadOptions): Promise<void> {
  const tls = o.tls ?? {};
  // Every hop meets the same rules as the first (scheme, plaintext); the worker token goes only to
  // the first hop's origin (archive-download.ts), so a redirect to an object store carries none.
  const hopPolicy: HopPolicy = (raw) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return Promise.resolve({ ok: false, reason: 'the build URL is not a valid URL' });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.resolve({ ok: false, reason: `the build URL's scheme ${url.protocol} is not http or https` });
    if (crossesNetworkInPlaintext(url) && tls.insecure !== true) return Promise.resolve({ ok: false, reason: plaintextRefusal(url) });
    return Promise.resolve({ ok: true, url });
  };
  const first = parsedUrl(o.url);
  let ca: Buffer | undefined;
  if (first?.protocol === 'https:' && tls.caFile !== undefined) ca = await readCa(tls.caFile);
  if (first !== undefined && crossesNetworkInPlaintext(first) && tls.insecure === true) {
    o.log.warn({ host: first.host }, 'build download in plaintext (buildCache.insecureDownloads): the archive link and the build cross the network unencrypted');
  }
  try {
    await downloadArchive({
      url: o.url,
      destPath: o.zipPath,
      hopPolicy,
      ...(ca === undefined ? {} : { ca }),
      maxRedirects: MAX_REDIRECTS,
      // Sent to the first hop's origin only: the credential stays with the control plane.
      ...(o.workerToken === undefined ? {} : { authorization: `Bearer ${o.workerToken}` }),
      // The control plane's archive route, and the object store it may redirect to, serve ranges.
      ranges: 'assumed',
      expectedBytes: o.sizeBytes,
      expectedSha256: o.sha256,
      clock: o.clock,
      random: o.random,
      log: o.log,
      retry: o.retry,
      stallTimeoutMs: o.retry.stallTimeoutMs,
      progressIntervalMs: 0,
      onProgress: (p) => o.onBytes(p.bytes),
      ...(o.onBackoff ? { onBackoff: o.onBackoff } : {}),
      // The cache extracts the archive at once and re-verifies a kept one by its hash: no fsync needed.
      durable: false,
      signal: o.signal,
    });
  } catch (err) {
    throw err instanceof ArchiveDownloadError ? commandFailure(err, first, tls.caFile) : err;
  }
}

function parsedUrl(raw: string): URL | undefined {
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

function plaintextRefusal(url: URL): string {
  return (
    `the build URL is plain http:// to another machine (${url.host}): the archive link and the build would cross the network unencrypted; ` +
    "give the control plane's publicUrls.agents an https:// origin, or set buildCache.insecureDownloads: true in the agent's config to accept plaintext"
  );
}

async function readCa(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new CommandFailure('DOWNLOAD_FAILED', `tls.caFile ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** A certificate the download refused, in words naming what to change; undefined for any other failure. */
function certificateWords(code: string, url: URL, caFile: string | undefined): string | undefined {
  switch (code) {
    case 'CERT_HAS_EXPIRED':
      return "the server's certificate has expired (renew it on the server)";
    case 'CERT_NOT_YET_VALID':
      return "the server's certificate is not valid yet (check both clocks)";
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
    case 'HOSTNAME_MISMATCH':
      return `the server's certificate does not name ${url.hostname} (the host of the control plane's publicUrls.agents must be a name its HTTPS certificate carries; the agent's tls.serverName applies to the control link only)`;
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return caFile === undefined
        ? "the server's certificate is not signed by a trusted CA (set tls.caFile in the agent's config to the CA that signed it)"
        : `the server's certificate is not signed by the CA in tls.caFile (${caFile})`;
    default:
      return undefined;
  }
}

/** Who answered: the control plane, or the object store it sent the download to (a presigned URL refused: the clocks, or the store's rights). */
function answerer(redirectedHost: string | undefined): string {
  return redirectedHost === undefined ? 'the control plane' : `the object store the control plane sent the download to (${redirectedHost})`;
}

/** The shared download's failure as the command's code and message. */
function commandFailure(err: ArchiveDownloadError, url: URL | undefined, caFile: string | undefined): Error {
  const f = err.failure;
  const certificate = f.kind === 'network' && url !== undefined ? certificateWords(f.code, url, caFile) : undefined;
  if (certificate !== undefined && url !== undefined) return new CommandFailure('DOWNLOAD_FAILED', `the build download from ${url.host} failed TLS verification: ${certificate}`);
  if (err.failedAttempts > 0) {
    const last = f.kind === 'http-status' ? `${answerer(f.redirectedHost)} answered HTTP ${f.status}` : err.message;
    return new CommandFailure('DOWNLOAD_FAILED', `the build download failed ${err.failedAttempts} times in a row; the last error: ${last}`);
  }
  switch (f.kind) {
    case 'aborted':
      return err;
    case 'refused-url':
      return new CommandFailure('DOWNLOAD_FAILED', f.reason);
    case 'too-many-redirects':
      return new CommandFailure('DOWNLOAD_FAILED', `the build download redirected more than ${f.maxRedirects} times`);
    case 'http-status':
      return new CommandFailure('DOWNLOAD_FAILED', `${answerer(f.redirectedHost)} refused the build download with HTTP ${f.status}`);
    case 'size-mismatch':
      return new CommandFailure(
        'SIZE_MISMATCH',
        f.servedBytes === undefined ? `the control plane sent more than the build's ${f.expectedBytes} bytes` : `the control plane serves ${f.servedBytes} bytes, the command says ${f.expectedBytes}`,
      );
    case 'hash-mismatch':
      return new CommandFailure('HASH_MISMATCH', `the downloaded build's SHA-256 is ${f.actual}, expected ${f.expected} (downloaded twice)`);
    case 'disk':
      if (f.code === 'ENOSPC' || f.code === 'EDQUOT') return new CommandFailure('DISK_FULL', 'the worker ran out of disk space while downloading the build');
      return new CommandFailure('WRITE_FAILED', `the worker could not write the downloaded build (${f.code === '' ? 'I/O error' : f.code})`);
    default:
      return new CommandFailure('DOWNLOAD_FAILED', `the build download failed: ${err.message}`);
  }
}
