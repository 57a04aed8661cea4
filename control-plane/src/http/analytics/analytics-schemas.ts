// JSON schemas of the analytics API, for OpenAPI and response serialization (only the listed
// fields are written; telemetry rows are written as the player reported them).
import { MAX_PAGE_LIMIT, MAX_SESSION_PAGE_LIMIT, MAX_WINDOW_DAYS } from './analytics-request';
import { BREAKDOWN_DIMENSIONS } from '../../repositories/session-dimensions';
import { DIAGNOSES } from '../../analytics/session-diagnosis';
import { SESSION_STATUSES } from '../../sessions/session-status';

/** The OpenAPI security scheme of the analytics API (registered in http/openapi.ts). */
export const ANALYTICS_SECURITY = [{ analyticsApiKey: [] }];

export const analyticsErrorBody = {
  type: 'object',
  description:
    'Every analytics error: `message`, a stable `code` (`VALIDATION_FAILED`, `UNAUTHORIZED`, `FORBIDDEN`, `NOT_FOUND`, `RATE_LIMITED`, `INTERNAL_ERROR`), and on a refused parameter the `field` it names (a window too wide also names `maxDays`).',
  properties: {
    message: { type: 'string' },
    code: { type: 'string' },
    field: { type: 'string' },
    maxDays: { type: 'number' },
  },
  required: ['message', 'code'],
} as const;

export const analyticsErrorResponses = { '4xx': analyticsErrorBody, '5xx': analyticsErrorBody } as const;

const iso = (description: string) => ({ type: 'string', description }) as const;
const paging = (defaultLimit: number, what: string, maxLimit: number = MAX_PAGE_LIMIT) =>
  ({
    limit: { type: 'integer', minimum: 1, maximum: maxLimit, default: defaultLimit, description: `${what} to return: a whole number from 1 to ${maxLimit} (anything else is 400 VALIDATION_FAILED naming limit).` },
    skip: { type: 'integer', minimum: 0, default: 0, description: 'Offset: a whole number from 0. Past the total the page is empty (200, count 0).' },
  }) as const;
const projectIdQuery = { type: 'string', description: 'Project of the session; must match (403 when missing or another project).' } as const;

export const breakdownQuery = {
  type: 'object',
  properties: {
    dimension: { type: 'string', enum: [...BREAKDOWN_DIMENSIONS] },
    startDate: iso('ISO 8601 window start: a date (00:00 UTC) or a date and time with a zone.'),
    endDate: iso(`ISO 8601 window end, inclusive; at most ${MAX_WINDOW_DAYS} days after startDate.`),
    countryCode: { type: 'string', description: 'With dimension=city only: restricts the cities to one country (ISO 3166-1 alpha-2, any case).' },
  },
  required: ['dimension', 'startDate', 'endDate'],
} as const;

export const breakdownResponse = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    projectId: { type: 'string' },
    dimension: { type: 'string' },
    total: { type: 'number', description: 'Sessions in the window having a value for the dimension.' },
    count: { type: 'number', description: 'Entries in breakdown.' },
    breakdown: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          value: { type: 'string' },
          count: { type: 'number' },
          percentage: { type: 'number', description: 'Share of total, two decimals, rounded by largest remainder so the entries add up to 100.' },
          country: { type: 'string' },
          countryCode: { type: 'string' },
        },
        required: ['value', 'count', 'percentage'],
      },
    },
  },
  required: ['success', 'projectId', 'dimension', 'total', 'count', 'breakdown'],
} as const;

export const telemetryQuery = {
  type: 'object',
  properties: {
    sessionId: { type: 'string' },
    projectId: projectIdQuery,
    logType: { type: 'string', enum: ['Webrtc'], description: '`Webrtc`: event rows only.' },
    startDate: iso('ISO 8601: rows at or after.'),
    endDate: iso('ISO 8601: rows at or before.'),
    ...paging(100, 'Rows'),
  },
  required: ['sessionId', 'projectId'],
} as const;

export const telemetryResponse = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    total: { type: 'number', description: 'Rows matching.' },
    count: { type: 'number', description: 'Rows returned.' },
    logs: { type: 'array', description: 'Telemetry rows, newest first, as the player reported them.', items: { type: 'object', additionalProperties: true } },
  },
  required: ['success', 'total', 'count', 'logs'],
} as const;

export const sessionIdParams = { type: 'object', properties: { sessionId: { type: 'string' } }, required: ['sessionId'] } as const;
export const projectIdQueryOnly = { type: 'object', properties: { projectId: projectIdQuery }, required: ['projectId'] } as const;

export const snapshotsResponse = {
  type: 'object',
  properties: {
    sessionId: { type: 'string' },
    snapshots: {
      type: 'array',
      description: 'Oldest first.',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          receivedAt: { type: 'string' },
          data: {
            type: 'object',
            properties: {
              sessionId: { type: 'string' },
              projectId: { type: 'string' },
              status: { type: 'string', enum: [...SESSION_STATUSES] },
              region: { type: 'string' },
              assignedWorker: { type: 'string' },
              streamingId: { type: 'string' },
              playerId: { type: 'string' },
              maxRunTime: { type: 'number' },
            },
            required: ['sessionId', 'projectId', 'status', 'region'],
          },
        },
        required: ['id', 'receivedAt', 'data'],
      },
    },
    totalSnapshots: { type: 'number' },
  },
  required: ['sessionId', 'snapshots', 'totalSnapshots'],
} as const;

