// The agent's download of a distributed build from the control plane: a plain GET of the
// command's short-lived URL streamed to `<uploadId>.zip.part`, resumed with `Range` when a part
// is already there (the agent was killed or the link dropped), its size and SHA-256 checked,
// network errors, stalls and 5xx retried with full-jitter backoff on the injected Clock.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rm, stat, type FileHandle } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '@pixelfleet/signaling';
import { CommandFailure } from '../commands/command';
import { backoffDelayMs } from '@pixelfleet/signaling';

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

/** Same-host redirects followed before giving up. */
const MAX_REDIRECTS = 5;
const PROGRESS_RESETS_FAILURES_BYTES = 1024 * 1024;

export interface BuildDownloadOptions {
  url: string;
  partPath: string;
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
}

/** Worth another attempt: the network, a stall, a 5xx. */
class RetryableError extends Error {
  override readonly name = 'RetryableError';
}

/**
 * Leaves partPath holding exactly sizeBytes whose SHA-256 is `sha256`. A wrong hash deletes the
 * file and downloads the whole archive once more; a second wrong hash fails HASH_MISMATCH.
 * @throws CommandFailure HASH_MISMATCH, SIZE_MISMATCH or DOWNLOAD_FAILED; the abort reason when
 *   `signal` aborts (the part is kept for a later resume).
 */
export async function downloadVerified(o: BuildDownloadOptions): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const actual = await downloadToPart(o);
    if (actual === o.sha256) return;
    await rm(o.partPath, { force: true });
    if (attempt >= 2) {
      throw new CommandFailure('HASH_MISMATCH', `the downloaded build's SHA-256 is ${actual}, expected ${o.sha256} (downloaded twice)`);
    }
    o.log.warn({ expected: o.sha256, actual }, 'downloaded build has the wrong SHA-256; downloading it again');
    o.onBytes(0);
  }
}

/** Downloads until partPath holds sizeBytes; returns the whole file's SHA-256 (hex), unchecked. */
async function downloadToPart(o: BuildDownloadOptions): Promise<string> {
  let failures = 0;
  for (;;) {
    o.signal.throwIfAborted();
    let have = await sizeOf(o.partPath);
    if (have > o.sizeBytes) {
      await rm(o.partPath, { force: true });
      have = 0;
    }
    if (have === o.sizeBytes) return (await hashOfFile(o.partPath, o.signal)).digest('hex');
    let received = 0;
    try {
      return await attempt(o, have, (n) => {
        received += n;
      });
    } catch (err) {
      if (!(err instanceof RetryableError) || o.signal.aborted) throw err;
      failures = received >= PROGRESS_RESETS_FAILURES_BYTES ? 1 : failures + 1;
      if (failures >= o.retry.maxAttempts) {
        throw new CommandFailure('DOWNLOAD_FAILED', `the build download failed ${failures} times in a row; the last error: ${err.message}`);
      }
      const delayMs = backoffDelayMs(failures - 1, o.retry, o.random);
      o.log.warn({ err: err.message, failures, retryInMs: delayMs, bytes: have + received }, 'build download failed; retrying');
      await sleep(o.clock, delayMs, o.signal, () => o.onBackoff?.(delayMs, failures));
    }
  }
}

