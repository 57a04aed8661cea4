// Drains the log spool to the control plane: oldest entry first, one file at a time. A failed
// upload waits a full-jitter backoff on the clock and tries again; a reconnected control link
// retries at once; a refusal for good (the control plane named the file invalid, the session
// unknown or not this worker's, a spooled file that cannot be read) drops that file with a
// warning. An error the control plane raised on one file (not a lost connection) that repeats
// MAX_SERVER_FAILURES_PER_FILE times in a row drops that file too, so one bad file cannot hold
// every log behind it until logSpool.maxAgeHours; an outage drops nothing. Started at agent
// start, so what a stopped agent left in the spool is sent by the next run.
import type { Logger } from 'pino';
import { backoffDelayMs, type BackoffOptions, type Clock, type TimerHandle } from '@pixelfleet/common';
import { pendingFiles, spoolFilePath, type LogSpool, type SpoolEntry } from './log-spool';

/** How long close() waits for an upload in flight, in ms (a control plane that went silent must not hold the agent's shutdown). */
export const CLOSE_WAIT_MS = 5_000;

/** Failures of one file raised by the control plane itself (not a lost connection) before it is dropped. */
export const MAX_SERVER_FAILURES_PER_FILE = 5;

/** The control plane refused a log for good: sending it again would get the same answer. */
export class LogUploadRefused extends Error {
  override readonly name = 'LogUploadRefused';
}

/**
 * The control plane was reached and failed on this file (an internal error, data loss): maybe
 * passing, maybe the file; retried, but only MAX_SERVER_FAILURES_PER_FILE times in a row.
 */
export class LogUploadFailedOnServer extends Error {
  override readonly name = 'LogUploadFailedOnServer';
}

/** One spooled file to send; resolves with the control plane's record of it. */
export type SendLogFile = (sessionId: string, file: { path: string; fileName: string; fileSize: number }) => Promise<{ logFileId: string; gzSize: number }>;

export interface SpoolUploaderOptions {
  spool: LogSpool;
  send: SendLogFile;
  clock: Clock;
  /** Waits between failed attempts (full jitter; DEFAULT_BACKOFF is 1 s doubling to 30 s). */
  backoff: BackoffOptions;
  log: Logger;
  /** Random source of the jitter (tests pin it). */
  random?: () => number;
}

export class SpoolUploader {
  private running: Promise<void> | undefined;
  private again = false;
  private attempt = 0;
  /** The file whose server-side failures are being counted, and how many in a row. */
  private serverFailures = { file: '', count: 0 };
  private retryTimer: TimerHandle | undefined;
  private closed = false;

  constructor(private readonly options: SpoolUploaderOptions) {}

  /** Failed attempts in a row so far (0 after a success). */
  get failures(): number {
    return this.attempt;
  }

  /** True while a retry waits on its backoff timer. */
  get waiting(): boolean {
    return this.retryTimer !== undefined;
  }

  /** Drains now, unless a retry is waiting on its backoff (then it runs when its timer fires). */
  kick(): Promise<void> {
    if (this.retryTimer !== undefined) return this.running ?? Promise.resolve();
    return this.drain();
  }

  /** The control link is back: any waiting retry runs now, with the backoff started over. */
  retryNow(): Promise<void> {
    this.retryTimer?.cancel();
    this.retryTimer = undefined;
    this.attempt = 0;
    return this.drain();
  }

  /**
   * Stops: first drains for at most drainMs (default 0: no drain), then stops retrying and waits
   * at most CLOSE_WAIT_MS for the upload in flight. What is left stays spooled for the next run (an
   * upload whose answer never came is sent again then, and answered with the stored record).
   * Idempotent.
   */
  async close(drainMs = 0): Promise<void> {
    if (drainMs > 0 && !this.closed) await this.within(this.kick(), drainMs);
    this.closed = true;
    this.retryTimer?.cancel();
    this.retryTimer = undefined;
    if (this.running) await this.within(this.running, CLOSE_WAIT_MS);
  }

  /** Resolves when work settles or after ms on the clock, whichever is first. */
  private async within(work: Promise<void>, ms: number): Promise<void> {
    let timer: TimerHandle | undefined;
    try {
      await Promise.race([work, new Promise<void>((resolve) => (timer = this.options.clock.setTimeout(resolve, ms)))]);
    } finally {
      timer?.cancel();
    }
  }

  private drain(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running !== undefined) {
      // Asked while draining (a new entry, a reconnect): one more pass once this one ends.
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pass();
        } while (this.again && !this.closed && this.retryTimer === undefined);
      } catch (err) {
        this.options.log.error({ err }, 'log spool drain failed');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** Sends everything pending, oldest first; stops at the first failure and arms the retry. */
  private async pass(): Promise<void> {
    const { spool, send, log } = this.options;
    // Each retry applies the age bound too: an outage longer than logSpool.maxAgeHours drops the oldest while it lasts.
    await spool.enforceBounds();
    for (let entry of await spool.entries()) {
      for (const file of pendingFiles(entry)) {
        if (this.closed) return;
        const sessionId = entry.manifest.sessionId;
        let next: SpoolEntry | undefined;
        try {
          const stored = await send(sessionId, { path: spoolFilePath(entry, file), fileName: file.fileName, fileSize: file.fileSize });
          this.attempt = 0;
          this.serverFailures = { file: '', count: 0 };
          log.info({ sessionId, fileName: file.fileName, logFileId: stored.logFileId, gzSize: stored.gzSize }, 'session log uploaded');
          next = await spool.settle(entry, file.fileName, { uploaded: stored });
        } catch (err) {
          const reason = this.givenUpOn(`${sessionId}/${file.fileName}`, err as Error);
          if (reason === undefined) {
            this.armRetry(sessionId, file.fileName, err as Error);
            return;
          }
          log.warn({ sessionId, fileName: file.fileName, reason }, 'a session log is given up on; it is not sent again');
          next = await spool.settle(entry, file.fileName, { dropped: reason });
        }
        if (next === undefined) break;
        entry = next;
      }
    }
  }

  /** Why a file is dropped after this failure, or undefined when it is worth another try. */
  private givenUpOn(file: string, err: Error): string | undefined {
    if (err instanceof LogUploadRefused) return err.message;
    if (!(err instanceof LogUploadFailedOnServer)) return undefined;
    this.serverFailures = { file, count: this.serverFailures.file === file ? this.serverFailures.count + 1 : 1 };
    if (this.serverFailures.count < MAX_SERVER_FAILURES_PER_FILE) return undefined;
    this.serverFailures = { file: '', count: 0 };
    return `the control plane failed on it ${MAX_SERVER_FAILURES_PER_FILE} times in a row: ${err.message}`;
  }

  private armRetry(sessionId: string, fileName: string, err: Error): void {
    const delayMs = backoffDelayMs(this.attempt, this.options.backoff, this.options.random);
    this.attempt += 1;
    this.options.log.warn({ sessionId, fileName, err: err.message, attempt: this.attempt, retryInMs: delayMs }, 'session log upload failed; it stays spooled and is retried');
    if (this.closed) return;
    this.retryTimer = this.options.clock.setTimeout(() => {
      this.retryTimer = undefined;
      void this.drain();
    }, delayMs);
  }
}
