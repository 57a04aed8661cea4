// The builds wing of the control plane: a submitted build's pipeline (download, checks,
// extraction, storage), its distribution to the workers of its region, the signed links agents
// fetch archives with, and the webhooks that tell the customer each step. app.ts builds it and
// names its close steps in the one shutdown order.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '@pixelfleet/common';
import { DEFAULT_ARCHIVE_LIMITS } from '@pixelfleet/build-archive';
import type { ControlPlaneConfig } from '../config';
import type { IdSource } from '../lib/ids';
import type { BlobStore } from '../blobs/blob-store';
import type { EventLog } from '../events/event-log';
import type { WorkerRegistry } from '../workers/registry';
import type { WebhookDeliveriesRepository } from '../repositories/webhook-deliveries';
import type { Repositories } from '../store/store';
import { ArchiveLinks, loadArchiveLinkKey } from '../builds/archive-links';
import { BuildCallLimit } from '../builds/build-call-limit';
import { BuildDistribution } from '../builds/build-distribution';
import { BuildService } from '../builds/build-service';
import { WebhookSender } from '../webhooks/webhook-sender';
import { checkOutboundUrl, systemResolver, type HostResolver, type UrlPolicyOptions } from '../webhooks/url-policy';

/** Builds the pipeline downloads and scans at once (each is one download and one extraction). */
const PIPELINE_CONCURRENCY = 2;

export interface BuildsWingInput {
  config: ControlPlaneConfig;
  store: Pick<Repositories, 'projects' | 'builds' | 'buildCopies' | 'webhookDeliveries'>;
  clock: Clock;
  ids: IdSource;
  log: Logger;
  events: EventLog;
  registry: WorkerRegistry;
  blobs: BlobStore;
  /** DNS for the outbound URL policy (fileUrl, webhooks); tests inject one. */
  resolveHost?: HostResolver | undefined;
  /** Tests of the build API alone: submitted builds wait in `pending`. */
  withoutPipeline?: boolean | undefined;
  /** A build went live somewhere: queued sessions may now be placeable. */
  requestScheduling: () => void;
  /** The origin agents download from, once the HTTP server listens. */
  agentsUrl: () => string | undefined;
}

export interface BuildsWing {
  readonly buildService: BuildService;
  readonly distribution: BuildDistribution;
  readonly archiveLinks: ArchiveLinks;
  readonly webhooks: WebhookSender;
  /** Every delivery attempt, as the dashboard's settings page lists them. */
  readonly webhookDeliveries: WebhookDeliveriesRepository;
  /** What outbound URLs may name (a build's fileUrl, a project's webhook). */
  readonly urlPolicy: UrlPolicyOptions;
}

export function buildBuildsWing(input: BuildsWingInput): BuildsWing {
  const { config, clock, ids, log, events, registry, blobs } = input;
  const { projects, builds, webhookDeliveries } = input.store;
  const urlPolicy: UrlPolicyOptions = { allowPrivateUrls: config.network.allowPrivateUrls, resolve: input.resolveHost ?? systemResolver };
  const webhooks = new WebhookSender({ projects, deliveries: webhookDeliveries, clock, policy: urlPolicy, log: log.child({ component: 'webhooks' }) });
  // Agents download build archives over HTTP with links signed by a key kept in the data dir.
  const archiveLinks = new ArchiveLinks({ key: loadArchiveLinkKey(config.dataDir), clock, linkTtlSeconds: config.distribution.linkTtlSeconds, agentsUrl: input.agentsUrl, builds, blobs });
  // Distribution and the build service call each other by name: the service starts a
  // distribution, the distribution settles it through the service's advance(). Both closures run
  // long after construction.
  const distribution: BuildDistribution = new BuildDistribution({
    builds,
    copies: input.store.buildCopies,
    projects,
    registry,
    issueLink: (link) => archiveLinks.issueArchiveLink(link),
    advance: (uploadId, to, objection) => buildService.advance(uploadId, to, objection),
    requestScheduling: input.requestScheduling,
    deadlineMs: config.distribution.deadlineSeconds * 1000,
    clock,
    log: log.child({ component: 'distribution' }),
  });
  const buildService: BuildService = new BuildService({
    builds,
    events,
    webhooks,
    buildCalls: new BuildCallLimit(clock, config.limits.buildCallWindowSeconds),
    urlPolicy,
    clock,
    ids,
    distribution,
    pipeline: input.withoutPipeline
      ? undefined
      : {
          blobs,
          workDir: join(config.dataDir, 'pipeline'),
          checkUrl: (raw) => checkOutboundUrl(raw, urlPolicy),
          maxBuildBytes: config.limits.maxBuildBytes,
          archiveLimits: DEFAULT_ARCHIVE_LIMITS,
          downloadRetry: { maxAttempts: config.downloads.maxAttempts, baseDelayMs: config.downloads.retryBaseMs, maxDelayMs: config.downloads.retryMaxMs },
          stallTimeoutMs: config.downloads.stallTimeoutSeconds * 1000,
          concurrency: PIPELINE_CONCURRENCY,
          log: log.child({ component: 'pipeline' }),
        },
  });
  return { buildService, distribution, archiveLinks, webhooks, webhookDeliveries, urlPolicy };
}
