// The dashboard's own data routes, for a signed-in person (dashboard-auth-routes.ts guards them):
// the projects they own or are a member of, in the shape the projects page shows, and a new API
// key (shown once, mailed to them). Access is the REST API's (auth/project-access.ts): the person
// is a principal like an API key's owner, and reads see only their own and shared projects.
import type { FastifyInstance } from 'fastify';
import type { DashboardProject } from '@pixelfleet/dashboard';
import type { ProjectsRepository } from '../../repositories/projects';
import type { PeopleService } from '../../people/people-service';
import type { SessionService } from '../../sessions/session-service';
import type { DashboardGuards } from './dashboard-auth-routes';

export interface DashboardRoutesDeps {
  guards: DashboardGuards;
  people: PeopleService;
  projects: ProjectsRepository;
  sessions: Pick<SessionService, 'counts'>;
  /** publicUrls.share, once the server listens. */
  shareUrl: () => string;
}

export function registerDashboardRoutes(app: FastifyInstance, deps: DashboardRoutesDeps, basePath = '/dashboard'): void {
  const { guards } = deps;

  app.get(`${basePath}/api/projects`, { onRequest: guards.limited }, async (req, reply) => {
    const { user } = await guards.signedInUser(req);
    const projects: DashboardProject[] = deps.projects.listAccessible(user.userId).map(({ project, access }) => ({
      projectId: project.projectId,
      name: project.name,
      region: project.region,
      access,
      enabled: project.enabled,
      subscriptionStatus: project.subscriptionStatus,
      liveUploadId: project.liveUploadId ?? null,
      ...deps.sessions.counts(project.projectId),
      shareUrl: `${deps.shareUrl()}/${project.projectId}`,
    }));
    return reply.header('cache-control', 'no-store').send({ projects });
  });

  app.post(`${basePath}/api/api-key`, { onRequest: guards.limited, preHandler: guards.sameSite }, async (req, reply) => {
    const { user } = await guards.signedInUser(req);
    return reply.header('cache-control', 'no-store').send({ userId: user.userId, apiKey: await deps.people.issueApiKey(user) });
  });
}
