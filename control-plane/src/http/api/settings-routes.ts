// Project settings (GET, PATCH with an allow-list) and the webhook test. The PATCH body is read by
// projects/settings-patch.ts (every field, with messages naming it); the project service checks
// the merged result and the webhook URL policy, then writes: the same body twice leaves the same
// settings.
import type { FastifyInstance } from 'fastify';
import { webhookDeliveryFailureMessage } from '../../errors';
import type { MemberAccess, Project, ProjectWebhook } from '../../repositories/projects';
import { parseSettingsPatch, SETTING_NAMES, SETTINGS_PROPERTIES } from '../../projects/settings-patch';
import { POLLED_ROUTE_LOG_LEVEL, type ApiDeps } from './api-deps';
import { authorizeProjectRead } from './project-read';
import { queryParam, requireJsonContentType } from './request-fields';
import { authorizeProjectWrite, NO_INPUT } from './project-write';
import { errorResponses, postBody, projectIdParams, queryAuth, settingsBody } from './schemas';

const settingsResponse = {
  type: 'object',
  properties: { projectId: { type: 'string' }, region: { type: 'string' }, ...SETTINGS_PROPERTIES },
  required: ['projectId', 'region', ...SETTING_NAMES],
} as const;

/** A project's settings as the API answers them; READONLY members see only the webhook URL's origin: the full URL is the receiver's secret. */
export function settingsView({ project, webhook }: { project: Project; webhook: ProjectWebhook }, access: MemberAccess = 'FULL') {
  const s = project.settings;
  return {
    projectId: project.projectId,
    region: project.region,
    name: project.name,
    webhookUrl: webhook.url === undefined ? null : access === 'READONLY' ? maskWebhookUrl(webhook.url) : webhook.url,
    webhookEvents: webhook.events ?? null,
    codec: s.codec,
    minBitrate: s.minBitrate,
    maxBitrate: s.maxBitrate,
    resX: s.resX,
    resY: s.resY,
    fps: s.fps,
    maxRunTime: s.maxRunTime,
    afkTimeout: s.afkTimeout,
    maxConcurrentSessions: s.maxConcurrentSessions,
    launchArgs: s.launchArgs,
    embedOrigins: s.embedOrigins,
    warmPoolMinIdle: s.warmPoolMinIdle,
    warmPoolQueueWaitTargetSeconds: s.warmPoolQueueWaitTargetSeconds,
    warmInstanceMaxAgeMinutes: s.warmInstanceMaxAgeMinutes,
  };
}

export function registerSettingsRoutes(app: FastifyInstance, deps: ApiDeps): void {

  app.get(
    '/projects/:projectId/settings',
    { logLevel: POLLED_ROUTE_LOG_LEVEL, schema: { tags: ['settings'], summary: "A project's settings", params: projectIdParams, querystring: queryAuth, response: { 200: settingsResponse, ...errorResponses } } },
    async (req) => {
      const { projectId, access } = await authorizeProjectRead(req, deps);
      return settingsView(deps.projects.settings(projectId), access);
    },
  );

  app.patch(
    '/projects/:projectId/settings',
    {
      onRequest: requireJsonContentType,
      schema: { tags: ['settings'], summary: 'Update allow-listed settings (safe to repeat)', params: projectIdParams, body: settingsBody(SETTINGS_PROPERTIES), response: { 200: settingsResponse, ...errorResponses } },
    },
    async (req) => {
      const { userId, project, input: patch } = await authorizeProjectWrite(req, deps, parseSettingsPatch, queryParam(req.params, 'projectId') ?? '');
      return settingsView(await deps.projects.updateSettings(project, patch, userId));
    },
  );

  app.post(
    '/projects/test-webhook',
    {
      onRequest: requireJsonContentType,
      schema: {
        tags: ['settings'],
        summary: "Send a webhook.test event to the project's webhook URL (404 when none is set)",
        body: postBody({}, []),
        response: {
          200: {
            type: 'object',
            properties: { delivered: { type: 'boolean' }, statusCode: { type: ['integer', 'null'] }, error: { type: ['string', 'null'] }, durationMs: { type: 'integer' } },
            required: ['delivered', 'statusCode', 'error', 'durationMs'],
          },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const { projectId } = await authorizeProjectWrite(req, deps, NO_INPUT);
      const outcome = await deps.projects.testWebhook(projectId);
      // The catalogued sentence, never outcome.error: a socket error names internal addresses and ports.
      const error = outcome.failure === undefined ? null : webhookDeliveryFailureMessage(outcome.failure, outcome.statusCode);
      return { delivered: outcome.delivered, statusCode: outcome.statusCode ?? null, error, durationMs: outcome.durationMs };
    },
  );
}

/** `https://hooks.example.com/…`: where events go, without the secret path. */
export function maskWebhookUrl(url: string): string {
  try {
    return `${new URL(url).origin}/…`;
  } catch {
    return '…';
  }
}
