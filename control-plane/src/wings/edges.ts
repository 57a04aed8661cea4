// The edges of the control plane, where callers come in: gRPC (the agents' AgentService and the
// operators' AdminService, one count of failed credentials for both) and HTTP (the build API,
// the analytics API, the telemetry route, the agents' archive downloads, the docs and landing
// page, /healthz and /metrics). The share page's routes are registered at start (app.ts), once
// the gateway can take sockets.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Clock } from '@pixelfleet/common';
import type { ControlPlaneConfig } from '../config';
import type { BlobStore } from '../blobs/blob-store';
import type { EventLog } from '../events/event-log';
import type { PeopleService } from '../people/people-service';
import type { AccountService } from '../accounts/account-service';
import type { WorkerRegistry } from '../workers/registry';
import type { Store } from '../store/store';
import { createAgentService } from '../grpc/agent-service';
import { CredentialFailures } from '../grpc/credential-failures';
import { createAdminService } from '../grpc/admin-service';
import { loadServerTls } from '../grpc/server-tls';
import { buildHttpApp } from '../http/app';
import { createMetrics } from '../http/metrics';
import { registerTelemetryRoutes } from '../http/telemetry-routes';
import { FairUse } from '../http/fair-use';
import { registerOpenApi } from '../http/openapi';
import { registerLandingPage } from '../http/landing-page';
import { registerApiRoutes } from '../http/api/api-routes';
import { registerAgentArchiveRoutes } from '../http/agent-archive-routes';
import { registerAnalyticsRoutes } from '../http/analytics/analytics-routes';
import { ApiKeyAuth } from '../auth/api-key-auth';
import { ProjectAccess } from '../auth/project-access';
import { ProjectService } from '../projects/project-service';
import { AnalyticsService } from '../analytics/analytics-service';
import type { AccessFactsRepository } from '../repositories/access-facts';
import type { WebhookDeliveriesRepository } from '../repositories/webhook-deliveries';
import type { BuildService } from '../builds/build-service';
import type { BuildsWing } from './builds-wing';
import type { SessionsWing } from './sessions-wing';

export interface EdgesInput {
  config: ControlPlaneConfig;
  store: Store;
  clock: Clock;
  log: Logger;
  events: EventLog;
  accounts: AccountService;
  people: PeopleService;
  registry: WorkerRegistry;
  blobs: BlobStore;
  buildsWing: BuildsWing;
  sessionsWing: SessionsWing;
  /** False until start() has finished and again from the first step of close(): /healthz says so. */
  isServing: () => boolean;
}

/** The services behind the REST API that the dashboard's routes call too. */
export interface DashboardServices {
  access: ProjectAccess;
  accessFacts: AccessFactsRepository;
  projects: ProjectService;
  builds: BuildService;
  deliveries: WebhookDeliveriesRepository;
  analytics: AnalyticsService;
}

export interface Edges {
  readonly http: FastifyInstance;
  readonly agentService: ReturnType<typeof createAgentService>;
  readonly admin: ReturnType<typeof createAdminService>;
  /** The HTTP API's fair use per client address, which the dashboard's routes share (registered at start). */
  readonly fairUse: FairUse;
  /** What the dashboard's routes call, the same instances the REST API's routes call (registered at start). */
  readonly dashboard: DashboardServices;
}

