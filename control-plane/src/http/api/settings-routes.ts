// Project settings (GET, PATCH with an allow-list) and the webhook test. A PATCH validates every
// field, then the merged result (minBitrate ≤ maxBitrate), then writes: the same body twice
// leaves the same settings. The webhook URL must pass the outbound URL policy.
import type { FastifyInstance } from 'fastify';
import { ApiError, webhookDeliveryFailureMessage } from '../../errors';
import type { MemberAccess, Project } from '../../repositories/projects';
import type { ProjectSettings } from '../../projects/project-settings';
import { checkOutboundUrl, MAX_URL_CHARS } from '../../webhooks/url-policy';
import { TEST_EVENT_PROJECT_ID, TEST_EVENT_UPLOAD_ID } from '../../webhooks/webhook-sender';
import { POLLED_ROUTE_LOG_LEVEL, type ApiDeps } from './api-deps';
import { authenticateProjectQuery, bodyCredentials, bodyObject, queryParam, requiredString, requireJsonContentType } from './request-fields';
import { errorResponses, postBody, projectIdParams, queryAuth, settingsBody } from './schemas';

export const CODECS = ['H264', 'VP8', 'VP9', 'AV1'] as const;
/** Events a webhook filter may name (spec: Event kinds). */
export const WEBHOOK_EVENTS = ['build.uploaded', 'build.downloading', 'build.extracting', 'build.saving', 'build.ready', 'build.distributing', 'build.approved', 'build.rejected', 'webhook.test'] as const;
/** Settings that exist but can never change through the API (spec: not on the allow-list). */
export const FIXED_FIELDS = ['region', 'allowedUsers'] as const;
/** Arguments the agent sets itself; a launch argument may not name them. */
const PROTECTED_ARGS = ['PixelStreaming', 'ABSLOG', 'RenderOffScreen', 'ForceRes', 'ResX', 'ResY', 'Unattended'];
const LAUNCH_ARG = /^-([A-Za-z][A-Za-z0-9_.]*)(?:=([^"'\s\u0000-\u001f\u007f]+))?$/;

const int = (minimum: number, maximum: number, description: string) => ({ type: 'integer', minimum, maximum, description });

/** The allow-list, as documented; `validators` below enforces it with messages naming the field. */
const SETTINGS_PROPERTIES = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  webhookUrl: { type: ['string', 'null'], maxLength: MAX_URL_CHARS, description: 'Public HTTPS receiver; null removes it.' },
  webhookEvents: { type: ['array', 'null'], items: { type: 'string', enum: [...WEBHOOK_EVENTS] }, description: 'Events delivered; null = all.' },
  codec: { type: 'string', enum: [...CODECS], description: 'Case-sensitive.' },
  minBitrate: int(100_000, 200_000_000, 'Bits per second; at most maxBitrate.'),
  maxBitrate: int(100_000, 200_000_000, 'Bits per second.'),
  resX: int(2, 7680, 'Pixels; even.'),
  resY: int(2, 4320, 'Pixels; even.'),
  fps: int(1, 120, 'Frames per second.'),
  maxRunTime: int(0, 1440, 'Minutes per session; 0 = no cap.'),
  afkTimeout: int(0, 86_400, 'Seconds without input; 0 = never.'),
  maxConcurrentSessions: int(0, 10_000, '0 = as many as workers allow.'),
  launchArgs: { type: 'array', maxItems: 64, items: { type: 'string' }, description: 'Extra Unreal arguments, -Name or -Name=value.' },
} as const;

type SettingName = keyof typeof SETTINGS_PROPERTIES;
const SETTING_NAMES = Object.keys(SETTINGS_PROPERTIES) as SettingName[];

const settingsResponse = {
  type: 'object',
  properties: { projectId: { type: 'string' }, region: { type: 'string' }, ...SETTINGS_PROPERTIES },
  required: ['projectId', 'region', ...SETTING_NAMES],
} as const;

const bad = (detail: string) => new ApiError('invalidField', { detail });

function integerIn(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw bad(`Invalid field: ${field} must be an integer`);
  if (value < min || value > max) throw bad(`Invalid field: ${field} must be between ${min} and ${max}`);
  return value;
}

interface Patch {
  name?: string;
  webhookUrl?: string | null;
  webhookEvents?: string[] | null;
  settings: Partial<ProjectSettings>;
}

/**
 * The body minus its credentials, read against the allow-list. A `projectId` may travel in the body
 * too, as on the POST routes (spec: "apiKey and userId travel in the JSON body together with
 * projectId"), but only naming the project of the path.
 */
function parsePatch(body: Record<string, unknown>, projectId: string): Patch {
  const patch: Patch = { settings: {} };
  if (body.projectId !== undefined && body.projectId !== projectId) throw bad('Invalid field: projectId must match the project in the path');
  const fields = Object.keys(body).filter((k) => k !== 'apiKey' && k !== 'userId' && k !== 'projectId');
  for (const field of fields) {
    if ((FIXED_FIELDS as readonly string[]).includes(field)) throw bad(`Invalid field: ${field} cannot be changed`);
    if (!(SETTING_NAMES as string[]).includes(field)) throw bad(`Invalid field: ${field} is not a setting`);
  }
  if (fields.length === 0) throw bad('No settings to update');
  const v = (k: SettingName) => body[k];
  if (v('name') !== undefined) {
    const name = v('name');
    if (typeof name !== 'string' || name.trim().length === 0 || name.trim().length > 200) throw bad('Invalid field: name must be 1 to 200 characters');
    patch.name = name.trim();
  }
  if (v('webhookUrl') !== undefined) {
    const url = v('webhookUrl');
    if (url !== null && (typeof url !== 'string' || url === '')) throw bad('Invalid field: webhookUrl must be a URL or null');
    patch.webhookUrl = url;
  }
  if (v('webhookEvents') !== undefined) {
    const events = v('webhookEvents');
    if (events !== null) {
      if (!Array.isArray(events) || events.some((e) => typeof e !== 'string' || !(WEBHOOK_EVENTS as readonly string[]).includes(e))) {
        throw bad(`Invalid field: webhookEvents must be null or a list of ${WEBHOOK_EVENTS.join(', ')}`);
      }
      patch.webhookEvents = [...new Set(events as string[])];
    } else patch.webhookEvents = null;
  }
  if (v('codec') !== undefined) {
    const codec = v('codec');
    if (typeof codec !== 'string' || !(CODECS as readonly string[]).includes(codec)) throw bad(`Invalid field: codec must be one of ${CODECS.join(', ')} (case-sensitive)`);
    patch.settings.codec = codec as ProjectSettings['codec'];
  }
  for (const k of ['minBitrate', 'maxBitrate', 'resX', 'resY', 'fps', 'maxRunTime', 'afkTimeout', 'maxConcurrentSessions'] as const) {
    if (v(k) === undefined) continue;
    const spec = SETTINGS_PROPERTIES[k];
    patch.settings[k] = integerIn(k, v(k), spec.minimum, spec.maximum);
  }
  for (const k of ['resX', 'resY'] as const) if (patch.settings[k] !== undefined && patch.settings[k] % 2 !== 0) throw bad(`Invalid field: ${k} must be even`);
  if (v('launchArgs') !== undefined) {
    const args = v('launchArgs');
    if (!Array.isArray(args) || args.length > SETTINGS_PROPERTIES.launchArgs.maxItems) throw bad('Invalid field: launchArgs must be a list of at most 64 arguments');
    args.forEach((arg: unknown, i) => {
      const m = typeof arg === 'string' && arg.length <= 512 ? LAUNCH_ARG.exec(arg) : null;
      if (!m) throw bad(`Invalid field: launchArgs[${i}] must look like -Name or -Name=value`);
      const text = arg as string;
      if (PROTECTED_ARGS.some((p) => text.toLowerCase().includes(p.toLowerCase()))) throw bad(`Invalid field: launchArgs[${i}] sets an argument the agent controls`);
    });
    patch.settings.launchArgs = args as string[];
  }
  return patch;
}

export function registerSettingsRoutes(app: FastifyInstance, deps: ApiDeps): void {
  /** READONLY members see only the webhook URL's origin: the full URL is the receiver's secret. */
  const view = (project: Project, access: MemberAccess = 'FULL') => {
    const webhook = deps.projects.webhook(project.projectId);
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
    };
  };

  app.get(
    '/projects/:projectId/settings',
    { logLevel: POLLED_ROUTE_LOG_LEVEL, schema: { tags: ['settings'], summary: "A project's settings", params: projectIdParams, querystring: queryAuth, response: { 200: settingsResponse, ...errorResponses } } },
    (req) => {
      const { projectId, userId } = authenticateProjectQuery(req, deps.auth);
      const grant = deps.access.require(userId, projectId, 'read', 'accessDenied');
      return view(grant.project, grant.access);
    },
  );

  app.patch(
    '/projects/:projectId/settings',
    {
      onRequest: requireJsonContentType,
      schema: { tags: ['settings'], summary: 'Update allow-listed settings (safe to repeat)', params: projectIdParams, body: settingsBody(SETTINGS_PROPERTIES), response: { 200: settingsResponse, ...errorResponses } },
    },
    async (req) => {
      const body = bodyObject(req.body);
      const { apiKey, userId } = bodyCredentials(req, body);
      const projectId = queryParam(req.params, 'projectId') ?? '';
      const patch = parsePatch(body, projectId);
      deps.auth.verifyKeyOwner(apiKey, userId);
      const { project } = deps.access.require(userId, projectId, 'write', 'forbidden');
      const settings: ProjectSettings = { ...project.settings, ...patch.settings };
      if (settings.minBitrate > settings.maxBitrate) throw bad(`Invalid field: minBitrate (${settings.minBitrate}) must not exceed maxBitrate (${settings.maxBitrate})`);
      if (typeof patch.webhookUrl === 'string') {
        const verdict = await checkOutboundUrl(patch.webhookUrl, deps.urlPolicy);
        if (!verdict.ok) throw bad(`Invalid field: webhookUrl ${verdict.reason}`);
      }
      const webhook = deps.projects.webhook(projectId);
      if (patch.webhookUrl !== undefined || patch.webhookEvents !== undefined) {
        deps.projects.setWebhook(projectId, {
          url: patch.webhookUrl === undefined ? webhook.url : (patch.webhookUrl ?? undefined),
          events: patch.webhookEvents === undefined ? webhook.events : (patch.webhookEvents ?? undefined),
        });
      }
      if (patch.name !== undefined) deps.projects.setName(projectId, patch.name);
      deps.projects.setSettings(projectId, settings);
      deps.events.record('project.settings', { projectId }, { userId, fields: Object.keys(body).filter((k) => k !== 'apiKey' && k !== 'userId') });
      const updated = deps.projects.findById(projectId);
      if (!updated) throw new ApiError('projectNotFound');
      return view(updated);
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
      const body = bodyObject(req.body);
      const { apiKey, userId } = bodyCredentials(req, body);
      const projectId = requiredString(body, 'projectId');
      deps.auth.verifyKeyOwner(apiKey, userId);
      deps.access.require(userId, projectId, 'write', 'forbidden');
      const { url } = deps.projects.webhook(projectId);
      if (url === undefined) throw new ApiError('webhookNotConfigured');
      const outcome = await deps.webhooks.deliver(projectId, url, {
        event: 'webhook.test',
        projectId: TEST_EVENT_PROJECT_ID,
        uploadId: TEST_EVENT_UPLOAD_ID,
        fileUrl: null,
        status: 'test',
        objection: null,
        timestamp: new Date(deps.clock.now()).toISOString(),
      });
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
