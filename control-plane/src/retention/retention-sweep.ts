// The retention job: ended sessions (with their snapshots, telemetry rows and log file records),
// fleet events and settled worker commands older than `retention.sessionDays` are deleted; so are
// log file records older than `retention.logDays` (from their upload) and telemetry rows older
// than `retention.telemetryDays` (from their receipt), whatever their session's state. It runs
// every `retention.sweepIntervalMinutes` on the injected clock and once at start. Each statement
// deletes at most `batchRows` rows and the event loop gets a turn between two statements, so a
// sweep of a large backlog never holds the loop for long (signalling, gRPC and HTTP carry on in
// between). Sessions not ended are kept whatever their age; the per-day rollup of session
// dimensions loses its whole days before the cutoff (a breakdown reaching back past retention
// counts fewer). A deleted log file record's gzip blob
// is deleted too once no record names its digest (blobs are content-addressed: one may back
// several records, or a build); the check and the deletion run in the same turn of the event
// loop (SQLite's answers are promises already settled: no I/O callback runs in between; a store
// answering over a socket will need uploads and this deletion serialized per digest), and an
// upload stores its blob and inserts its record without yielding between the two, so a blob an
// upload is about to name is never taken (the deletion is issued in that turn; object storage
// finishes it afterwards, and an upload of the same bytes meanwhile stores them again).
// People's dead rows go too: dashboard sign-ins that are over, links that can no longer be used,
// and mail records older than the cutoff. Last, the blob store's leftovers of interrupted writes
// (temp files, incomplete multipart uploads) older than a day are deleted.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '@pixelfleet/common';
import type { EventsRepository } from '../repositories/events';
import type { WorkersRepository } from '../repositories/workers';
import { SESSION_CHILD_TABLES, type SessionChildTable, type SessionRetentionRepository } from '../repositories/session-retention';
import type { SessionDimensionsRepository } from '../repositories/session-dimensions';
import type { SessionDailyRepository } from '../repositories/session-daily';
import type { LogRetentionRepository } from '../repositories/log-retention';
import type { BlobStore } from '../blobs/blob-store';
import type { PeopleRetentionRepository } from '../repositories/people-retention';
import { SESSION_IDLE_MS } from '../people/people-service';

/** Rows deleted by one statement: small enough to take a few milliseconds on a table of millions. */
export const RETENTION_BATCH_ROWS = 1_000;

const DAY_MS = 24 * 60 * 60 * 1000;

export interface RetentionSweepDeps {
  sessions: SessionRetentionRepository;
  events: Pick<EventsRepository, 'deleteBefore'>;
  commands: Pick<WorkersRepository, 'deleteSettledCommandsBefore'>;
  /** The per-day rollup of session dimensions: its whole UTC days before the cutoff go with the sessions. */
  dimensions?: Pick<SessionDimensionsRepository, 'deleteDaysBefore'>;
  /** The daily sessions and start-up rollups: their whole UTC days before the cutoff go too. */
  daily?: Pick<SessionDailyRepository, 'deleteDaysBefore'>;
  clock: Clock;
  log: Logger;
  /** Days an ended session, a fleet event and a settled command are kept. */
  sessionDays: number;
  /** Log file records and telemetry rows by age, and whether a blob is still named. */
  logs: LogRetentionRepository;
  /** Where a deleted log file's blob is removed from, and whose abandoned uploads are swept. */
  blobs: Pick<BlobStore, 'remove' | 'sweepAbandoned'>;
  /** Days a log file record (and its blob) is kept from its upload (≤ sessionDays). */
  logDays: number;
  /** Days a telemetry row is kept from its receipt (≤ sessionDays). */
  telemetryDays: number;
  /** Sign-ins, links and mail records (people-retention.ts). */
  people?: PeopleRetentionRepository;
  /** Time between two sweeps, in ms. */
  sweepIntervalMs: number;
  /** Rows per statement (RETENTION_BATCH_ROWS). */
  batchRows?: number;
  /** Gives the event loop a turn between two statements (default: one setImmediate turn); benches time each batch through it. */
  betweenBatches?: () => Promise<void>;
}

