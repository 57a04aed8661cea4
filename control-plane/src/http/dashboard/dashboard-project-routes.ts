// The dashboard's routes of one project, for a signed-in person: its builds (with each build's
// stage timeline and the pipeline's progress), a new build from a URL, Set Live and Distribute; its
// settings, enable and disable; the webhook test and the recorded deliveries. Each calls the same
// service as the REST API and authorizes the same way (auth/project-access.ts): the person is the
// principal an API key's owner is, so READONLY members read only, an inactive subscription blocks
// writes, and a member taken off is out at once.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DashboardBuild, DashboardBuilds, DashboardProjectHeader, DashboardSettings, DashboardWebhookDelivery, DashboardWebhookTest } from '@pixelfleet/dashboard';
import { CODECS } from '@pixelfleet/proto';
import { ACTIVE_SUBSCRIPTION, type ProjectAccess } from '../../auth/project-access';
import type { BuildService } from '../../builds/build-service';
import { BUILD_STAGES } from '../../builds/build-stages';
import { DEFAULT_AUTO_RELEASE } from '../../builds/build-service';
import { webhookDeliveryFailureMessage } from '../../errors';
import type { ProjectService } from '../../projects/project-service';
import { parseSettingsPatch } from '../../projects/settings-patch';
import type { AccessFactsRepository } from '../../repositories/access-facts';
import type { MemberAccess, Project } from '../../repositories/projects';
import type { WebhookDeliveriesRepository, WebhookDelivery } from '../../repositories/webhook-deliveries';
import { MAX_URL_CHARS } from '../../webhooks/url-policy';
import { WEBHOOK_EVENTS } from '../../webhooks/webhook-envelope';
import { maskFileUrl } from '../api/build-routes';
import { settingsView } from '../api/settings-routes';
import { bodyObject, optionalBoolean, requiredString, wholeNumberParam } from '../api/request-fields';
import type { DashboardGuards } from './dashboard-auth-routes';

type ProjectParams = { Params: { projectId: string } };

/**
 * Who the signed-in person is on the project a dashboard route names: what every project route
 * asks first, in the REST API's order (401 unless signed in, then 404, then 403).
 */
export class DashboardProjectAccess {
  constructor(
    private readonly d: { guards: Pick<DashboardGuards, 'signedInUser'>; access: ProjectAccess; accessFacts: AccessFactsRepository; projects: Pick<ProjectService, 'settings'> },
  ) {}

  /** A read: 404 for an unknown project, 403 `Access denied` for anyone who is neither owner nor member. */
  readonly reader = async (req: FastifyRequest<ProjectParams>): Promise<{ userId: string; access: MemberAccess; project: Project }> => {
    const { user } = await this.d.guards.signedInUser(req);
    const access = this.d.access.checkRead(user.userId, (await this.d.accessFacts.read(user.userId, req.params.projectId)).project);
    return { userId: user.userId, access, project: this.d.projects.settings(req.params.projectId).project };
  };

  /** A read, with the header every project page shows. */
  readonly read = async (req: FastifyRequest<ProjectParams>): Promise<{ userId: string; project: Project; header: DashboardProjectHeader }> => {
    const { userId, access, project } = await this.reader(req);
    return { userId, project, header: this.header(project, userId, access) };
  };

  /** A write: the REST API's 404 and 403s (another account, read-only, inactive subscription). */
  readonly writer = async (req: FastifyRequest<ProjectParams>): Promise<{ userId: string; project: Project }> => {
    const { user } = await this.d.guards.signedInUser(req);
    return { userId: user.userId, project: this.d.access.requireWrite(user.userId, req.params.projectId) };
  };

  readonly header = (project: Project, userId: string, access: MemberAccess): DashboardProjectHeader => ({
    projectId: project.projectId,
    name: project.name,
    access: project.ownerUserId === userId ? 'owner' : access,
    writable: access === 'FULL' && project.subscriptionStatus === ACTIVE_SUBSCRIPTION,
    subscriptionStatus: project.subscriptionStatus,
    enabled: project.enabled,
  });
}

export interface DashboardProjectDeps {
  guards: DashboardGuards;
  projectAccess: DashboardProjectAccess;
  projects: ProjectService;
  builds: BuildService;
  deliveries: WebhookDeliveriesRepository;
}

/** Deliveries the settings page lists, newest first. */
export const DELIVERIES_SHOWN = 50;
/** Builds a page shows unless it asks for another number, and at most (each carries its stages). */
export const DEFAULT_BUILDS_PAGE = 20;
export const MAX_BUILDS_PAGE = 100;

type BuildParams = { Params: { projectId: string; uploadId: string } };

