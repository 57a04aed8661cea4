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
}

/** The key's user, once the key is live and has a read left this minute. */
export function analyticsReader(req: FastifyRequest, deps: AnalyticsReadDeps): string {
  const header = req.headers['x-api-key'];
  const key = typeof header === 'string' && header.length <= MAX_KEY_CHARS ? header : undefined;
  const { userId } = deps.auth.userOfKey(key);
  const wait = deps.readLimit.take('analytics', userId);
  if (wait !== undefined) throw new ApiError('analyticsRateLimited', { seconds: wait }, { 'retry-after': String(wait) });
  return userId;
}

/** The reader may read the project: 404 when there is none, 403 when it is not theirs or shared with them. */
export function checkProjectRead(userId: string, projectId: string, deps: AnalyticsReadDeps): void {
  deps.access.checkRead(userId, deps.accessFacts.read(userId, projectId).project);
}

/** The `projectId` query parameter of a session's reads: required, 403 without it (spec). */
export function requiredProjectId(query: unknown): string {
  const projectId = queryParam(query, 'projectId');
  if (projectId === undefined) throw new ApiError('analyticsProjectIdRequired', {}, {}, { field: 'projectId' });
  return projectId;
}

/** A session or log file of another project than the one named (and read) is refused with 403. */
export function checkSameProject(ownerProjectId: string, projectId: string): void {
  if (ownerProjectId !== projectId) throw new ApiError('analyticsSessionOfAnotherProject', {}, {}, { field: 'projectId' });
}
