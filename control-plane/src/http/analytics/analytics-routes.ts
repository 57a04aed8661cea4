// The analytics API under `{platform_url}/api/v1/analytics`: key in `x-api-key`, read access.
// Each route reads its query (400 before anything is read from the database), authorizes
// (analytics-read.ts: 401, 429, then 404/403), asks the analytics service and shapes its answer.
// Errors here carry `code` and the offending `field` beside `message` (spec: Errors, Format 3).
import { createGunzip } from 'node:zlib';
import { pipeline } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '@pixelfleet/common';
import { ApiError, analyticsCodeOf, DOMAIN_ERROR_HTTP_STATUS, DomainError, HTTP_ERRORS } from '../../errors';
import type { AnalyticsService } from '../../analytics/analytics-service';
import type { ClientDimensions } from '../../repositories/session-dimensions';
import { queryParam } from '../api/request-fields';
import { POLLED_ROUTE_LOG_LEVEL } from '../api/api-deps';
import { acceptsGzip } from '../accept-encoding';
import { analyticsReader, checkNamedProjectRead, checkProjectRead, checkSameProject, requiredProjectId, type AnalyticsReadDeps } from './analytics-read';
import {
  countryCode,
  defaultedWindow,
  dimension,
  LOG_FILE_PAGE_DEFAULT,
  logType,
  optionalWindow,
  paging,
  requiredWindow,
  SESSION_PAGE_DEFAULT,
  MAX_SESSION_PAGE_LIMIT,
  sessionStatus,
  TELEMETRY_PAGE_DEFAULT,
} from './analytics-request';
import {
  ANALYTICS_SECURITY,
  analyticsErrorResponses,
  breakdownQuery,
  breakdownResponse,
  logFileDownloadResponse,
  logFileIdParams,
  logFilesQuery,
  logFilesResponse,
  projectIdPathParams,
  projectIdQueryOnly,
  sessionIdParams,
  sessionsQuery,
  sessionsResponse,
  snapshotsResponse,
  telemetryQuery,
  telemetryResponse,
} from './analytics-schemas';

/** Path prefix of the analytics API on `{platform_url}`. */
export const ANALYTICS_PREFIX = '/api/v1/analytics';

export interface AnalyticsRouteDeps extends AnalyticsReadDeps {
  analytics: AnalyticsService;
  clock: Clock;
  log: FastifyBaseLogger;
}

const isoOf = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** The telemetry rows' `geoData` shape; null when the address told nothing. */
function geoDataOf(c: ClientDimensions): { country?: string; countryCode?: string; city?: string } | null {
  if (c.country === undefined && c.countryCode === undefined && c.city === undefined) return null;
  return { ...(c.country === undefined ? {} : { country: c.country }), ...(c.countryCode === undefined ? {} : { countryCode: c.countryCode }), ...(c.city === undefined ? {} : { city: c.city }) };
}

/** A Content-Disposition for a stored file name (names are checked at upload: letters, digits, ` ._()-`). */
export function attachment(fileName: string): string {
  return `attachment; filename="${fileName.replace(/["\\\r\n]/g, '_')}"`;
}

export function registerAnalyticsRoutes(app: FastifyInstance, deps: AnalyticsRouteDeps): void {
  app.register(
    (api, _opts, done) => {
      // Requests are read by analytics-request.ts; the schemas serve OpenAPI and serialization.
      api.setValidatorCompiler(() => () => true);
      api.setErrorHandler((err, req, reply) => {
        if (err instanceof ApiError) {
          const code = analyticsCodeOf(err.entry);
          return reply
            .status(err.status)
            .headers(err.headers)
            .send({ message: err.message, ...(code === undefined ? {} : { code }), ...err.fields });
        }
        if (err instanceof DomainError) return reply.status(DOMAIN_ERROR_HTTP_STATUS[err.kind]).send({ message: err.message, code: err.kind.toUpperCase() });
        req.log.error({ err }, 'unhandled error');
        return reply.status(500).send({ message: HTTP_ERRORS.internal.message, code: analyticsCodeOf('internal') });
      });
      registerReadRoutes(api, deps);
      done();
    },
    { prefix: ANALYTICS_PREFIX },
  );
}