const logFile = {
  type: 'object',
  properties: {
    _id: { type: 'string' },
    sessionId: { type: 'string' },
    projectId: { type: 'string' },
    fileName: { type: 'string' },
    fileSize: { type: 'number', description: 'Uncompressed size in bytes.' },
    gzSize: { type: 'number', description: 'Stored (compressed) size in bytes.' },
    uploadedAt: { type: 'string' },
  },
  required: ['_id', 'sessionId', 'projectId', 'fileName', 'fileSize', 'gzSize', 'uploadedAt'],
} as const;

export const logFilesQuery = { type: 'object', properties: { projectId: projectIdQuery, ...paging(50, 'Files') }, required: ['projectId'] } as const;

export const logFilesResponse = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    sessionId: { type: 'string' },
    total: { type: 'number' },
    count: { type: 'number' },
    logFiles: { type: 'array', description: 'Oldest first.', items: logFile },
  },
  required: ['success', 'sessionId', 'total', 'count', 'logFiles'],
} as const;

export const logFileIdParams = { type: 'object', properties: { logFileId: { type: 'string' } }, required: ['logFileId'] } as const;

export const logFileDownloadResponse = {
  type: 'string',
  description:
    'The log file. Stored gzip; sent as it is stored with `Content-Encoding: gzip` when the request accepts gzip, else decompressed. `Content-Disposition: attachment` names the original file.',
} as const;

export const sessionsQuery = {
  type: 'object',
  properties: {
    startDate: iso(`ISO 8601: sessions created at or after; default ${MAX_WINDOW_DAYS} days before endDate.`),
    endDate: iso('ISO 8601: sessions created at or before; default now.'),
    status: { type: 'string', enum: [...SESSION_STATUSES], description: 'Only sessions in this status now.' },
    ...paging(50, 'Sessions', MAX_SESSION_PAGE_LIMIT),
  },
} as const;

const nullableTime = { type: ['string', 'null'] } as const;
const nullableMs = { type: ['number', 'null'] } as const;

export const sessionsResponse = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    projectId: { type: 'string' },
    total: { type: 'number' },
    count: { type: 'number' },
    sessions: {
      type: 'array',
      description: 'Newest first.',
      items: {
        type: 'object',
        properties: {
          sessionId: { type: 'string' },
          status: { type: 'string', enum: [...SESSION_STATUSES] },
          region: { type: 'string' },
          worker: { type: ['string', 'null'], description: 'The streaming server that ran it (assignedWorker).' },
          endReason: { type: ['string', 'null'] },
          createdAt: { type: 'string' },
          enqueuedAt: nullableTime,
          startingAt: nullableTime,
          runningAt: nullableTime,
          terminatedAt: nullableTime,
          queueWaitMs: { ...nullableMs, description: 'Enqueued → Starting, from the snapshots.' },
          startupMs: { ...nullableMs, description: 'Starting → Running.' },
          identifiedAt: { ...nullableTime, description: "When the app identified itself on the agent's signalling (its first time)." },
          launchMs: { ...nullableMs, description: 'Of the start-up: Starting → the app identified itself (the app loading).' },
          negotiationMs: { ...nullableMs, description: "Of the start-up: the app identified (served warm: the later of that and the claim) → Running (the viewer's WebRTC connection)." },
          servedWarm: { type: 'boolean', description: 'A warm instance served it: its app was launched before the viewer came, so its queue wait and launch are 0 (launch: unless the instance was still loading).' },
          lifetimeMs: { ...nullableMs, description: 'Enqueued → Terminated; null while it goes on.' },
          browser: { type: ['string', 'null'], description: 'From the User-Agent when the session was created.' },
          os: { type: ['string', 'null'] },
          deviceType: { type: ['string', 'null'], description: 'desktop, mobile, tablet, smarttv, console, wearable, embedded or xr.' },
          geoData: {
            type: ['object', 'null'],
            description: "From the viewer's address (offline GeoIP); null when unknown (a private address).",
            properties: { country: { type: 'string' }, countryCode: { type: 'string' }, city: { type: 'string' } },
          },
          diagnosis: {
            type: 'string',
            enum: [...DIAGNOSES],
            description:
              "The spec's reading rules on the session's telemetry: neverReported (no rows), telemetryExpired (the player reported, but its rows are older than retention.telemetryDays and were deleted), videoDelivered (framesDecoded rising with FPS above 0), mediaNeverConnected (sdpAnswer without connected), connectedWithoutVideo (events, framesDecoded never above 0).",
          },
        },
        required: ['sessionId', 'status', 'region', 'worker', 'endReason', 'createdAt', 'enqueuedAt', 'startingAt', 'runningAt', 'terminatedAt', 'queueWaitMs', 'startupMs', 'identifiedAt', 'launchMs', 'negotiationMs', 'servedWarm', 'lifetimeMs', 'browser', 'os', 'deviceType', 'geoData', 'diagnosis'],
      },
    },
  },
  required: ['success', 'projectId', 'total', 'count', 'sessions'],
} as const;

export const projectIdPathParams = { type: 'object', properties: { projectId: { type: 'string' } }, required: ['projectId'] } as const;
