// The dashboard's session and audience routes of one project, for a signed-in person: a page of
// its sessions (newest first, filtered by date window, status, diagnosis, country and browser, and
// counted up to SESSIONS_COUNT_CAP so a page stays one bounded read over millions, with the
// project's warm pool as it stands), the five
// audience breakdowns of a window with its sessions and median start-up per day,
// one session with its snapshot timeline, the player's
// telemetry as chartable numbers, the page's events, its diagnosis and engine log files (the tail
// to read, the whole file to download), and End session for those who may write. Reads go
// through the analytics API's service, End session through the session service; access is the
// REST API's (dashboard-project-routes.ts says how).
import { createGunzip } from 'node:zlib';
import { pipeline } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DashboardAnalytics, DashboardSession, DashboardSessionDetail, DashboardSessions, DashboardStatsPoint, DashboardWarmPool } from '@pixelfleet/dashboard';
import type { AnalyticsService, SessionSummary } from '../../analytics/analytics-service';
import { ANALYTICS_WINDOW_DAYS } from '../../analytics/analytics-window';
import { ApiError } from '../../errors';
import { BREAKDOWN_DIMENSIONS } from '../../repositories/session-dimensions';
import { DIAGNOSES } from '../../analytics/session-diagnosis';
import { SESSION_STATUSES } from '../../sessions/session-status';
import type { SessionService } from '../../sessions/session-service';
import type { Project } from '../../repositories/projects';
import type { StoredTelemetryRow } from '../../repositories/telemetry';
import { attachment } from '../analytics/analytics-routes';
import { queryParam, wholeNumberParam } from '../api/request-fields';
import type { DashboardGuards } from './dashboard-auth-routes';
import type { DashboardProjectAccess } from './dashboard-project-routes';

export interface DashboardSessionDeps {
  guards: DashboardGuards;
  projectAccess: DashboardProjectAccess;
  analytics: AnalyticsService;
  sessions: Pick<SessionService, 'end' | 'warmPoolOf'>;
}

/** Sessions per page at most (the REST API's cap). */
export const MAX_SESSIONS_PAGE = 100;
/**
 * Matching sessions counted at most: past it the page says "more than 10,000" and pages no
 * further (narrow the window or filter), so neither the count nor the skip walks millions.
 */
export const SESSIONS_COUNT_CAP = 10_000;
/** Characters of a country or browser filter at most (the longest stored names are far shorter). */
const MAX_FILTER_CHARS = 100;
/** Statistics rows the session page charts at most: the newest ones (a row every few seconds: over an hour). */
export const STATS_SHOWN = 1000;
/** Bytes of a log file's end the session page shows. */
export const LOG_TAIL_BYTES = 64 * 1024;
const DAY_MS = 86_400_000;

type ProjectParams = { Params: { projectId: string } };
type SessionParams = { Params: { projectId: string; sessionId: string } };
type LogFileParams = { Params: { projectId: string; logFileId: string } };