/**
 * A read of one session's data: the key and its read limit, `projectId` (403 when missing), the
 * project (403 when it is not readable or does not exist), then the session (404) in that
 * project (403).
 */
async function authorizeSessionRead(req: FastifyRequest, sessionId: string, deps: AnalyticsRouteDeps): Promise<void> {
  const userId = await analyticsReader(req, deps);
  const projectId = requiredProjectId(req.query);
  await checkNamedProjectRead(userId, projectId, deps);
  checkSameProject(deps.analytics.session(sessionId).projectId, projectId);
}

function registerReadRoutes(api: FastifyInstance, deps: AnalyticsRouteDeps): void {
  const route = (tags: string[], summary: string) => ({ tags, summary, security: ANALYTICS_SECURITY });

  api.get(
    '/projects/:projectId/analytics/breakdown',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: {
        ...route(['analytics'], "A project's sessions in a window grouped by one dimension"),
        params: projectIdPathParams,
        querystring: breakdownQuery,
        response: { 200: breakdownResponse, ...analyticsErrorResponses },
      },
    },
    async (req) => {
      // The spec's order: the dimension, then the dates; all before anything is read.
      const dim = dimension(req.query);
      const window = requiredWindow(req.query);
      const country = countryCode(req.query, dim);
      const projectId = queryParam(req.params, 'projectId') ?? '';
      const userId = await analyticsReader(req, deps);
      await checkProjectRead(userId, projectId, deps);
      const { total, entries } = await deps.analytics.breakdown({ projectId, dimension: dim, from: window.fromMs, to: window.toMs, ...(country === undefined ? {} : { countryCode: country }) });
      return {
        success: true,
        projectId,
        dimension: dim,
        total,
        count: entries.length,
        breakdown: entries.map((e) => ({
          value: e.value,
          count: e.count,
          percentage: e.percentage,
          ...(dim === 'city' ? { country: e.country ?? '', countryCode: e.countryCode ?? '' } : {}),
        })),
      };
    },
  );

  api.get(
    '/frontend-streaming-logs',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: { ...route(['analytics'], "One session's telemetry rows, newest first"), querystring: telemetryQuery, response: { 200: telemetryResponse, ...analyticsErrorResponses } },
    },
    async (req) => {
      const type = logType(req.query);
      const window = optionalWindow(req.query);
      const page = paging(req.query, TELEMETRY_PAGE_DEFAULT);
      const sessionId = queryParam(req.query, 'sessionId');
      if (sessionId === undefined) throw new ApiError('missingField', { field: 'sessionId' }, {}, { field: 'sessionId' });
      await authorizeSessionRead(req, sessionId, deps);
      const { total, rows } = await deps.analytics.telemetry({
        sessionId,
        ...(type === undefined ? {} : { logType: type }),
        ...(window.fromMs === undefined ? {} : { from: window.fromMs }),
        ...(window.toMs === undefined ? {} : { to: window.toMs }),
        ...page,
      });
      return { success: true, total, count: rows.length, logs: rows.map((r) => r.row) };
    },
  );

  api.get(
    '/sessions/:sessionId',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: {
        ...route(['analytics'], "A session's status snapshots, oldest first"),
        params: sessionIdParams,
        querystring: projectIdQueryOnly,
        response: { 200: snapshotsResponse, ...analyticsErrorResponses },
      },
    },
    async (req) => {
      const sessionId = queryParam(req.params, 'sessionId') ?? '';
      await authorizeSessionRead(req, sessionId, deps);
      const snapshots = (await deps.analytics.snapshots(sessionId)).map((s) => ({ id: `snap_${s.id}`, receivedAt: new Date(s.receivedAt).toISOString(), data: s.data }));
      return { sessionId, snapshots, totalSnapshots: snapshots.length };
    },
  );

  api.get(
    '/log-files/session/:sessionId',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: {
        ...route(['analytics'], "A session's engine log files, oldest first"),
        params: sessionIdParams,
        querystring: logFilesQuery,
        response: { 200: logFilesResponse, ...analyticsErrorResponses },
      },
    },
    async (req) => {
      const page = paging(req.query, LOG_FILE_PAGE_DEFAULT);
      const sessionId = queryParam(req.params, 'sessionId') ?? '';
      await authorizeSessionRead(req, sessionId, deps);
      const { total, logFiles } = await deps.analytics.logFiles(sessionId, page.limit, page.skip);
      return {
        success: true,
        sessionId,
        total,
        count: logFiles.length,
        logFiles: logFiles.map((f) => ({
          _id: f.logFileId,
          sessionId: f.sessionId,
          projectId: f.projectId,
          fileName: f.fileName,
          fileSize: f.fileSize,
          gzSize: f.gzSize,
          uploadedAt: new Date(f.uploadedAt).toISOString(),
        })),
      };
    },
  );

  api.get(
    '/log-files/:logFileId/download',
    {
      schema: {
        ...route(['analytics'], 'Download one engine log file'),
        params: logFileIdParams,
        querystring: projectIdQueryOnly,
        response: { 200: logFileDownloadResponse, ...analyticsErrorResponses },
      },
    },
    async (req, reply) => {
      const logFileId = queryParam(req.params, 'logFileId') ?? '';
      const userId = await analyticsReader(req, deps);
      const projectId = requiredProjectId(req.query);
      await checkNamedProjectRead(userId, projectId, deps);
      const file = await deps.analytics.logFile(logFileId);
      checkSameProject(file.projectId, projectId);
      const gzip = await deps.analytics.logFileGzip(file);
      const accept = req.headers['accept-encoding'];
      void reply
        .header('content-type', file.fileName.toLowerCase().endsWith('.zip') ? 'application/zip' : 'text/plain; charset=utf-8')
        .header('content-disposition', attachment(file.fileName))
        .header('x-content-type-options', 'nosniff')
        .header('vary', 'accept-encoding');
      if (acceptsGzip(typeof accept === 'string' ? accept : undefined)) {
        return reply.header('content-encoding', 'gzip').header('content-length', String(file.gzSize)).send(gzip);
      }
      // A failure mid-way (a damaged blob) cuts the response; the log says why.
      const text = pipeline(gzip, createGunzip(), (err) => {
        if (err) deps.log.warn({ err, logFileId }, 'log file download failed');
      });
      return reply.send(text);
    },
  );

  api.get(
    '/projects/:projectId/sessions',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: {
        ...route(['analytics'], "A project's sessions, newest first, with times and a diagnosis"),
        params: projectIdPathParams,
        querystring: sessionsQuery,
        response: { 200: sessionsResponse, ...analyticsErrorResponses },
      },
    },
    async (req) => {
      const window = defaultedWindow(req.query, deps.clock.now());
      const status = sessionStatus(req.query);
      const page = paging(req.query, SESSION_PAGE_DEFAULT, MAX_SESSION_PAGE_LIMIT);
      const projectId = queryParam(req.params, 'projectId') ?? '';
      const userId = await analyticsReader(req, deps);
      await checkProjectRead(userId, projectId, deps);
      const { total, sessions } = await deps.analytics.sessionList({ projectId, ...window, ...(status === undefined ? {} : { status }), ...page });
      return {
        success: true,
        projectId,
        total,
        count: sessions.length,
        sessions: sessions.map((s) => ({
          sessionId: s.entry.session.sessionId,
          status: s.entry.session.status,
          region: s.entry.session.region,
          worker: s.entry.session.assignedWorker ?? null,
          endReason: s.entry.session.endReason ?? null,
          createdAt: new Date(s.entry.session.createdAt).toISOString(),
          enqueuedAt: isoOf(s.entry.statusTimes.Enqueued),
          startingAt: isoOf(s.entry.statusTimes.Starting),
          runningAt: isoOf(s.entry.statusTimes.Running),
          terminatedAt: isoOf(s.entry.statusTimes.Terminated),
          queueWaitMs: s.queueWaitMs ?? null,
          startupMs: s.startupMs ?? null,
          identifiedAt: isoOf(s.entry.session.identifiedAt),
          launchMs: s.launchMs ?? null,
          negotiationMs: s.negotiationMs ?? null,
          servedWarm: s.servedWarm,
          lifetimeMs: s.lifetimeMs ?? null,
          browser: s.entry.session.client?.browser ?? null,
          os: s.entry.session.client?.os ?? null,
          deviceType: s.entry.session.client?.deviceType ?? null,
          geoData: geoDataOf(s.entry.session.client ?? {}),
          diagnosis: s.diagnosis,
        })),
      };
    },
  );
}
