// The one authorization of every project read route (GET …/{projectId}…): the three query
// parameters (400), then the user and their key (401 `Invalid User`, then `Unauthorized: Invalid
// API Key`), then the project (404) and the reader's access (403 `Access denied`), all decided on
// the access facts read in one cached statement (repositories/access-facts.ts).
import type { MemberAccess } from '../../repositories/projects';
import type { ApiDeps } from './api-deps';
import { projectQuery } from './request-fields';

export interface ProjectReader {
  projectId: string;
  userId: string;
  /** `FULL` for the owner and FULL members; READONLY members see less of some answers. */
  access: MemberAccess;
}

export async function authorizeProjectRead(req: { params: unknown; query: unknown }, deps: Pick<ApiDeps, 'auth' | 'access' | 'accessFacts'>): Promise<ProjectReader> {
  const { projectId, userId, apikey } = projectQuery(req);
  const facts = await deps.accessFacts.read(userId, projectId);
  deps.auth.checkUserKey(facts.key, apikey);
  return { projectId, userId, access: deps.access.checkRead(userId, facts.project) };
}