/** What one sweep deleted, in rows, and how many statements it took. */
export interface SweepResult {
  sessions: number;
  snapshots: number;
  telemetryRows: number;
  logFiles: number;
  /** Blobs deleted with the last record that named them. */
  logBlobs: number;
  /** Leftovers of interrupted blob writes deleted (temp files, incomplete multipart uploads). */
  abandonedUploads: number;
  events: number;
  commands: number;
  /** Rollup rows (session_dimension_days) of days before the cutoff. */
  dimensionDays: number;
  /** Daily rollup rows (session_days, session_startup_days) of days before the cutoff. */
  dailyRows: number;
  /** Dashboard sign-ins that were over, links no longer usable, mail records sent or given up before the cutoff. */
  signIns: number;
  links: number;
  mails: number;
  batches: number;
}

const CHILD_FIELD: Record<SessionChildTable, 'snapshots' | 'telemetryRows' | 'logFiles'> = {
  session_snapshots: 'snapshots',
  telemetry_rows: 'telemetryRows',
  log_files: 'logFiles',
};

export class RetentionSweep {
  private readonly batchRows: number;
  private readonly betweenBatches: () => Promise<void>;
  private timer: TimerHandle | undefined;
  private running: Promise<SweepResult> | undefined;
  /** The sweep asked for while one was running: it starts when that one ends (requests meanwhile join it). */
  private queued: Promise<SweepResult> | undefined;
  private closed = false;

  constructor(private readonly deps: RetentionSweepDeps) {
    this.batchRows = deps.batchRows ?? RETENTION_BATCH_ROWS;
    this.betweenBatches = deps.betweenBatches ?? (() => nextTurn());
  }

  /** Sweeps now, then every sweepIntervalMs until close(). */
  start(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = this.deps.clock.setInterval(() => this.sweepInBackground(), this.deps.sweepIntervalMs);
    this.sweepInBackground();
  }

