// The settings PATCH's allow-list and its reader: each field checked against its rule with a
// message naming it (`Invalid field: <name> …`), unknown and fixed fields refused. The merged
// result (minBitrate ≤ maxBitrate) is checked by project-service.ts before anything is written.
import { ApiError } from '../errors';
import { MAX_URL_CHARS } from '../webhooks/url-policy';
import { WEBHOOK_EVENTS, isWebhookEvent, type WebhookEvent } from '../webhooks/webhook-envelope';
import { checkLaunchArgs, CODECS, MAX_LAUNCH_ARGS } from '@pixelfleet/proto';
import type { ProjectSettings } from './project-settings';

/** Settings that exist but can never change through the API (spec: not on the allow-list). */
export const FIXED_FIELDS = ['region', 'allowedUsers'] as const;

/** Origins a project's embed allow-list holds at most (each one costs a CSP source and a postMessage per event). */
export const MAX_EMBED_ORIGINS = 20;
const MAX_ORIGIN_CHARS = 300;

const int = (minimum: number, maximum: number, description: string) => ({ type: 'integer', minimum, maximum, description });

/** The allow-list as JSON schema (OpenAPI, responses); parseSettingsPatch enforces it with messages naming the field. */
export const SETTINGS_PROPERTIES = {
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
  launchArgs: { type: 'array', maxItems: MAX_LAUNCH_ARGS, items: { type: 'string' }, description: 'Extra Unreal arguments, -Name or -Name=value.' },
  embedOrigins: {
    type: 'array',
    maxItems: MAX_EMBED_ORIGINS,
    items: { type: 'string', maxLength: MAX_ORIGIN_CHARS },
    description: 'Sites that may embed the share page, as exact origins (https://shop.example.com); [] = any site.',
  },
  warmPoolMinIdle: int(0, 100, 'Warm instances kept launched and ready for the next viewers; 0 = none (every viewer waits for the app to start).'),
  warmPoolQueueWaitTargetSeconds: int(0, 3600, 'A viewer waiting in line longer than this grows the warm pool by one (up to the region\'s slots); 0 = it never grows.'),
  warmInstanceMaxAgeMinutes: int(1, 1440, 'Minutes an unclaimed warm instance lives before a fresh one replaces it.'),
} as const;

export type SettingName = keyof typeof SETTINGS_PROPERTIES;
export const SETTING_NAMES = Object.keys(SETTINGS_PROPERTIES) as SettingName[];

export const invalidSetting = (detail: string) => new ApiError('invalidField', { detail });

function integerIn(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidSetting(`Invalid field: ${field} must be an integer`);
  if (value < min || value > max) throw invalidSetting(`Invalid field: ${field} must be between ${min} and ${max}`);
  return value;
}

export interface SettingsPatch {
  name?: string;
  /** A URL, or null to remove it. */
  webhookUrl?: string | null;
  /** The events delivered, or null for every event. */
  webhookEvents?: WebhookEvent[] | null;
  settings: Partial<ProjectSettings>;
  /** The body's field names but the credentials, as sent (for the fleet event). */
  fields: string[];
}

/**
 * The body minus its credentials, read against the allow-list. A `projectId` may travel in the body
 * too, as on the POST routes (spec: "apiKey and userId travel in the JSON body together with
 * projectId"), but only naming the project of the path.
 */
