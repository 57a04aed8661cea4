// The one authorization of every project write route (POST/PATCH with the credentials in the
// body), in the spec's error order: a JSON object body (400), `apiKey` and `userId` (400; a key sent
// only in an Authorization header is 401), `projectId` (400; from the path on PATCH …/{projectId}),
// then the route's own fields (400, each naming its field), then the key and its owner (401
// `Invalid User`, then `Unauthorized: Invalid API Key`), then the project (404) and write access
// (403: another account, read-only member, inactive subscription). project-read.ts is its twin for
// the GET routes.
import type { FastifyRequest } from 'fastify';
import type { Project } from '../../repositories/projects';
import type { ApiDeps } from './api-deps';
import { bodyCredentials, bodyObject, requiredString } from './request-fields';

export interface ProjectWrite<T> {
  projectId: string;
  userId: string;
  /** The project, as the write-access check read it. */
  project: Project;
  /** What the route read of the body (its own fields), before any credential was checked. */
  input: T;
}

/**
 * Authorizes a write and reads the route's fields in between, where the spec puts their 400s.
 * `pathProjectId`: the project named in the path (PATCH …/{projectId}/settings); otherwise the
 * body's `projectId` is required.
 */
export async function authorizeProjectWrite<T>(
  req: FastifyRequest,
  deps: Pick<ApiDeps, 'auth' | 'access'>,
  readInput: (body: Record<string, unknown>, projectId: string) => T,
  pathProjectId?: string,
): Promise<ProjectWrite<T>> {
  const body = bodyObject(req.body);
  const { apiKey, userId } = bodyCredentials(req, body);
  const projectId = pathProjectId ?? requiredString(body, 'projectId');
  const input = readInput(body, projectId);
  await deps.auth.verifyKeyOwner(apiKey, userId);
  const project = deps.access.requireWrite(userId, projectId);
  return { projectId, userId, project, input };
}

/** For routes that read nothing of the body but the credentials and `projectId`. */
export const NO_INPUT = (): undefined => undefined;
