// The one authorization of every analytics read: the `x-api-key` header names a live key (401),
// the key's reads per minute (429 + Retry-After), then the project through the same access
// facts and check as the build & project API's reads (404 `Project not found`, 403 `Access
// denied`), and the session or log file against that project (403).
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../errors';
import type { ApiKeyAuth } from '../../auth/api-key-auth';
import type { ProjectAccess } from '../../auth/project-access';
import type { AccessFactsRepository } from '../../repositories/access-facts';
import type { FairUse } from '../fair-use';
import { MAX_KEY_CHARS, queryParam } from '../api/request-fields';

export interface AnalyticsReadDeps {
  auth: Pick<ApiKeyAuth, 'userOfKey'>;
  access: Pick<ProjectAccess, 'checkRead'>;
  accessFacts: AccessFactsRepository;
  /**
   * `limits.analyticsReadsPerMinute` per key: a token bucket of that size refilled at a sixtieth
   * of it per second (the fair-use limiter's buckets, keyed by the key's user: a user has one live key).
   */
  readLimit: Pick<FairUse, 'take'>;
  /**
   * The build & project API's fair-use limiter, whose per-address bucket every analytics request
   * takes from before its key is looked up: a flood of made-up keys costs a SHA-256 and a lookup
   * each, and has no key whose reads could be counted.
   */
  addressLimit: Pick<FairUse, 'takeForAddress'>;
}

/** The key's user, once the key is live and has a read left this minute. */
export async function analyticsReader(req: FastifyRequest, deps: AnalyticsReadDeps): Promise<string> {
  const fromAddress = deps.addressLimit.takeForAddress(req.ip);
  if (fromAddress !== undefined) throw new ApiError('analyticsRateLimited', { seconds: fromAddress }, { 'retry-after': String(fromAddress) });
  const header = req.headers['x-api-key'];
  const key = typeof header === 'string' && header.length <= MAX_KEY_CHARS ? header : undefined;
  const { userId } = await deps.auth.userOfKey(key);
  const wait = deps.readLimit.take('analytics', userId);
  if (wait !== undefined) throw new ApiError('analyticsRateLimited', { seconds: wait }, { 'retry-after': String(wait) });
  return userId;
}

/** The reader may read the project: 404 when there is none, 403 when it is not theirs or shared with them. */
export async function checkProjectRead(userId: string, projectId: string, deps: AnalyticsReadDeps): Promise<void> {
  deps.access.checkRead(userId, (await deps.accessFacts.read(userId, projectId)).project);
}

/** The `projectId` query parameter of a session's reads: required, 403 without it (spec). */
export function requiredProjectId(query: unknown): string {
  const projectId = queryParam(query, 'projectId');
  if (projectId === undefined) throw new ApiError('analyticsProjectIdRequired', {}, {}, { field: 'projectId' });
  return projectId;
}

/**
 * The project named beside a session or log file: readable by the reader (403 `Access denied`).
 * A project that does not exist is not the session's project: 403 like another project's (the
 * spec has no 404 for the project on these reads, only for the session).
 */
export async function checkNamedProjectRead(userId: string, projectId: string, deps: AnalyticsReadDeps): Promise<void> {
  try {
    await checkProjectRead(userId, projectId, deps);
  } catch (err) {
    if (err instanceof ApiError && err.entry === 'projectNotFound') throw new ApiError('analyticsSessionOfAnotherProject', {}, {}, { field: 'projectId' });
    throw err;
  }
}

/** A session or log file of another project than the one named (and read) is refused with 403. */
export function checkSameProject(ownerProjectId: string, projectId: string): void {
  if (ownerProjectId !== projectId) throw new ApiError('analyticsSessionOfAnotherProject', {}, {}, { field: 'projectId' });
}