export function buildEdges(input: EdgesInput): Edges {
  const { config, store, clock, log, events, registry, blobs } = input;
  const { projects, builds } = store;
  const { sessions, logUploads } = input.sessionsWing;
  const { buildService, webhooks, urlPolicy, archiveLinks } = input.buildsWing;

  // One count of failed credential checks per address for both services: guessing the admin token
  // and the join token from one address share the same budget.
  const credentialFailures = new CredentialFailures(clock, log.child({ component: 'grpc-auth' }));
  const agentService = createAgentService({ registry, logUploads, joinToken: config.agentJoinToken, credentialFailures, clock, log: log.child({ component: 'agent-service' }) });
  const admin = createAdminService({
    adminToken: config.adminToken,
    credentialFailures,
    accounts: input.accounts,
    people: input.people,
    registry,
    sessions,
    unclaimedWarm: (projectId) => store.sessions.listUnclaimedWarm(projectId),
    builds,
    buildProgress: (uploadId) => buildService.pipeline?.progressOf(uploadId),
    backups: { take: () => store.takeBackup() },
    events,
    log: log.child({ component: 'admin-service' }),
  });

  const http = buildHttpApp({
    log: log.child({ component: 'http' }),
    metrics: createMetrics(registry, (workerId, sessionId) => sessions.heldBy(sessionId, workerId), {
      countNotTerminatedByProjectAndStatus: () => store.sessions.countNotTerminatedByProjectAndStatus(),
      countBuildsByStatus: () => builds.countByStatus(),
    }, {
      countByState: () => sessions.warm.countByState(),
      totals: () => sessions.warm.totals(),
      stoppedBuilds: () => sessions.warm.stoppedBuilds(),
      onFirstVideo: (listener) => {
        sessions.on('videoShown', (s, atMs) => listener((atMs - s.createdAt) / 1000, s.claimedAt !== undefined));
      },
    }),
    isServing: input.isServing,
    readiness: async () => {
      const schema = await store.schemaStatus();
      return { store: store.kind, schemaVersion: schema.current, latestSchemaVersion: schema.latest };
    },
    trustProxy: config.http.trustProxy,
    metricsBearerToken: config.metrics.bearerToken,
    // Read at build: unusable files refuse the start before anything listens.
    tls: config.http.tls === undefined ? undefined : loadServerTls(config.http.tls, 'http.tls'),
  });
  registerTelemetryRoutes(http, {
    sessions,
    telemetry: store.telemetry,
    clock,
    limits: {
      bytesPerSession: config.limits.telemetryBytesPerSession,
      bytesWhileQueued: config.limits.telemetryBytesWhileQueued,
      addressBytesBurst: config.limits.telemetryAddressBytesBurst,
      addressBytesPerSecond: config.limits.telemetryAddressBytesPerSecond,
    },
  });
  registerOpenApi(http, { version: '0.1.0' });
  registerLandingPage(http);
  const fairUse = new FairUse(clock, {
    burst: config.limits.fairUseBurst,
    refillPerSecond: config.limits.fairUsePerSecond,
    addressBurst: config.limits.fairUseAddressBurst,
    addressRefillPerSecond: config.limits.fairUseAddressPerSecond,
  });
  const projectAccess = new ProjectAccess(projects);
  const { accessFacts } = store;
  const projectService = new ProjectService({ projects, sessions, events, webhooks, urlPolicy, clock });
  registerApiRoutes(http, {
    auth: new ApiKeyAuth(store.users),
    access: projectAccess,
    accessFacts,
    projects: projectService,
    builds: buildService,
    sessions,
    fairUse,
  });
  const analytics = new AnalyticsService({
    sessions: store.sessions,
    history: store.sessionHistory,
    telemetry: store.telemetry,
    dimensions: store.sessionDimensions,
    daily: store.sessionDaily,
    logFiles: store.logFiles,
    blobs,
  });
  // The analytics API: the same key and access checks as the build API's reads, its own read limit.
  const analyticsReads = config.limits.analyticsReadsPerMinute;
  registerAnalyticsRoutes(http, {
    auth: new ApiKeyAuth(store.users),
    access: new ProjectAccess(projects),
    accessFacts,
    readLimit: new FairUse(clock, { burst: analyticsReads, refillPerSecond: analyticsReads / 60, addressBurst: analyticsReads, addressRefillPerSecond: analyticsReads / 60 }),
    addressLimit: fairUse,
    analytics,
    clock,
    log: log.child({ component: 'analytics' }),
  });
  registerAgentArchiveRoutes(http, { links: archiveLinks, workerOfToken: (token) => registry.authenticate(token) });
  const dashboard: DashboardServices = { access: projectAccess, accessFacts, projects: projectService, builds: buildService, deliveries: input.buildsWing.webhookDeliveries, analytics };
  return { http, agentService, admin, fairUse, dashboard };
}
