// The edge of the build & project API: query parameters and JSON bodies are read here into
// typed values, with the spec's messages (`Missing required field: <name>`, 415, …). Route
// schemas document the same shapes for OpenAPI; these readers are what enforce them.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors';

/** Longest id (`userId`, `projectId`, `uploadId`, `sessionId`) accepted, in characters. */
export const MAX_ID_CHARS = 128;
/** Longest API key accepted, in characters (ours are 47). */
export const MAX_KEY_CHARS = 256;

/** onRequest hook of POST/PATCH routes: only `application/json` (any parameters) gets in. */
export function requireJsonContentType(req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const header = req.headers['content-type'];
  const mediaType = typeof header === 'string' ? (header.split(';')[0] ?? '').trim().toLowerCase() : '';
  done(mediaType === 'application/json' ? undefined : new ApiError('unsupportedMediaType'));
}

/**
 * One query parameter: undefined when absent or empty; 400 when repeated (`?userId=a&userId=b`
 * is ambiguous, so it is refused rather than guessed).
 */
export function queryParam(query: unknown, name: string): string | undefined {
  const value = typeof query === 'object' && query !== null ? (query as Record<string, unknown>)[name] : undefined;
  if (Array.isArray(value)) throw new ApiError('invalidField', { detail: `Query parameter ${name} must be given once` });
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A query parameter that must be a whole number of at least 0 (the dashboard's `skip`, `limit`, `from`, `to`); undefined when not given. */
export function wholeNumberParam(query: unknown, name: string): number | undefined {
  const raw = queryParam(query, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new ApiError('invalidField', { detail: `Invalid field: ${name} must be a whole number of at least 0` });
  return value;
}

/**
 * `projectId`, `userId` and `apikey` of a project read route, all required, in the spec's
 * precedence: 400 `projectId, userId and apikey are required` before any other check.
 */
export function projectQuery(req: { params: unknown; query: unknown }): { projectId: string; userId: string; apikey: string } {
  const projectId = queryParam(req.params, 'projectId');
  const userId = queryParam(req.query, 'userId');
  const apikey = queryParam(req.query, 'apikey');
  if (projectId === undefined || userId === undefined || apikey === undefined) throw new ApiError('userStatsParamsRequired');
  return { projectId, userId, apikey };
}

/** The parsed JSON body as an object; anything else (array, string, null) is 400. */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('invalidField', { detail: 'Request body must be a JSON object' });
  return body as Record<string, unknown>;
}

/** A required string field: absent, null or empty is `Missing required field`, else type and length. */
export function requiredString(body: Record<string, unknown>, field: string, maxChars = MAX_ID_CHARS): string {
  const value = body[field];
  if (value === undefined || value === null || value === '') throw new ApiError('missingField', { field });
  if (typeof value !== 'string') throw new ApiError('invalidField', { detail: `Invalid field: ${field} must be a string` });
  if (value.length > maxChars) throw new ApiError('invalidField', { detail: `Invalid field: ${field} must be at most ${maxChars} characters` });
  return value;
}

export function optionalBoolean(body: Record<string, unknown>, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new ApiError('invalidField', { detail: `Invalid field: ${field} must be a boolean` });
  return value;
}

export interface BodyCredentials {
  apiKey: string;
  userId: string;
}

/**
 * `apiKey` and `userId` of a POST/PATCH body. The key is never accepted in an Authorization
 * header: a key sent only there counts as missing, and says so with 401 rather than 400.
 */
export function bodyCredentials(req: FastifyRequest, body: Record<string, unknown>): BodyCredentials {
  const key = body.apiKey;
  if ((key === undefined || key === null || key === '') && req.headers.authorization !== undefined) throw new ApiError('invalidApiKey');
  return { apiKey: requiredString(body, 'apiKey', MAX_KEY_CHARS), userId: requiredString(body, 'userId') };
}