export function registerDashboardSessionRoutes(app: FastifyInstance, deps: DashboardSessionDeps, basePath = '/dashboard'): void {
  const { guards, projectAccess } = deps;
  const base = `${basePath}/api/projects/:projectId`;
  const read = { onRequest: guards.limited };

  app.get<ProjectParams>(`${base}/sessions`, read, async (req, reply) => {
    const { header, project } = await projectAccess.read(req);
    const status = oneOfParam(req, 'status', SESSION_STATUSES);
    const diagnosis = oneOfParam(req, 'diagnosis', DIAGNOSES);
    const country = textParam(req, 'country');
    const browser = textParam(req, 'browser');
    const toMs = wholeNumberParam(req.query, 'to') ?? Date.now();
    const fromMs = wholeNumberParam(req.query, 'from') ?? toMs - 30 * DAY_MS;
    const limit = Math.min(MAX_SESSIONS_PAGE, wholeNumberParam(req.query, 'limit') ?? 25);
    const skip = wholeNumberParam(req.query, 'skip') ?? 0;
    if (skip >= SESSIONS_COUNT_CAP) throw new ApiError('invalidField', { detail: `Invalid field: skip must be under ${SESSIONS_COUNT_CAP}: narrow the window or filter` });
    const filters = { ...(status === undefined ? {} : { status }), ...(diagnosis === undefined ? {} : { diagnosis }), ...(country === undefined ? {} : { country }), ...(browser === undefined ? {} : { browser }) };
    const page = await deps.analytics.sessionList({ projectId: project.projectId, fromMs, toMs, ...filters, limit, skip, countCap: SESSIONS_COUNT_CAP });
    const answer: DashboardSessions = { project: header, total: page.total, totalExact: page.totalExact, sessions: page.sessions.map(listed), warmPool: warmPoolOf(project) };
    return reply.header('cache-control', 'no-store').send(answer);
  });

  /** The project's pool, when it has one: a minimum set, or instances left (being stopped after the minimum went to 0). */
  const warmPoolOf = (project: Project): DashboardWarmPool | null => {
    const pool = deps.sessions.warmPoolOf(project);
    const minIdle = project.settings.warmPoolMinIdle;
    if (minIdle <= 0 && pool.ready + pool.starting + pool.ending === 0) return null;
    const { wanted, ready, starting, ending, claims, misses, stopped } = pool;
    return { minIdle, wanted, ready, starting, ending, claims, misses, stopped: stopped ?? null };
  };

  /** The session, when it is this project's; another project's is as unknown as a missing one. */
  const sessionOf = (project: Project, sessionId: string) => {
    const session = deps.analytics.session(sessionId);
    if (session.projectId !== project.projectId) throw new ApiError('sessionNotFound');
    return session;
  };

  app.get<SessionParams>(`${base}/sessions/:sessionId`, read, async (req, reply) => {
    const { header, project } = await projectAccess.read(req);
    const session = sessionOf(project, req.params.sessionId);
    const snapshots = await deps.analytics.snapshots(session.sessionId);
    const summary = await deps.analytics.sessionSummary(session, snapshots);
    const statsPage = await deps.analytics.telemetry({ sessionId: session.sessionId, logType: 'statistics', limit: STATS_SHOWN, skip: 0 });
    const eventsPage = await deps.analytics.telemetry({ sessionId: session.sessionId, logType: 'Webrtc', limit: STATS_SHOWN, skip: 0 });
    const logPage = await deps.analytics.logFiles(session.sessionId, 100, 0);
    const answer: DashboardSessionDetail = {
      project: header,
      session: { ...listed(summary), worker: session.assignedWorker ?? null, city: session.client?.city ?? null },
      timeline: snapshots.map((s) => ({ status: s.data.status, at: s.receivedAt })),
      stats: statsPage.rows.map(statsPoint).reverse(),
      statsTotal: statsPage.total,
      statsLimit: STATS_SHOWN,
      events: eventsPage.rows.map(eventOf).reverse(),
      logFiles: logPage.logFiles.map((f) => ({ logFileId: f.logFileId, fileName: f.fileName, fileSize: f.fileSize, uploadedAt: f.uploadedAt })),
    };
    return reply.header('cache-control', 'no-store').send(answer);
  });

  app.post<SessionParams>(`${base}/sessions/:sessionId/end`, { onRequest: guards.limited, preHandler: guards.sameSite }, async (req, reply) => {
    const { project } = await projectAccess.writer(req);
    const session = sessionOf(project, req.params.sessionId);
    const ended = deps.sessions.end(session.sessionId, 'ended');
    return reply.send({ sessionId: session.sessionId, status: ended.status });
  });

  app.get<ProjectParams>(`${base}/analytics`, read, async (req, reply) => {
    const { header, project } = await projectAccess.read(req);
    const toMs = wholeNumberParam(req.query, 'to') ?? Date.now();
    const fromMs = wholeNumberParam(req.query, 'from') ?? toMs - 30 * DAY_MS;
    if (fromMs > toMs) throw new ApiError('invalidField', { detail: 'Invalid field: from must be at or before to' });
    if (toMs - fromMs > ANALYTICS_WINDOW_DAYS * DAY_MS) throw new ApiError('invalidField', { detail: `Invalid field: the window is at most ${ANALYTICS_WINDOW_DAYS} days` });
    let total = 0;
    const breakdowns = {} as DashboardAnalytics['breakdowns'];
    for (const dimension of BREAKDOWN_DIMENSIONS) {
      const answer = await deps.analytics.breakdown({ projectId: project.projectId, dimension, from: fromMs, to: toMs });
      total = answer.total;
      breakdowns[dimension] = answer.entries.map((e) => ({ value: dimension === 'city' && e.country !== undefined ? `${e.value} (${e.country})` : e.value, count: e.count, percentage: e.percentage }));
    }
    const days = await deps.analytics.days(project.projectId, fromMs, toMs);
    const answer: DashboardAnalytics = { project: header, fromMs, toMs, total, breakdowns, days, maxDays: ANALYTICS_WINDOW_DAYS };
    return reply.header('cache-control', 'no-store').send(answer);
  });

  // A log file: its last LOG_TAIL_BYTES as text (?tail), or the whole file to download.
  app.get<LogFileParams>(`${base}/log-files/:logFileId`, read, async (req, reply) => {
    const { project } = await projectAccess.read(req);
    const file = await deps.analytics.logFile(req.params.logFileId);
    if (file.projectId !== project.projectId) throw new ApiError('analyticsLogFileNotFound');
    const text = pipeline(await deps.analytics.logFileGzip(file), createGunzip(), () => undefined);
    void reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    if (queryParam(req.query, 'tail') === undefined) {
      return reply.type('text/plain; charset=utf-8').header('content-disposition', attachment(file.fileName)).send(text);
    }
    let tail = Buffer.alloc(0);
    for await (const chunk of text as AsyncIterable<Buffer>) {
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > 2 * LOG_TAIL_BYTES) tail = tail.subarray(tail.length - LOG_TAIL_BYTES);
    }
    if (tail.length > LOG_TAIL_BYTES) tail = tail.subarray(tail.length - LOG_TAIL_BYTES);
    const truncated = file.fileSize > tail.length;
    // A cut file starts mid-line (maybe mid-character): from its first whole line.
    const end = tail.toString('utf8');
    return reply.send({ fileName: file.fileName, fileSize: file.fileSize, truncated, text: truncated ? end.slice(end.indexOf('\n') + 1) : end });
  });
}