export function registerDashboardProjectRoutes(app: FastifyInstance, deps: DashboardProjectDeps, basePath = '/dashboard'): void {
  const { guards } = deps;
  const base = `${basePath}/api/projects/:projectId`;
  const read = { onRequest: guards.limited };
  const write = { onRequest: guards.limited, preHandler: guards.sameSite };

  const { reader, writer, header } = deps.projectAccess;

  app.get<ProjectParams>(`${base}/builds`, read, async (req, reply) => {
    const { userId, access, project } = await reader(req);
    const limit = Math.min(MAX_BUILDS_PAGE, wholeNumberParam(req.query, 'limit') ?? DEFAULT_BUILDS_PAGE);
    const skip = wholeNumberParam(req.query, 'skip') ?? 0;
    const page = await deps.builds.timelines(project.projectId, { limit, skip });
    const builds: DashboardBuild[] = page.timelines.map(({ build, stages, progress }) => ({
      uploadId: build.uploadId,
      fileUrl: build.fileUrl === undefined ? null : access === 'READONLY' ? maskFileUrl(build.fileUrl) : build.fileUrl,
      status: build.status,
      objection: build.objection ?? null,
      autoRelease: build.autoRelease,
      live: build.live,
      createdAt: build.createdAt,
      updatedAt: build.updatedAt,
      stages,
      progress:
        progress === undefined || progress.status !== build.status
          ? null
          : { status: progress.status, bytes: progress.bytes, totalBytes: progress.totalBytes ?? null, bytesPerSecond: progress.bytesPerSecond ?? null, etaSeconds: progress.etaSeconds ?? null },
      activatable: BUILD_STAGES[build.status].activatable,
    }));
    const answer: DashboardBuilds = { project: header(project, userId, access), total: page.total, builds };
    return reply.header('cache-control', 'no-store').send(answer);
  });

  app.post<ProjectParams>(`${base}/builds`, write, async (req, reply) => {
    const { userId, project } = await writer(req);
    const body = bodyObject(req.body);
    const fileUrl = requiredString(body, 'fileUrl', MAX_URL_CHARS);
    const autoRelease = optionalBoolean(body, 'autoRelease') ?? DEFAULT_AUTO_RELEASE;
    const build = await deps.builds.submit({ userId, projectId: project.projectId, fileUrl, autoRelease });
    return reply.status(201).send({ uploadId: build.uploadId, status: build.status });
  });

  for (const action of ['set-live', 'distribute'] as const) {
    app.post<BuildParams>(`${base}/builds/:uploadId/${action}`, write, async (req, reply) => {
      const { userId, project } = await writer(req);
      const build = await deps.builds.activate({ userId, projectId: project.projectId, uploadId: req.params.uploadId, setLive: action === 'set-live' });
      return reply.send({ uploadId: build.uploadId, status: build.status });
    });
  }

  const settingsAnswer = (view: ReturnType<typeof settingsView>, userId: string, access: MemberAccess, project: Project): DashboardSettings => ({
    project: header(project, userId, access),
    settings: view,
    webhookEventKinds: [...WEBHOOK_EVENTS],
    codecs: [...CODECS],
  });

  app.get<ProjectParams>(`${base}/settings`, read, async (req, reply) => {
    const { userId, access, project } = await reader(req);
    return reply.header('cache-control', 'no-store').send(settingsAnswer(settingsView(deps.projects.settings(project.projectId), access), userId, access, project));
  });

  app.patch<ProjectParams>(`${base}/settings`, write, async (req, reply) => {
    const { userId, project } = await writer(req);
    const patch = parseSettingsPatch(bodyObject(req.body), project.projectId);
    const updated = await deps.projects.updateSettings(project, patch, userId);
    return reply.header('cache-control', 'no-store').send(settingsAnswer(settingsView(updated), userId, 'FULL', updated.project));
  });

  for (const enabled of [true, false]) {
    app.post<ProjectParams>(`${base}/${enabled ? 'enable' : 'disable'}`, write, async (req, reply) => {
      const { userId, project } = await writer(req);
      deps.projects.setEnabled(project, enabled, userId);
      return reply.send({ projectId: project.projectId, enabled });
    });
  }

  app.post<ProjectParams>(`${base}/webhook-test`, write, async (req, reply) => {
    const { project } = await writer(req);
    const outcome = await deps.projects.testWebhook(project.projectId);
    // The catalogued sentence, never outcome.error: a socket error names internal addresses and ports.
    const answer: DashboardWebhookTest = {
      delivered: outcome.delivered,
      statusCode: outcome.statusCode ?? null,
      error: outcome.failure === undefined ? null : webhookDeliveryFailureMessage(outcome.failure, outcome.statusCode),
      durationMs: outcome.durationMs,
    };
    return reply.send(answer);
  });

  app.get<ProjectParams>(`${base}/webhook-deliveries`, read, async (req, reply) => {
    const { project } = await reader(req);
    const deliveries: DashboardWebhookDelivery[] = (await deps.deliveries.listByProject(project.projectId, DELIVERIES_SHOWN)).map((d) => ({
      attemptedAt: d.attemptedAt,
      event: d.event,
      uploadId: d.uploadId ?? null,
      statusCode: d.statusCode ?? null,
      error: deliveryFailure(d),
      durationMs: d.durationMs,
    }));
    return reply.header('cache-control', 'no-store').send({ deliveries });
  });
}

/** A recorded delivery's failure in the catalogue's words; rows from before the kind was kept (migration 18) have only their status or their detail. */
function deliveryFailure(d: WebhookDelivery): string | null {
  if (d.failure !== undefined) return webhookDeliveryFailureMessage(d.failure, d.statusCode);
  if (d.error === undefined) return null;
  return webhookDeliveryFailureMessage(d.statusCode === undefined ? 'unreachable' : 'rejected', d.statusCode);
}
