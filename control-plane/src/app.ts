// The composition root: builds every part of the control plane from one parsed config and
// returns { start(), close() }. main.ts only reads flags and env, calls this and wires signals;
// tests build the same app on port 0.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { insecureListeners, resolvePublicUrls, type ControlPlaneConfig, type PublicUrls } from './config';
import { crossesNetworkInPlaintext, systemClock, type Clock, createLogger } from '@pixelfleet/common';
import { randomIds, type IdSource } from './lib/ids';
import { openDatabase, type Db } from './db/database';
import { OnlineBackups } from './db/online-backup';
import { WalCheckpointer } from './db/wal-checkpointer';
import { SqliteUsersRepository } from './repositories/users';
import { SqliteProjectsRepository } from './repositories/projects';
import { SqliteWorkersRepository } from './repositories/workers';
import { SqliteSessionsRepository } from './repositories/sessions';
import { SqliteBuildsRepository } from './repositories/builds';
import { SqliteAccessFactsRepository } from './repositories/access-facts';
import { SqliteEventsRepository } from './repositories/events';
import { SqliteLogFilesRepository } from './repositories/log-files';
import { LocalBlobStore, type BlobStore } from './blobs/blob-store';
import { EventLog } from './events/event-log';
import { AccountService } from './accounts/account-service';
import { WorkerRegistry } from './workers/registry';
import { SessionService } from './sessions/session-service';
import type { Scheduler } from './sessions/scheduler';
import { registerLocalBuild } from './builds/local-build';
import { LogUploads } from './sessions/log-uploads';
import { createAgentService } from './grpc/agent-service';
import { CredentialFailures } from './grpc/credential-failures';
import { createAdminService } from './grpc/admin-service';
import type { WatchCounters } from './events/event-watch';
import { startGrpcServer, type GrpcServerHandle } from './grpc/server';
import { loadServerTls } from './grpc/server-tls';
import type { Server as TlsServer } from 'node:tls';
import { listenOrExplain } from './lib/listen-error';
import { buildHttpApp } from './http/app';
import { createMetrics } from './http/metrics';
import { registerTelemetryRoutes, TELEMETRY_PATH } from './http/telemetry-routes';
import { ViewerGateway } from './share/viewer-gateway';
import { registerShareRoutes } from './share/share-routes';
import { SqliteTelemetryRepository } from './repositories/telemetry';
import { SqliteWebhookDeliveriesRepository } from './repositories/webhook-deliveries';
import { ApiKeyAuth } from './auth/api-key-auth';
import { ProjectAccess } from './auth/project-access';
import { WebhookSender } from './webhooks/webhook-sender';
import { checkOutboundUrl, systemResolver, type HostResolver } from './webhooks/url-policy';
import { DEFAULT_ARCHIVE_LIMITS } from '@pixelfleet/build-archive';
import { FairUse } from './http/fair-use';
import { registerOpenApi } from './http/openapi';
import { registerLandingPage } from './http/landing-page';
import { registerApiRoutes } from './http/api/api-routes';
import { BuildCallLimit } from './builds/build-call-limit';
import { BuildService } from './builds/build-service';
import { BuildDistribution } from './builds/build-distribution';
import { SqliteBuildCopiesRepository } from './repositories/build-copies';
import { ProjectService } from './projects/project-service';
import { ArchiveLinks, loadArchiveLinkKey } from './builds/archive-links';
import { registerAgentArchiveRoutes } from './http/agent-archive-routes';
import { SqliteSessionRetentionRepository } from './repositories/session-retention';
import { SqliteLogRetentionRepository } from './repositories/log-retention';
import { RetentionSweep } from './retention/retention-sweep';
import { clientDimensions } from './enrichment/client-dimensions';
import { loadDbIpCity, type GeoIp } from './enrichment/geoip';
import { SqliteSessionDimensionsRepository } from './repositories/session-dimensions';
import { registerAnalyticsRoutes } from './http/analytics/analytics-routes';
import { AnalyticsService } from './analytics/analytics-service';
import { SqliteSessionHistoryRepository } from './repositories/session-history';
import { SqliteTelemetryDiagnosisRepository } from './repositories/telemetry-diagnosis';