export function parseSettingsPatch(body: Record<string, unknown>, projectId: string): SettingsPatch {
  const patch: SettingsPatch = { settings: {}, fields: Object.keys(body).filter((k) => k !== 'apiKey' && k !== 'userId') };
  if (body.projectId !== undefined && body.projectId !== projectId) throw invalidSetting('Invalid field: projectId must match the project in the path');
  const fields = Object.keys(body).filter((k) => k !== 'apiKey' && k !== 'userId' && k !== 'projectId');
  for (const field of fields) {
    if ((FIXED_FIELDS as readonly string[]).includes(field)) throw invalidSetting(`Invalid field: ${field} cannot be changed`);
    if (!(SETTING_NAMES as string[]).includes(field)) throw invalidSetting(`Invalid field: ${field} is not a setting`);
  }
  if (fields.length === 0) throw invalidSetting('No settings to update');
  const v = (k: SettingName) => body[k];
  if (v('name') !== undefined) {
    const name = v('name');
    if (typeof name !== 'string' || name.trim().length === 0 || name.trim().length > 200) throw invalidSetting('Invalid field: name must be 1 to 200 characters');
    patch.name = name.trim();
  }
  if (v('webhookUrl') !== undefined) {
    const url = v('webhookUrl');
    if (url !== null && (typeof url !== 'string' || url === '')) throw invalidSetting('Invalid field: webhookUrl must be a URL or null');
    patch.webhookUrl = url;
  }
  if (v('webhookEvents') !== undefined) {
    const events = v('webhookEvents');
    if (events !== null) {
      if (!Array.isArray(events) || !events.every(isWebhookEvent)) {
        throw invalidSetting(`Invalid field: webhookEvents must be null or a list of ${WEBHOOK_EVENTS.join(', ')}`);
      }
      patch.webhookEvents = [...new Set(events)];
    } else patch.webhookEvents = null;
  }
  if (v('codec') !== undefined) {
    const codec = v('codec');
    if (typeof codec !== 'string' || !(CODECS as readonly string[]).includes(codec)) throw invalidSetting(`Invalid field: codec must be one of ${CODECS.join(', ')} (case-sensitive)`);
    patch.settings.codec = codec as ProjectSettings['codec'];
  }
  const integers = ['minBitrate', 'maxBitrate', 'resX', 'resY', 'fps', 'maxRunTime', 'afkTimeout', 'maxConcurrentSessions', 'warmPoolMinIdle', 'warmPoolQueueWaitTargetSeconds', 'warmInstanceMaxAgeMinutes'] as const;
  for (const k of integers) {
    if (v(k) === undefined) continue;
    const spec = SETTINGS_PROPERTIES[k];
    patch.settings[k] = integerIn(k, v(k), spec.minimum, spec.maximum);
  }
  for (const k of ['resX', 'resY'] as const) if (patch.settings[k] !== undefined && patch.settings[k] % 2 !== 0) throw invalidSetting(`Invalid field: ${k} must be even`);
  if (v('launchArgs') !== undefined) {
    const args = v('launchArgs');
    // The one rule the agent applies too (@pixelfleet/proto launch-args.ts).
    const refusal = checkLaunchArgs(args);
    if (refusal?.kind === 'list') throw invalidSetting(`Invalid field: launchArgs must be a list of at most ${MAX_LAUNCH_ARGS} arguments`);
    if (refusal?.kind === 'format') throw invalidSetting(`Invalid field: launchArgs[${refusal.index}] must look like -Name or -Name=value`);
    if (refusal?.kind === 'protected') throw invalidSetting(`Invalid field: launchArgs[${refusal.index}] sets an argument the agent controls`);
    patch.settings.launchArgs = args as string[];
  }
  if (v('embedOrigins') !== undefined) patch.settings.embedOrigins = parseEmbedOrigins(v('embedOrigins'));
  return patch;
}

/**
 * The embed allow-list: each entry an origin exactly as a browser sends it (scheme, host, port if
 * not the default; no path, query, credentials or wildcard), kept in that form, duplicates dropped.
 * Exact origins only: the page posts its events to each listed origin by name, and a CSP
 * `frame-ancestors` wildcard would admit subdomains the customer never meant.
 */
function parseEmbedOrigins(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > MAX_EMBED_ORIGINS) throw invalidSetting(`Invalid field: embedOrigins must be a list of at most ${MAX_EMBED_ORIGINS} origins`);
  const origins = value.map((entry, index) => {
    const refused = invalidSetting(`Invalid field: embedOrigins[${index}] must be an origin such as https://shop.example.com (no path, no wildcard)`);
    if (typeof entry !== 'string' || entry.length > MAX_ORIGIN_CHARS) throw refused;
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw refused;
    }
    const bare = url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '' && !/[/?#]./.test(entry.replace(/^[a-z]+:\/\//i, ''));
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !bare || url.hostname.includes('*')) throw refused;
    return url.origin;
  });
  return [...new Set(origins)];
}