/** A query parameter that must be one of the values listed (undefined: not given). */
function oneOfParam<T extends string>(req: FastifyRequest, name: string, values: readonly T[]): T | undefined {
  const raw = queryParam(req.query, name);
  if (raw === undefined) return undefined;
  if (!(values as readonly string[]).includes(raw)) throw new ApiError('invalidField', { detail: `Invalid field: ${name} must be one of ${values.join(', ')}` });
  return raw as T;
}

/** A free-text filter (a country or browser name as the breakdowns show it), bounded in length. */
function textParam(req: FastifyRequest, name: string): string | undefined {
  const raw = queryParam(req.query, name);
  if (raw !== undefined && raw.length > MAX_FILTER_CHARS) throw new ApiError('invalidField', { detail: `Invalid field: ${name} must be at most ${MAX_FILTER_CHARS} characters` });
  return raw;
}

function listed(s: SessionSummary): DashboardSession {
  const session = s.entry.session;
  return {
    sessionId: session.sessionId,
    status: session.status,
    region: session.region,
    endReason: session.endReason ?? null,
    createdAt: session.createdAt,
    queueWaitMs: s.queueWaitMs ?? null,
    startupMs: s.startupMs ?? null,
    launchMs: s.launchMs ?? null,
    negotiationMs: s.negotiationMs ?? null,
    servedWarm: s.servedWarm,
    lifetimeMs: s.lifetimeMs ?? null,
    browser: session.client?.browser ?? null,
    os: session.client?.os ?? null,
    deviceType: session.client?.deviceType ?? null,
    country: session.client?.country ?? null,
    diagnosis: s.diagnosis,
  };
}

/** A number from a row's string field ('' and anything unreadable: not measured). */
function measured(row: Record<string, unknown>, field: string): number | null {
  const value = row[field];
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string' || value.trim() === '') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

function statsPoint(r: StoredTelemetryRow): DashboardStatsPoint {
  return { at: r.ts, fps: measured(r.row, 'FPS'), bitrateKbps: measured(r.row, 'bitrate'), rttMs: measured(r.row, 'latency'), packetsLost: measured(r.row, 'packetLoss'), framesDropped: measured(r.row, 'framesDropped') };
}

function eventOf(r: StoredTelemetryRow): DashboardSessionDetail['events'][number] {
  const scalar = (value: unknown): string | undefined => (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined);
  const detail = ['iceConnectionState', 'reasonName', 'code']
    .map((k) => [k, scalar(r.row[k])] as const)
    .filter(([, value]) => value !== undefined)
    .map(([k, value]) => `${k}: ${value}`)
    .join(', ');
  return { at: r.ts, event: r.event ?? scalar(r.row.event) ?? '', detail: detail === '' ? null : detail };
}