export interface ControlPlaneDeps {
  clock?: Clock;
  ids?: IdSource;
  logger?: Logger;
  /** DNS for the outbound URL policy (fileUrl, webhooks); tests inject one. */
  resolveHost?: HostResolver;
  /** Tests of the build API alone: submitted builds wait in `pending` instead of being downloaded in the background. */
  withoutPipeline?: boolean;
}

export interface StartedControlPlane {
  httpPort: number;
  grpcPort: number;
  /** `http(s)://host:port` the HTTP server listens on. */
  httpOrigin: string;
  /** `host:port` agents and the admin CLI dial. */
  grpcAddress: string;
  publicUrls: PublicUrls;
}

export interface ControlPlane {
  readonly config: ControlPlaneConfig;
  readonly log: Logger;
  readonly accounts: AccountService;
  readonly registry: WorkerRegistry;
  readonly sessions: SessionService;
  readonly scheduler: Scheduler;
  readonly events: EventLog;
  /** The viewers' signalling sockets (tests read how many are connected or waiting to resume). */
  readonly gateway: ViewerGateway;
  /** The HTTP app (tests use `http.inject()`; it is ready once start() resolved). */
  readonly http: FastifyInstance;
  /** Builds: submit, activate, and the pipeline that takes each through its stages. */
  readonly builds: BuildService;
  /** Deletes history older than retention.sessionDays (tests run a sweep with `retention.sweep()`). */
  readonly retention: RetentionSweep;
  /** Makes an archive-less Approved build live (local demos and tests; see builds/local-build.ts). */
  registerLocalBuild(projectId: string): string;
  start(): Promise<StartedControlPlane>;
  /**
   * Reads grpc.tls's and http.tls's files again (SIGHUP): new connections get the new certificates,
   * the listeners stay open. Throws ServerTlsError naming the key, keeping the current ones, if unusable.
   */
  reloadTls(): void;
  /** Shuts down in order; idempotent. */
  close(): Promise<void>;
}

/** Builds the pipeline downloads and scans at once (each is one download and one extraction). */
const PIPELINE_CONCURRENCY = 2;

/** How long gRPC calls may take to finish at shutdown before they are cut. */
const GRPC_SHUTDOWN_DEADLINE_MS = 5_000;

/** The app and its raw database handle, for tests and benches that seed or read rows (`@pixelfleet/control-plane/test-support`). */
export interface ControlPlaneWithDb extends ControlPlane {
  readonly db: Db;
  /** The blob store (tests seed archives) and the archive link issuer (tests issue agents' links). */
  readonly blobs: BlobStore;
  readonly archiveLinks: ArchiveLinks;
  /** What the admin WatchEvents streams hold (events read and not yet sent), now and at peak. */
  readonly adminWatches: WatchCounters;
}

export function buildControlPlane(config: ControlPlaneConfig, deps: ControlPlaneDeps = {}): ControlPlane {
  // The raw handle stays out of production's reach, at run time too, not only in the type.
  const { db: _db, blobs: _blobs, archiveLinks: _archiveLinks, adminWatches: _adminWatches, ...app } = buildControlPlaneWithDb(config, deps);
  return app;
}