  /**
   * Runs a sweep that starts now, or as soon as the one running ends (its cutoff was taken before
   * this call), and resolves with what it deleted.
   */
  sweep(): Promise<SweepResult> {
    if (this.running === undefined) {
      this.running = this.run().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.sweep();
      });
    return this.queued;
  }

  /** Stops the timer and waits for a running sweep to stop after its current statement. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.running?.catch(() => undefined);
    await this.queued?.catch(() => undefined);
  }

  private sweepInBackground(): void {
    this.sweep().catch((err: unknown) => this.deps.log.error({ err }, 'retention sweep failed; the next one tries again'));
  }

  private async run(): Promise<SweepResult> {
    const { sessions, events, commands, clock, log } = this.deps;
    const cutoff = clock.now() - this.deps.sessionDays * DAY_MS;
    const limit = this.batchRows;
    const result: SweepResult = { sessions: 0, snapshots: 0, telemetryRows: 0, logFiles: 0, logBlobs: 0, abandonedUploads: 0, events: 0, commands: 0, dimensionDays: 0, dailyRows: 0, signIns: 0, links: 0, mails: 0, batches: 0 };
    const logCutoff = clock.now() - this.deps.logDays * DAY_MS;
    const telemetryCutoff = clock.now() - this.deps.telemetryDays * DAY_MS;
    /** Blob deletions issued and not yet awaited (object storage answers later). */
    const removing: Promise<void>[] = [];
    /** Deletes a batch of log file records, then issues the deletion of the blobs no record names any more (same turn); returns the records deleted. */
    const deleteLogs = async (deleteBatch: () => Promise<string[]>): Promise<number> => {
      const digests = await deleteBatch();
      for (const sha256 of new Set(digests)) {
        if (await this.deps.logs.isBlobReferenced(sha256)) continue;
        removing.push(
          this.deps.blobs.remove(sha256).catch((err: unknown) => {
            result.logBlobs -= 1;
            log.warn({ err, sha256 }, 'a log blob could not be deleted from the blob store; it stays, named by no record');
          }),
        );
        result.logBlobs += 1;
      }
      return digests.length;
    };
    if (this.closed) return result;
    /** One statement done: the loop gets its turn; false once close() was called. */
    const turn = async (): Promise<boolean> => {
      result.batches += 1;
      await this.betweenBatches();
      await Promise.all(removing.splice(0));
      return !this.closed;
    };
    /** Repeats a bounded delete until it deletes less than a full batch. */
    const drain = async (deleteBatch: () => number | Promise<number>, add: (n: number) => void): Promise<boolean> => {
      for (;;) {
        const n = await deleteBatch();
        add(n);
        if (!(await turn())) return false;
        if (n < limit) return true;
      }
    };

    sweep: {
      // Sessions a batch at a time: their child rows first (a session may have up to 20,000
      // telemetry rows, which a cascade would delete in one statement), then the sessions.
      for (let ids = await sessions.listEndedBefore(cutoff, limit); ids.length > 0 && !this.closed; ids = await sessions.listEndedBefore(cutoff, limit)) {
        for (const table of SESSION_CHILD_TABLES) {
          const field = CHILD_FIELD[table];
          const deleteBatch =
            table === 'log_files' ? () => deleteLogs(() => this.deps.logs.deleteLogFilesOfSessions(ids, limit)) : () => sessions.deleteChildRows(table, ids, limit);
          if (!(await drain(deleteBatch, (n) => (result[field] += n)))) break sweep;
        }
        const ended = await sessions.deleteEnded(ids);
        result.sessions += ended;
        if (!(await turn())) break sweep;
      }
      // Whole days ending at or before the cutoff (day numbers: floor(ms / DAY_MS)).
      const { dimensions } = this.deps;
      if (dimensions !== undefined && (this.closed || !(await drain(() => dimensions.deleteDaysBefore(Math.floor(cutoff / DAY_MS), limit), (n) => (result.dimensionDays += n))))) break sweep;
      const { daily } = this.deps;
      if (daily !== undefined && (this.closed || !(await drain(() => daily.deleteDaysBefore(Math.floor(cutoff / DAY_MS), limit), (n) => (result.dailyRows += n))))) break sweep;
      if (this.closed || !(await drain(() => events.deleteBefore(cutoff, limit), (n) => (result.events += n)))) break sweep;
      if (!(await drain(() => commands.deleteSettledCommandsBefore(cutoff, limit), (n) => (result.commands += n)))) break sweep;
      const { people } = this.deps;
      if (people !== undefined) {
        const now = clock.now();
        if (!(await drain(() => people.deleteEndedSignIns(now, now - SESSION_IDLE_MS, limit), (n) => (result.signIns += n)))) break sweep;
        if (!(await drain(() => people.deleteDeadLinks(now, limit), (n) => (result.links += n)))) break sweep;
        if (!(await drain(() => people.deleteEndedMailBefore(cutoff, limit), (n) => (result.mails += n)))) break sweep;
      }
      // Shorter windows for the bulky rows, sessions ended or not.
      if (!(await drain(() => deleteLogs(() => this.deps.logs.deleteLogFilesBefore(logCutoff, limit)), (n) => (result.logFiles += n)))) break sweep;
      if (!(await drain(() => this.deps.logs.deleteTelemetryBefore(telemetryCutoff, limit), (n) => (result.telemetryRows += n)))) break sweep;
      try {
        result.abandonedUploads = await this.deps.blobs.sweepAbandoned();
      } catch (err) {
        log.warn({ err }, 'abandoned blob uploads could not be swept; the next sweep tries again');
      }
    }
    await Promise.all(removing.splice(0));
    const deleted =
      result.sessions + result.snapshots + result.telemetryRows + result.logFiles + result.abandonedUploads + result.dimensionDays + result.dailyRows + result.events + result.commands + result.signIns + result.links + result.mails;
    if (deleted > 0) {
      log.info(
        {
          ...result,
          olderThan: new Date(cutoff).toISOString(),
          logsOlderThan: new Date(logCutoff).toISOString(),
          telemetryOlderThan: new Date(telemetryCutoff).toISOString(),
          stopped: this.closed,
        },
        'retention sweep deleted old history',
      );
    }
    return result;
  }
}
