// Telemetry ingest: the viewer page posts batches of the spec's telemetry rows for its session,
// authenticated by the per-session viewer token (header x-viewer-token, or `viewerToken` in the
// body because navigator.sendBeacon cannot set headers).
import type { FastifyInstance } from 'fastify';
import type { Clock } from '@pixelfleet/common';
import type { SessionService } from '../sessions/session-service';
import type { ClientDimensions } from '../repositories/session-dimensions';
import { storedRowBytes, type TelemetryRepository, type TelemetryRowRecord } from '../repositories/telemetry';
import { KeyedSerial } from '../lib/keyed-serial';
import { HTTP_BODY_LIMIT_BYTES } from './app';
import { sessionTelemetryBudget, TelemetryAddressRate, type TelemetryLimits } from './telemetry-budget';

export const TELEMETRY_PATH = '/api/v1/telemetry';
/** Rows accepted in one request. */
export const MAX_ROWS_PER_BATCH = 200;
/** Rows kept per session; a 2-hour session at one statistics row per 5 s is ~1,500. */
export const MAX_ROWS_PER_SESSION = 20_000;
const MAX_ROW_BYTES = 4096;
/**
 * How long after its session ended a viewer token still posts rows: the page's last rows leave as
 * the socket closes (sendBeacon on unload). After that the token is spent, so one share visit
 * cannot keep writing rows forever.
 */
export const TELEMETRY_AFTER_END_MS = 2 * 60_000;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

interface Body {
  sessionId: string;
  viewerToken?: string;
  rows: Record<string, unknown>[];
}

/** Why a row is refused, or undefined when it is a valid event or statistics row. */
export function telemetryRowProblem(row: unknown): string | undefined {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return 'a row must be an object';
  const r = row as Record<string, unknown>;
  if (typeof r.timestamp !== 'string' || !ISO_8601.test(r.timestamp)) return 'timestamp must be an ISO 8601 string';
  if (JSON.stringify(r).length > MAX_ROW_BYTES) return `a row must be at most ${MAX_ROW_BYTES} bytes`;
  if (r.logType !== undefined) {
    if (r.logType !== 'Webrtc') return 'logType must be Webrtc';
    if (typeof r.event !== 'string' || r.event.length === 0 || r.event.length > 64) return 'an event row needs an event name';
    return undefined;
  }
  // Statistics rows: every value is a string (spec).
  for (const [key, value] of Object.entries(r)) if (typeof value !== 'string') return `statistics value ${key.slice(0, 40)} must be a string`;
  return undefined;
}

/** The client details the server derives and the page may not claim (spec: "Client details, on the first rows"). */
export const SERVER_CLIENT_FIELDS = ['browser', 'os', 'deviceType', 'geoData'] as const;

/**
 * The row as stored: the session's client details, derived by the server when the share socket
 * created the session, replace whatever the page claimed. They go on the "first rows": every event
 * row of the session's first accepted batch (the page sends its details on its first event rows),
 * and any later event row on which the page put client details. A statistics row carries none (its
 * values are all strings, spec). A field the server does not know (a private address has no
 * geoData) is left out rather than taken from the page. domainUrl and embedded stay the page's.
 */
export function withServerClientDetails(row: Record<string, unknown>, client: ClientDimensions | undefined, firstBatch: boolean): Record<string, unknown> {
  const claimed = SERVER_CLIENT_FIELDS.some((f) => f in row);
  if (!claimed && !(firstBatch && row.logType === 'Webrtc')) return row;
  const out = { ...row };
  for (const f of SERVER_CLIENT_FIELDS) delete out[f];
  if (out.logType !== 'Webrtc' || client === undefined) return out;
  if (client.browser !== undefined) out.browser = client.browser;
  if (client.os !== undefined) out.os = client.os;
  if (client.deviceType !== undefined) out.deviceType = client.deviceType;
  if (client.country !== undefined) out.geoData = { country: client.country, countryCode: client.countryCode ?? '', city: client.city ?? '' };
  return out;
}

