// What the build & project API's routes need, built once by the composition root (app.ts).
import type { Logger } from 'pino';
import type { ApiKeyAuth } from '../../auth/api-key-auth';
import type { ProjectAccess } from '../../auth/project-access';
import type { Clock } from '@pixelfleet/signaling';
import type { IdSource } from '../../lib/ids';
import type { EventLog } from '../../events/event-log';
import type { ProjectsRepository } from '../../repositories/projects';
import type { BuildsRepository } from '../../repositories/builds';
import type { AccessFactsRepository } from '../../repositories/access-facts';
import type { SessionService } from '../../sessions/session-service';
import type { WebhookSender } from '../../webhooks/webhook-sender';
import type { UrlPolicyOptions } from '../../webhooks/url-policy';
import type { FairUse } from '../fair-use';
import type { BuildCallLimit } from './build-call-limit';

export interface ApiDeps {
  auth: ApiKeyAuth;
  access: ProjectAccess;
  projects: ProjectsRepository;
  builds: BuildsRepository;
  accessFacts: AccessFactsRepository;
  sessions: SessionService;
  events: EventLog;
  webhooks: WebhookSender;
  buildCalls: BuildCallLimit;
  fairUse: FairUse;
  urlPolicy: UrlPolicyOptions;
  clock: Clock;
  ids: IdSource;
  log: Logger;
}

/**
 * Request log level of the GET routes: clients poll them every few seconds, so a per-request
 * access line would dominate the log and its cost; they are counted in /metrics instead.
 */
export const POLLED_ROUTE_LOG_LEVEL = 'warn';
