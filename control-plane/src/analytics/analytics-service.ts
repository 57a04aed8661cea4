// The analytics API's reads, in domain terms: a project's audience breakdown, one session's
// telemetry, snapshots and engine log files, a project's sessions with what happened in each, and
// a log file's bytes. Routes authorize first; this answers for a project or session already checked.
import type { Readable } from 'node:stream';
import { ApiError } from '../errors';
import type { BlobStore } from '../blobs/blob-store';
import type { LogFileRecord, LogFilesRepository } from '../repositories/log-files';
import type { SessionHistoryRepository, SessionListEntry, SessionListQuery, SnapshotRecord } from '../repositories/session-history';
import type { SessionRecord, SessionsRepository } from '../repositories/sessions';
import type { StoredTelemetryRow, TelemetryPageQuery, TelemetryRepository } from '../repositories/telemetry';
import type { BreakdownEntry, BreakdownQuery, SessionDimensionsRepository } from '../repositories/session-dimensions';
import type { SessionDailyRepository, SessionDay } from '../repositories/session-daily';
import type { SessionStatus } from '../sessions/session-status';
import type { Diagnosis } from './session-diagnosis';
import { percentagesOf } from './breakdown-percentages';

/** A session of the list, with its times and durations (ms) derived from its snapshots' receivedAt. */
export interface SessionSummary {
  entry: SessionListEntry;
  /** Enqueued → Starting; undefined until placed. */
  queueWaitMs: number | undefined;
  /** Starting → Running; undefined until Running. */
  startupMs: number | undefined;
  /** Of the start-up: Starting → the app identified itself on the agent's signalling; undefined until then (or for sessions from before migration 22). */
  launchMs: number | undefined;
  /** Of the start-up: the app identified (or, served warm, the claim if later) → Running (the viewer's WebRTC up); undefined until Running. */
  negotiationMs: number | undefined;
  /** A warm instance served it: its app was launched before the viewer came (launchMs is then 0 unless it was still loading). */
  servedWarm: boolean;
  /** Enqueued → Terminated; undefined while the session goes on. */
  lifetimeMs: number | undefined;
  diagnosis: Diagnosis;
}

/** A breakdown entry with its share of the total (percentages/breakdown-percentages.ts). */
export interface BreakdownShare extends BreakdownEntry {
  percentage: number;
}

export interface AnalyticsServiceDeps {
  sessions: Pick<SessionsRepository, 'findById'>;
  history: SessionHistoryRepository;
  telemetry: Pick<TelemetryRepository, 'pageBySession'>;
  dimensions: Pick<SessionDimensionsRepository, 'breakdown'>;
  daily: Pick<SessionDailyRepository, 'days'>;
  logFiles: Pick<LogFilesRepository, 'pageBySession' | 'findById'>;
  blobs: Pick<BlobStore, 'has' | 'read'>;
}

/** b − a, never negative; undefined when either is unknown. */
const between = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined ? undefined : Math.max(0, b - a));

const laterOf = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? undefined : b === undefined ? a : Math.max(a, b));
const span = (times: Partial<Record<SessionStatus, number>>, from: SessionStatus, to: SessionStatus): number | undefined => between(times[from], times[to]);

export class AnalyticsService {
  constructor(private readonly deps: AnalyticsServiceDeps) {}

  /** The session, or 404 Session not found. */
  session(sessionId: string): SessionRecord {
    const s = this.deps.sessions.findById(sessionId);
    if (!s) throw new ApiError('sessionNotFound');
    return s;
  }

  snapshots(sessionId: string): Promise<SnapshotRecord[]> {
    return this.deps.history.snapshots(sessionId);
  }

  /** A page of the session's telemetry rows, newest first, and how many match. */
  telemetry(q: TelemetryPageQuery): Promise<{ total: number; rows: StoredTelemetryRow[] }> {
    return this.deps.telemetry.pageBySession(q);
  }

  /**
   * The project's sessions created in [from, to] (both inclusive, ms) grouped by one dimension:
   * entries by count, then value, each with its percentage of `total`.
   */
  async breakdown(q: BreakdownQuery): Promise<{ total: number; entries: BreakdownShare[] }> {
    // The repository's window ends before `to`; the API's endDate is inclusive.
    const { total, entries } = await this.deps.dimensions.breakdown({ ...q, to: q.to + 1 });
    const shares = percentagesOf(
      entries.map((e) => e.count),
      total,
    );
    return { total, entries: entries.map((e, i) => ({ ...e, percentage: shares[i] ?? 0 })) };
  }

  /** The project's sessions and median start-up per UTC day, for each day [fromMs, toMs] touches (from the daily rollups). */
  days(projectId: string, fromMs: number, toMs: number): Promise<SessionDay[]> {
    return this.deps.daily.days(projectId, fromMs, toMs);
  }

  logFiles(sessionId: string, limit: number, skip: number): Promise<{ total: number; logFiles: LogFileRecord[] }> {
    return this.deps.logFiles.pageBySession(sessionId, limit, skip);
  }

  /** The log file, or 404 Log file not found (also when its bytes are gone from the blob store). */
  async logFile(logFileId: string): Promise<LogFileRecord> {
    const f = await this.deps.logFiles.findById(logFileId);
    if (!f || !(await this.deps.blobs.has(f.blobSha256))) throw new ApiError('analyticsLogFileNotFound');
    return f;
  }

  /** The stored (gzip) bytes of a log file, once the store has answered. */
  logFileGzip(f: LogFileRecord): Promise<Readable> {
    return this.deps.blobs.read(f.blobSha256);
  }

  /**
   * A page of the project's sessions, newest first. Per listed session: its status times (one
   * indexed read of its snapshots) and its stored diagnosis, never a scan of its rows.
   */
  async sessionList(q: SessionListQuery): Promise<{ total: number; totalExact: boolean; sessions: SessionSummary[] }> {
    const page = await this.deps.history.list(q);
    return { total: page.total, totalExact: page.totalExact, sessions: page.sessions.map((entry) => this.summaryOf(entry)) };
  }

  /** One session as the list shows it, from its snapshots (the dashboard's session page). */
  async sessionSummary(session: SessionRecord, snapshots: readonly SnapshotRecord[]): Promise<SessionSummary> {
    const statusTimes: SessionListEntry['statusTimes'] = {};
    for (const snapshot of snapshots) statusTimes[snapshot.data.status] ??= snapshot.receivedAt;
    return this.summaryOf({ session, statusTimes, diagnosis: await this.deps.history.diagnosisOf(session.sessionId) });
  }

  private summaryOf(entry: SessionListEntry): SessionSummary {
    return {
      entry,
      queueWaitMs: span(entry.statusTimes, 'Enqueued', 'Starting'),
      startupMs: span(entry.statusTimes, 'Starting', 'Running'),
      launchMs: between(entry.statusTimes.Starting, entry.session.identifiedAt),
      // Served warm, the app may have identified long before its viewer came: the negotiation starts at the later of the two.
      negotiationMs: between(laterOf(entry.session.identifiedAt, entry.statusTimes.Starting), entry.statusTimes.Running),
      servedWarm: entry.session.claimedAt !== undefined,
      lifetimeMs: span(entry.statusTimes, 'Enqueued', 'Terminated'),
      diagnosis: entry.diagnosis,
    };
  }
}