export function registerTelemetryRoutes(app: FastifyInstance, deps: { sessions: SessionService; telemetry: TelemetryRepository; clock: Clock; limits: TelemetryLimits }): void {
  const addressRate = new TelemetryAddressRate(deps.clock, deps.limits);
  /**
   * A session's batches, one at a time from the read of its usage to the insert: two batches of
   * one session posted at once must not both pass the row and byte budgets on the same usage, nor
   * both count as its first batch. This process's guarantee; a store shared by several control
   * planes would check the budget inside the insert's transaction instead.
   */
  const perSession = new KeyedSerial<string>();
  // sendBeacon posts a string as text/plain; it is the same JSON.
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, JSON.parse(body as string) as unknown);
    } catch {
      const err = Object.assign(new SyntaxError('Malformed JSON body'), { statusCode: 400 });
      done(err, undefined);
    }
  });

  app.post<{ Body: Body }>(
    TELEMETRY_PATH,
    {
      // Before the body is read: its declared size against the client network's byte rate (a
      // request without Content-Length is charged the body limit).
      onRequest: (req, reply, done) => {
        const declared = Number(req.headers['content-length']);
        const wait = addressRate.take(req.ip, Number.isFinite(declared) && declared >= 0 ? declared : HTTP_BODY_LIMIT_BYTES);
        if (wait === undefined) return done();
        void reply
          .status(429)
          .header('retry-after', String(wait))
          .send({ message: `Too much telemetry from this address; retry in ${wait} s` });
      },
      schema: {
        body: {
          type: 'object',
          required: ['sessionId', 'rows'],
          properties: {
            sessionId: { type: 'string', minLength: 1, maxLength: 64 },
            viewerToken: { type: 'string', maxLength: 256 },
            rows: { type: 'array', minItems: 1, maxItems: MAX_ROWS_PER_BATCH, items: { type: 'object' } },
          },
        },
      },
    },
    async (req, reply) => {
      const header = req.headers['x-viewer-token'];
      const token = typeof header === 'string' ? header : req.body.viewerToken;
      let session;
      try {
        session = deps.sessions.get(req.body.sessionId);
      } catch {
        return reply.status(404).send({ message: 'Session not found' });
      }
      if (token === undefined || !deps.sessions.viewerTokenMatches(session.sessionId, token)) {
        // A live token of another session authenticates its viewer, not for this session's rows.
        if (token !== undefined && deps.sessions.sessionOfViewerToken(token) !== undefined) {
          return reply.status(403).send({ message: 'Forbidden: the viewer token belongs to another session' });
        }
        return reply.status(401).send({ message: 'Invalid viewer token' });
      }
      if (session.status === 'Terminated' && deps.clock.now() - session.updatedAt > TELEMETRY_AFTER_END_MS) {
        return reply.status(410).send({ message: 'Session has ended' });
      }
      for (const row of req.body.rows) {
        const problem = telemetryRowProblem(row);
        if (problem !== undefined) return reply.status(400).send({ message: problem });
      }
      const stored = await perSession.run(session.sessionId, async (): Promise<boolean> => {
        // The session's accepted rows and bytes: one indexed row read (sessions.telemetry_count / telemetry_bytes).
        const accepted = await deps.telemetry.usageBySession(session.sessionId);
        if (accepted.rows + req.body.rows.length > MAX_ROWS_PER_SESSION) return false;
        const firstBatch = accepted.rows === 0;
        const receivedAt = deps.clock.now();
        const rows: TelemetryRowRecord[] = req.body.rows.map((row) => ({
          sessionId: session.sessionId,
          projectId: session.projectId,
          logType: typeof row.logType === 'string' ? row.logType : undefined,
          event: typeof row.event === 'string' ? row.event : undefined,
          timestamp: row.timestamp as string,
          receivedAt,
          // The session id and the client details are the server's, whatever the row claimed.
          row: withServerClientDetails({ ...row, sessionId: session.sessionId }, session.client, firstBatch),
        }));
        // The whole batch or none of it: a page retries nothing it was refused.
        const bytes = rows.reduce((n, r) => n + storedRowBytes(r.row), 0);
        if (accepted.bytes + bytes > sessionTelemetryBudget(session, deps.limits)) return false;
        await deps.telemetry.insertMany(rows);
        return true;
      });
      if (!stored) return reply.status(429).send({ message: 'Telemetry limit reached for this session' });
      return reply.status(204).send();
    },
  );
}
