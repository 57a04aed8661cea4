// The webhook contract (spec: Events): the event names, the envelope every delivery carries, and
// the test event. The build stages, the settings filter and the sender all take them from here.

/** Events of the build pipeline, in pipeline order (spec: Event kinds). */
export const BUILD_EVENTS = [
  'build.uploaded',
  'build.downloading',
  'build.extracting',
  'build.saving',
  'build.ready',
  'build.distributing',
  'build.approved',
  'build.rejected',
] as const;
export type BuildEvent = (typeof BUILD_EVENTS)[number];

/** The Test button's event; never sent during real builds. */
export const TEST_EVENT = 'webhook.test';

/** Every event a delivery can carry, and so every name a project's event filter may list. */
export const WEBHOOK_EVENTS = [...BUILD_EVENTS, TEST_EVENT] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export function isWebhookEvent(name: unknown): name is WebhookEvent {
  return typeof name === 'string' && (WEBHOOK_EVENTS as readonly string[]).includes(name);
}

/** The spec's envelope, sent for every event including `webhook.test`. */
export interface WebhookEnvelope {
  event: WebhookEvent;
  projectId: string;
  /** Null when no upload exists yet. */
  uploadId: string | null;
  fileUrl: string | null;
  /** The raw pipeline status (a build status, `Distribute`, or `test` on the test event). */
  status: string;
  /** Only filled on `build.rejected`. */
  objection: string | null;
  /** ISO 8601 time of the event. */
  timestamp: string;
}

/** Placeholder ids of `webhook.test`: they match no real record (ids are a prefix + 24 hex). */
export const TEST_EVENT_PROJECT_ID = 'prj_webhook_test';
export const TEST_EVENT_UPLOAD_ID = 'upl_webhook_test';
/** The status of `webhook.test`; not a build status. */
export const TEST_EVENT_STATUS = 'test';

/** What an envelope says about the build it concerns. */
export interface EnvelopeBuild {
  projectId: string;
  uploadId: string;
  fileUrl: string | undefined;
  objection: string | undefined;
}

/** A build event's envelope, stamped at `atMs` (epoch milliseconds). */
export function buildEventEnvelope(event: BuildEvent, status: string, build: EnvelopeBuild, atMs: number): WebhookEnvelope {
  return {
    event,
    projectId: build.projectId,
    uploadId: build.uploadId,
    fileUrl: build.fileUrl ?? null,
    status,
    objection: build.objection ?? null,
    timestamp: new Date(atMs).toISOString(),
  };
}

/** The test event's envelope, stamped at `atMs` (epoch milliseconds): placeholder ids, status `test`. */
export function testEventEnvelope(atMs: number): WebhookEnvelope {
  return {
    event: TEST_EVENT,
    projectId: TEST_EVENT_PROJECT_ID,
    uploadId: TEST_EVENT_UPLOAD_ID,
    fileUrl: null,
    status: TEST_EVENT_STATUS,
    objection: null,
    timestamp: new Date(atMs).toISOString(),
  };
}