/** One GET from `have` on; resolves with the whole file's hash once the file is sizeBytes long. */
async function attempt(o: BuildDownloadOptions, have: number, onReceived: (n: number) => void): Promise<string> {
  const res = await get(o, have > 0 ? { range: `bytes=${have}-` } : {});
  let offset: number;
  if (res.statusCode === 206 && have > 0) {
    const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers['content-range'] ?? '');
    if (!range || Number(range[1]) !== have) {
      res.resume();
      await rm(o.partPath, { force: true });
      throw new RetryableError(`the server resumed at the wrong place (${res.headers['content-range'] ?? 'no Content-Range'})`);
    }
    if (range[3] !== '*' && Number(range[3]) !== o.sizeBytes) throw sizeMismatch(o, Number(range[3]), res);
    offset = have;
  } else if (res.statusCode === 200) {
    const length = res.headers['content-length'];
    if (length !== undefined && Number(length) !== o.sizeBytes) throw sizeMismatch(o, Number(length), res);
    offset = 0;
  } else if (res.statusCode === 416) {
    // The part is no prefix the server can continue: start over.
    res.resume();
    await rm(o.partPath, { force: true });
    throw new RetryableError('the server could not resume the download (416)');
  } else {
    res.resume();
    const status = res.statusCode ?? 0;
    if (status >= 500 || status === 408 || status === 429) throw new RetryableError(`the control plane answered HTTP ${status}`);
    throw new CommandFailure('DOWNLOAD_FAILED', `the control plane refused the build download with HTTP ${status}`);
  }
  const hash = offset > 0 ? await hashOfFile(o.partPath, o.signal) : createHash('sha256');
  let bytes = offset;
  const stall = new StallTimer(o.clock, o.retry.stallTimeoutMs, () => res.destroy(new RetryableError(`the control plane sent nothing for ${Math.round(o.retry.stallTimeoutMs / 1000)} s`)));
  // Each chunk is written before the next is read, so what arrived before a broken link is on
  // disk for the resume; the hash of a resumed part is taken from the disk, never from memory.
  let file: FileHandle | undefined;
  try {
    file = await open(o.partPath, offset > 0 ? 'a' : 'w');
    for await (const chunk of res as AsyncIterable<Buffer>) {
      stall.touch();
      if (bytes + chunk.length > o.sizeBytes) throw new CommandFailure('SIZE_MISMATCH', `the control plane sent more than the build's ${o.sizeBytes} bytes`);
      await file.write(chunk);
      hash.update(chunk);
      bytes += chunk.length;
      onReceived(chunk.length);
      o.onBytes(bytes);
    }
  } catch (err) {
    res.destroy();
    if (err instanceof CommandFailure || err instanceof RetryableError || o.signal.aborted) throw err;
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOSPC' || e.code === 'EDQUOT') throw new CommandFailure('DISK_FULL', 'the worker ran out of disk space while downloading the build');
    if (e.syscall !== undefined && e.syscall !== 'read') throw new CommandFailure('WRITE_FAILED', `the worker could not write the downloaded build (${e.code ?? 'I/O error'})`);
    throw new RetryableError(e.message || 'the connection broke');
  } finally {
    stall.cancel();
    await file?.close();
  }
  if (bytes !== o.sizeBytes) throw new RetryableError(`the download ended after ${bytes} of ${o.sizeBytes} bytes`);
  return hash.digest('hex');
}

function sizeMismatch(o: BuildDownloadOptions, served: number, res: IncomingMessage): CommandFailure {
  res.resume();
  return new CommandFailure('SIZE_MISMATCH', `the control plane serves ${served} bytes, the command says ${o.sizeBytes}`);
}

/** A GET that follows redirects on the same origin only (the URL's token is for that host). */
async function get(o: BuildDownloadOptions, headers: Record<string, string>): Promise<IncomingMessage> {
  const first = new URL(o.url);
  let url = first;
  for (let hops = 0; ; hops += 1) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CommandFailure('DOWNLOAD_FAILED', `the build URL's scheme ${url.protocol} is not http or https`);
    const res = await request(url, headers, o);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (status < 300 || status >= 400 || status === 304 || location === undefined) return res;
    res.resume();
    const next = new URL(location, url);
    if (next.origin !== first.origin) throw new CommandFailure('DOWNLOAD_FAILED', `the build download redirected to another host (${next.host}), which the agent does not follow`);
    if (hops >= MAX_REDIRECTS) throw new CommandFailure('DOWNLOAD_FAILED', `the build download redirected more than ${MAX_REDIRECTS} times`);
    url = next;
  }
}

function request(url: URL, headers: Record<string, string>, o: BuildDownloadOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { method: 'GET', headers, signal: o.signal });
    const stall = new StallTimer(o.clock, o.retry.stallTimeoutMs, () => req.destroy(new RetryableError(`the control plane did not answer for ${Math.round(o.retry.stallTimeoutMs / 1000)} s`)));
    req.on('response', (res) => {
      stall.cancel();
      resolve(res);
    });
    req.on('error', (err) => {
      stall.cancel();
      if (err instanceof RetryableError || o.signal.aborted) reject(o.signal.aborted ? (o.signal.reason as Error) : err);
      else reject(new RetryableError(`${(err as NodeJS.ErrnoException).code ?? 'network error'}: ${err.message}`));
    });
    req.end();
  });
}

/** Fires once nothing has happened for timeoutMs of clock time since the last touch(). */
class StallTimer {
  private timer: TimerHandle;

  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: number,
    private readonly onStall: () => void,
  ) {
    this.timer = clock.setTimeout(onStall, timeoutMs);
  }

  touch(): void {
    this.timer.cancel();
    this.timer = this.clock.setTimeout(this.onStall, this.timeoutMs);
  }

  cancel(): void {
    this.timer.cancel();
  }
}

function sleep(clock: Clock, ms: number, signal: AbortSignal, scheduled: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      timer.cancel();
      reject(signal.reason as Error);
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
    scheduled();
  });
}

async function hashOfFile(path: string, signal: AbortSignal): Promise<Hash> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { signal })) hash.update(chunk as Buffer);
  return hash;
}

/** Bytes of the file at path; 0 when it does not exist. */
export async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}
