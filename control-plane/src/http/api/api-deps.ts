// What the build & project API's routes need, built once by the composition root (app.ts). Routes
// read the request, authorize (api-key-auth, project-access; reads through project-read.ts), call
// a service and shape its answer: no route touches a repository or changes state itself.
import type { ApiKeyAuth } from '../../auth/api-key-auth';
import type { ProjectAccess } from '../../auth/project-access';
import type { BuildService } from '../../builds/build-service';
import type { ProjectService } from '../../projects/project-service';
import type { AccessFactsRepository } from '../../repositories/access-facts';
import type { SessionService } from '../../sessions/session-service';
import type { FairUse } from '../fair-use';

export interface ApiDeps {
  auth: ApiKeyAuth;
  access: ProjectAccess;
  /** The key and access facts every project read route authorizes from (cached). */
  accessFacts: AccessFactsRepository;
  projects: ProjectService;
  builds: BuildService;
  sessions: Pick<SessionService, 'counts' | 'get' | 'end'>;
  fairUse: FairUse;
}

/**
 * Request log level of the GET routes: clients poll them every few seconds, so a per-request
 * access line would dominate the log and its cost; they are counted in /metrics instead.
 */
export const POLLED_ROUTE_LOG_LEVEL = 'warn';