export function buildControlPlaneWithDb(config: ControlPlaneConfig, deps: ControlPlaneDeps = {}): ControlPlaneWithDb {
  const clock = deps.clock ?? systemClock;
  const ids = deps.ids ?? randomIds;
  const log = deps.logger ?? createLogger(config.logLevel);
  // Created for the service's account alone (a folder that exists keeps the modes its operator gave it).
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const db = openDatabase(join(config.dataDir, 'pixelfleet.sqlite'));
  // WAL checkpoints in a thread of their own, not inside a commit on the event loop.
  const checkpointer = WalCheckpointer.start(db, log.child({ component: 'db' }));

  const users = new SqliteUsersRepository(db);
  const projects = new SqliteProjectsRepository(db);
  const workersRepo = new SqliteWorkersRepository(db);
  const sessionsRepo = new SqliteSessionsRepository(db);
  const builds = new SqliteBuildsRepository(db);
  const logFiles = new SqliteLogFilesRepository(db);
  const blobs = new LocalBlobStore(join(config.dataDir, 'blobs'));

  const eventsRepo = new SqliteEventsRepository(db);
  const events = new EventLog(eventsRepo, clock, log.child({ component: 'events' }));
  const accounts = new AccountService(users, projects, events, clock, ids);
  const registry = new WorkerRegistry(workersRepo, events, clock, ids, log.child({ component: 'workers' }), {
    heartbeatIntervalMs: config.workers.heartbeatIntervalSeconds * 1000,
    leaseTtlMs: config.workers.leaseSeconds * 1000,
    lostGraceMs: config.workers.lostGraceSeconds * 1000,
  });
  const copies = new SqliteBuildCopiesRepository(db);
  // Distribution (build-distribution.ts) and the build service call each other by name: the
  // service starts a distribution, the distribution settles it through the service's advance().
  // Both closures run long after construction.
  const distribution: BuildDistribution = new BuildDistribution({
    builds,
    copies,
    projects,
    registry,
    issueLink: (link) => archiveLinks.issueArchiveLink(link),
    advance: (uploadId, to, objection) => buildService.advance(uploadId, to, objection),
    requestScheduling: () => sessions.scheduler.requestRun(),
    deadlineMs: config.distribution.deadlineSeconds * 1000,
    clock,
    log: log.child({ component: 'distribution' }),
  });
  const sessions = new SessionService({
    repo: sessionsRepo,
    projects,
    registry,
    events,
    clock,
    ids,
    log: log.child({ component: 'sessions' }),
    canRunBuild: (workerId, uploadId) => distribution.canRun(workerId, uploadId),
    connectTimeoutMs: config.sessions.connectTimeoutSeconds * 1000,
    resumeGraceMs: config.viewers.resumeGraceSeconds * 1000,
  });
  const logUploads = new LogUploads(sessionsRepo, logFiles, blobs, clock, ids);

  // One count of failed credential checks per address for both services: guessing the admin token
  // and the join token from one address share the same budget.
  const credentialFailures = new CredentialFailures(clock, log.child({ component: 'grpc-auth' }));
  const agentService = createAgentService({
    registry,
    logUploads,
    joinToken: config.agentJoinToken,
    credentialFailures,
    clock,
    log: log.child({ component: 'agent-service' }),
  });
  const admin = createAdminService({
    adminToken: config.adminToken,
    credentialFailures,
    accounts,
    registry,
    sessions,
    builds,
    // Read when an operator lists builds, long after the build service below exists.
    buildProgress: (uploadId) => buildService.pipeline?.progressOf(uploadId),
    backups: new OnlineBackups(db, join(config.dataDir, 'backups')),
    events,
    log: log.child({ component: 'admin-service' }),
  });

  let serving = false;
  const metrics = createMetrics(registry, (workerId, sessionId) => sessions.heldBy(sessionId, workerId));
  const http = buildHttpApp({
    log: log.child({ component: 'http' }),
    metrics,
    isServing: () => serving,
    trustProxy: config.http.trustProxy,
    metricsBearerToken: config.metrics.bearerToken,
    // Read at build: unusable files refuse the start before anything listens.
    tls: config.http.tls === undefined ? undefined : loadServerTls(config.http.tls, 'http.tls'),
  });
  registerTelemetryRoutes(http, {
    sessions,
    telemetry: new SqliteTelemetryRepository(db),
    clock,
    limits: {
      bytesPerSession: config.limits.telemetryBytesPerSession,
      bytesWhileQueued: config.limits.telemetryBytesWhileQueued,
      addressBytesBurst: config.limits.telemetryAddressBytesBurst,
      addressBytesPerSecond: config.limits.telemetryAddressBytesPerSecond,
    },
  });
  const urlPolicy = { allowPrivateUrls: config.network.allowPrivateUrls, resolve: deps.resolveHost ?? systemResolver };
  const webhooks = new WebhookSender({
    projects,
    deliveries: new SqliteWebhookDeliveriesRepository(db),
    clock,
    policy: urlPolicy,
    log: log.child({ component: 'webhooks' }),
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
    pipeline: deps.withoutPipeline ? undefined : {
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
  registerOpenApi(http, { version: '0.1.0' });
  registerLandingPage(http);
  const fairUse = new FairUse(clock, {
    burst: config.limits.fairUseBurst,
    refillPerSecond: config.limits.fairUsePerSecond,
    addressBurst: config.limits.fairUseAddressBurst,
    addressRefillPerSecond: config.limits.fairUseAddressPerSecond,
  });
  registerApiRoutes(http, {
    auth: new ApiKeyAuth(users),
    access: new ProjectAccess(projects),
    accessFacts: new SqliteAccessFactsRepository(db),
    projects: new ProjectService({ projects, sessions, events, webhooks, urlPolicy, clock }),
    builds: buildService,
    sessions,
    fairUse,
  });
  // The analytics API: the same key and access checks as the build API's reads, its own read limit.
  const analyticsReads = config.limits.analyticsReadsPerMinute;
  registerAnalyticsRoutes(http, {
    auth: new ApiKeyAuth(users),
    access: new ProjectAccess(projects),
    accessFacts: new SqliteAccessFactsRepository(db),
    readLimit: new FairUse(clock, { burst: analyticsReads, refillPerSecond: analyticsReads / 60, addressBurst: analyticsReads, addressRefillPerSecond: analyticsReads / 60 }),
    addressLimit: fairUse,
    analytics: new AnalyticsService({
      sessions: sessionsRepo,
      history: new SqliteSessionHistoryRepository(db),
      telemetry: new SqliteTelemetryRepository(db),
      diagnosis: new SqliteTelemetryDiagnosisRepository(db),
      dimensions: new SqliteSessionDimensionsRepository(db),
      logFiles,
      blobs,
    }),
    clock,
    log: log.child({ component: 'analytics' }),
  });
  let publicUrls: PublicUrls | undefined;
  let geoIp: GeoIp | undefined;
  // Agents download build archives over HTTP with links signed by a key kept in the data dir.
  const archiveLinks = new ArchiveLinks({
    key: loadArchiveLinkKey(config.dataDir),
    clock,
    linkTtlSeconds: config.distribution.linkTtlSeconds,
    agentsUrl: () => publicUrls?.agents,
    builds,
    blobs,
  });
  registerAgentArchiveRoutes(http, { links: archiveLinks, workerOfToken: (token) => registry.authenticate(token) });
  const gateway = new ViewerGateway({
    sessions,
    projects,
    registry,
    clock,
    resumeGraceMs: config.viewers.resumeGraceSeconds * 1000,
    limits: {
      perAddress: config.viewers.maxPerAddress,
      queuedPerProject: config.viewers.maxQueuedPerProject,
      sessionsPerMinute: config.viewers.sessionsPerMinute,
      sessionBurst: config.viewers.sessionBurst,
    },
    telemetryUrl: () => `${publicUrls?.platform ?? ''}${TELEMETRY_PATH}`,
    log: log.child({ component: 'gateway' }),
    clientOf: (origin) => clientDimensions(origin, geoIp),
    ...(config.turn ? { turn: config.turn } : {}),
    allowPrivateViewerCandidates: config.network.allowPrivateViewerCandidates,
    // Sockets arrive only once listening, when publicUrls is set.
    shareOrigin: () => (publicUrls ? new URL(publicUrls.share).origin : ''),
  });
  const retention = new RetentionSweep({
    sessions: new SqliteSessionRetentionRepository(db),
    events: eventsRepo,
    commands: workersRepo,
    dimensions: new SqliteSessionDimensionsRepository(db),
    clock,
    log: log.child({ component: 'retention' }),
    sessionDays: config.retention.sessionDays,
    logs: new SqliteLogRetentionRepository(db),
    blobs,
    logDays: config.retention.logDays,
    telemetryDays: config.retention.telemetryDays,
    sweepIntervalMs: config.retention.sweepIntervalMinutes * 60_000,
  });
  let grpc: GrpcServerHandle | undefined;
  let closing: Promise<void> | undefined;

  return {
    config,
    log,
    db,
    blobs,
    archiveLinks,
    adminWatches: admin.watchCounters,
    accounts,
    registry,
    sessions,
    scheduler: sessions.scheduler,
    events,
    gateway,
    http,
    builds: buildService,
    retention,
    reloadTls() {
      // Both sets of files are read and checked before either listener changes.
      if (config.grpc.tls !== undefined) loadServerTls(config.grpc.tls);
      const httpTls = config.http.tls === undefined ? undefined : loadServerTls(config.http.tls, 'http.tls');
      grpc?.reloadTls();
      if (httpTls) (http.server as unknown as TlsServer).setSecureContext(httpTls);
      log.info({ grpc: config.grpc.tls !== undefined, http: httpTls !== undefined }, 'TLS certificates reloaded');
    },
    registerLocalBuild: (projectId) => registerLocalBuild({ builds, projects, events, clock, ids }, projectId),

    async start() {
      // Sessions the previous run left go on; their viewers resume (the gateway holds them meanwhile).
      gateway.holdRestored(sessions.restoreAtStart());
      sessions.armStoredDeadlines(registry.list());
      grpc = await listenOrExplain('grpc', config.grpc.host, config.grpc.port, () =>
        startGrpcServer({
          host: config.grpc.host,
          port: config.grpc.port,
          agentService,
          adminService: admin.implementation,
          tls: config.grpc.tls,
        }),
      );
      for (const listener of insecureListeners(config)) {
        log.warn({ listener }, 'listening in plaintext on an address other machines can reach: tokens cross the network unencrypted (set TLS, see docs/deployment.md "TLS")');
      }
      await registerShareRoutes(http, { gateway, projects });
      // Read before the first viewer can arrive (once per process; config geoip.enabled).
      if (config.geoip.enabled) geoIp = await loadDbIpCity();
      await listenOrExplain('http', config.http.host, config.http.port, () => http.listen({ host: config.http.host, port: config.http.port }));
      const address = http.server.address();
      const httpPort = typeof address === 'object' && address !== null ? address.port : config.http.port;
      const httpHost = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host;
      const httpOrigin = `${config.http.tls === undefined ? 'http' : 'https'}://${httpHost.includes(':') ? `[${httpHost}]` : httpHost}:${httpPort}`;
      registry.start();
      // Builds a previous run left mid-pipeline resume where they stood.
      buildService.pipeline?.resumeUnfinished();
      distribution.resumeAtStart();
      retention.start();
      serving = true;
      const started: StartedControlPlane = {
        httpPort,
        grpcPort: grpc.port,
        httpOrigin,
        grpcAddress: `${config.grpc.host === '0.0.0.0' ? '127.0.0.1' : config.grpc.host}:${grpc.port}`,
        publicUrls: resolvePublicUrls(config, httpOrigin),
      };
      publicUrls = started.publicUrls;
      if (crossesNetworkInPlaintext(publicUrls.agents)) {
        log.warn({ agentsUrl: publicUrls.agents }, 'agents download builds over plain HTTP from another machine (http.insecure): archive links and builds cross the network unencrypted');
      }
      log.info({ httpOrigin, grpcPort: grpc.port, grpcTls: grpc.tls, dataDir: config.dataDir }, 'control plane started');
      return started;
    },

    close() {
      closing ??= (async () => {
        // 1. Stop taking work: health checks fail, no new sessions are placed; a retention sweep
        // stops after its current batch (a few ms) and no other starts.
        serving = false;
        grpc?.health.setStatus('', 'NOT_SERVING');
        await retention.close();
        // 2. Close viewer sockets with 1012 (the pages resume against the next run; no session ends), then HTTP.
        gateway.close();
        // No session is placed, and no timer ends one, from here on: the scheduler and the timers stop
        // (the next run arms the timers again from what is stored).
        sessions.close();
        await http.close();
        // Builds being processed stop where they stand (a download keeps its .part) and resume at the next start.
        await buildService.pipeline?.close();
        // In-flight webhook deliveries finish (each is capped at 10 s) before the database closes.
        await webhooks.idle();
        // 3. End long-lived gRPC streams, then shut gRPC down (graceful, forced after a deadline).
        distribution.close();
        registry.close();
        admin.endWatches();
        await grpc?.shutdown(GRPC_SHUTDOWN_DEADLINE_MS);
        // 4. The database closes last.
        await checkpointer?.close();
        db.close();
        log.info('control plane stopped');
      })();
      return closing;
    },
  };
}
