// The composition root: builds every part of the control plane from one parsed config and
// returns { start(), close() }. The shared core (database, repositories, event log, accounts, the
// worker registry) is made here; each wing is built by its own builder (wings/: builds, sessions,
// and the edges where callers come in), and close() runs one ordered list of their steps.
// main.ts only reads flags and env, calls this and wires signals; tests build the same app on port 0.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { crossesNetworkInPlaintext, systemClock, type Clock, createLogger } from '@pixelfleet/common';
import { insecureListeners, resolvePublicUrls, type ControlPlaneConfig, type PublicUrls } from './config';
import { randomIds, type IdSource } from './lib/ids';
import { listenOrExplain } from './lib/listen-error';
import type { Db } from './db/database';
import type { Store } from './store/store';
import { openSqliteStore } from './store/sqlite-store';
import type { BlobStore } from './blobs/blob-store';
import { blobStoreWhere, checkBlobStore, openBlobStore } from './blobs/open-blob-store';
import { EventLog } from './events/event-log';
import type { WatchCounters } from './events/event-watch';
import { AccountService } from './accounts/account-service';
import { WorkerRegistry } from './workers/registry';
import type { SessionService } from './sessions/session-service';
import type { Scheduler } from './sessions/scheduler';
import type { ViewerGateway } from './share/viewer-gateway';
import { registerShareRoutes } from './share/share-routes';
import type { BuildService } from './builds/build-service';
import type { ArchiveLinks } from './builds/archive-links';
import { registerLocalBuild } from './builds/local-build';
import { startGrpcServer, type GrpcServerHandle } from './grpc/server';
import { loadServerTls } from './grpc/server-tls';
import { TELEMETRY_PATH } from './http/telemetry-routes';
import { RetentionSweep } from './retention/retention-sweep';
import { MailDelivery } from './mail/mail-delivery';
import { smtpTransport } from './mail/smtp-transport';
import { outboxFolderTransport } from './mail/outbox-folder-transport';
import { PeopleService } from './people/people-service';
import { registerDashboardAuthRoutes } from './http/dashboard/dashboard-auth-routes';
import { registerDashboardCompression } from './http/dashboard/dashboard-compression';
import { registerDashboardPageRoutes } from './http/dashboard/dashboard-page-routes';
import { DashboardProjectAccess, registerDashboardProjectRoutes } from './http/dashboard/dashboard-project-routes';
import { registerDashboardSessionRoutes } from './http/dashboard/dashboard-session-routes';
import { registerDashboardTeamRoutes } from './http/dashboard/dashboard-team-routes';
import { registerDashboardFleetRoutes } from './http/dashboard/dashboard-fleet-routes';
import { registerDashboardRoutes } from './http/dashboard/dashboard-routes';
import { clientDimensions } from './enrichment/client-dimensions';
import { loadDbIpCity, type GeoIp } from './enrichment/geoip';
import type { HostResolver } from './webhooks/url-policy';
import { buildBuildsWing } from './wings/builds-wing';
import { buildSessionsWing } from './wings/sessions-wing';
import { buildEdges } from './wings/edges';

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
  /** Mail to people, stored and sent in the background (SMTP, or the outbox folder without it). */
  readonly mail: MailDelivery;
  /** People: invitations, passwords and dashboard sign-ins. */
  readonly people: PeopleService;
  /** Makes an archive-less Approved build live (local demos and tests; see builds/local-build.ts). */
  registerLocalBuild(projectId: string): Promise<string>;
  start(): Promise<StartedControlPlane>;
  /**
   * Reads grpc.tls's and http.tls's files again (SIGHUP): new connections get the new certificates,
   * the listeners stay open. Throws ServerTlsError naming the key, keeping the current ones, if unusable.
   */
  reloadTls(): void;
  /** Shuts down in order; idempotent. */
  close(): Promise<void>;
}

/** How long gRPC calls may take to finish at shutdown before they are cut. */
const GRPC_SHUTDOWN_DEADLINE_MS = 5_000;

/** The app and its raw database handle, for tests and benches that seed or read rows (`@pixelfleet/control-plane/test-support`). */
export interface ControlPlaneWithDb extends ControlPlane {
  /** Every repository, as the services use them (tests seed rows and read them back through these). */
  readonly store: Store;
  /** The SQLite connection under the store (tests that read tables directly). */
  readonly db: Db;
  /** The blob store (tests seed archives) and the archive link issuer (tests issue agents' links). */
  readonly blobs: BlobStore;
  readonly archiveLinks: ArchiveLinks;
  /** What the admin WatchEvents streams hold (events read and not yet sent), now and at peak. */
  readonly adminWatches: WatchCounters;
}

export function buildControlPlane(config: ControlPlaneConfig, deps: ControlPlaneDeps = {}): ControlPlane {
  // The raw handle stays out of production's reach, at run time too, not only in the type.
  const { store: _store, db: _db, blobs: _blobs, archiveLinks: _archiveLinks, adminWatches: _adminWatches, ...app } = buildControlPlaneWithDb(config, deps);
  return app;
}

export function buildControlPlaneWithDb(config: ControlPlaneConfig, deps: ControlPlaneDeps = {}): ControlPlaneWithDb {
  const clock = deps.clock ?? systemClock;
  const ids = deps.ids ?? randomIds;
  const log = deps.logger ?? createLogger(config.logLevel);
  // Created for the service's account alone (a folder that exists keeps the modes its operator gave it).
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = openSqliteStore(config.dataDir, log.child({ component: 'db' }));
  const { users, projects, builds } = store;
  const blobsLog = log.child({ component: 'blobs' });
  const blobs = openBlobStore(config, blobsLog);

  const events = new EventLog(store.events, clock, log.child({ component: 'events' }));
  const accounts = new AccountService(users, projects, events, clock, ids);
  const registry = new WorkerRegistry(store.workers, events, clock, ids, log.child({ component: 'workers' }), {
    heartbeatIntervalMs: config.workers.heartbeatIntervalSeconds * 1000,
    leaseTtlMs: config.workers.leaseSeconds * 1000,
    lostGraceMs: config.workers.lostGraceSeconds * 1000,
  });
  // Set once the HTTP server listens (start()); read by closures that run only after that.
  let publicUrls: PublicUrls | undefined;
  let geoIp: GeoIp | undefined;
  let serving = false;

  // Mail to people, and the people it goes to (invitations, passwords, dashboard sign-ins).
  const mailLog = log.child({ component: 'mail' });
  const mail = new MailDelivery({
    outbox: store.mailOutbox,
    transport: config.mail.smtp !== undefined ? smtpTransport(config.mail.smtp.url) : outboxFolderTransport(config.mail.outboxDir ?? join(config.dataDir, 'outbox'), mailLog),
    from: config.mail.from,
    clock,
    log: mailLog,
  });
  const people = new PeopleService({
    users,
    signIns: store.signIns,
    accounts,
    mail,
    events,
    clock,
    log: log.child({ component: 'people' }),
    dashboardUrl: () => publicUrls?.dashboard ?? '',
  });

  // The wings call each other by name through closures that run long after construction: a build
  // going live asks the scheduler to run, and the scheduler asks the distribution which workers
  // hold a build.
  const buildsWing = buildBuildsWing({
    config,
    store,
    clock,
    ids,
    log,
    events,
    registry,
    blobs,
    resolveHost: deps.resolveHost,
    withoutPipeline: deps.withoutPipeline,
    requestScheduling: () => sessionsWing.sessions.scheduler.requestRun(),
    agentsUrl: () => publicUrls?.agents,
  });
  const sessionsWing = buildSessionsWing({
    config,
    clock,
    ids,
    log,
    events,
    registry,
    store,
    blobs,
    canRunBuild: (workerId, uploadId) => buildsWing.distribution.canRun(workerId, uploadId),
    telemetryUrl: () => `${publicUrls?.platform ?? ''}${TELEMETRY_PATH}`,
    shareOrigin: () => (publicUrls ? new URL(publicUrls.share).origin : ''),
    clientOf: (origin) => clientDimensions(origin, geoIp),
  });
  const { http, agentService, admin, fairUse, dashboard } = buildEdges({
    config,
    store,
    clock,
    log,
    events,
    accounts,
    people,
    registry,
    blobs,
    buildsWing,
    sessionsWing,
    isServing: () => serving,
  });
  const { sessions, gateway } = sessionsWing;
  const { buildService, distribution, archiveLinks, webhooks } = buildsWing;
  const retention = new RetentionSweep({
    sessions: store.sessionRetention,
    events: store.events,
    commands: store.workers,
    dimensions: store.sessionDimensions,
    daily: store.sessionDaily,
    clock,
    log: log.child({ component: 'retention' }),
    sessionDays: config.retention.sessionDays,
    logs: store.logRetention,
    blobs,
    logDays: config.retention.logDays,
    telemetryDays: config.retention.telemetryDays,
    people: store.peopleRetention,
    sweepIntervalMs: config.retention.sweepIntervalMinutes * 60_000,
  });
  let grpc: GrpcServerHandle | undefined;
  let closing: Promise<void> | undefined;
  /** The one shutdown order, each wing's steps named where they fall. */
  const shutdownSteps: readonly (readonly [string, () => void | Promise<void>])[] = [
    // 1. Stop taking work: health checks fail, no new sessions are placed; a retention sweep stops
    // after its current batch (a few ms) and no other starts.
    ['stop serving', () => {
      serving = false;
      grpc?.health.setStatus('', 'NOT_SERVING');
    }],
    ['retention', () => retention.close()],
    // 2. Close viewer sockets with 1012 (the pages resume against the next run; no session ends), then HTTP.
    ['viewer sockets', () => gateway.close()],
    // No session is placed, and no timer ends one, from here on: the scheduler and the timers stop
    // (the next run arms the timers again from what is stored).
    ['sessions', () => sessions.close()],
    ['http', () => http.close()],
    // Builds being processed stop where they stand (a download keeps its .part, an upload to object
    // storage its parts) and resume at the next start: the pipeline's builds are aborted first, then
    // the store's requests, so a save cut short counts as stopped, not failed.
    ['build pipeline', async () => {
      const stopped = buildService.pipeline?.close();
      blobs.close();
      await stopped;
    }],
    // The mail being sent finishes; pending mail waits in the outbox for the next run.
    ['mail', () => mail.close()],
    // 3. End long-lived gRPC streams, then shut gRPC down (graceful, forced after a deadline). The
    // distribution closes once the worker streams are gone: no ack or Hello can start work after it.
    ['worker streams', () => registry.close()],
    ['distribution', () => distribution.close()],
    // In-flight webhook deliveries finish (each is capped at 10 s) before the database closes; after
    // the distribution, whose last settlements may fire build.approved or build.rejected.
    ['webhooks', () => webhooks.idle()],
    ['admin watches', () => admin.endWatches()],
    ['grpc', () => grpc?.shutdown(GRPC_SHUTDOWN_DEADLINE_MS)],
    // 4. The database closes last.
    ['database', () => store.close()],
  ];

  return {
    config,
    log,
    store,
    db: store.db,
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
    mail,
    people,
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
      // After the restore: the pools count the instances the last run left before launching any.
      sessions.startWarmPools();
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
      // The dashboard in a scope of its own, so that what it sends (its bundle, pages of JSON up to
      // a few hundred KB) goes gzipped to browsers that accept it, while the REST API, the share
      // page and the viewers' sockets answer as they always have.
      await http.register(async (scope) => {
        registerDashboardCompression(scope);
        const guards = await registerDashboardAuthRoutes(scope, { people, fairUse, dashboardUrl: () => publicUrls?.dashboard ?? '' });
        registerDashboardRoutes(scope, { guards, people, projects, sessions, shareUrl: () => publicUrls?.share ?? '' });
        const projectAccess = new DashboardProjectAccess({ guards, access: dashboard.access, accessFacts: dashboard.accessFacts, projects: dashboard.projects });
        registerDashboardProjectRoutes(scope, { guards, projectAccess, projects: dashboard.projects, builds: dashboard.builds, deliveries: dashboard.deliveries });
        registerDashboardSessionRoutes(scope, { guards, projectAccess, analytics: dashboard.analytics, sessions });
        registerDashboardTeamRoutes(scope, { guards, projectAccess, accounts, people, projects });
        registerDashboardFleetRoutes(scope, { guards, people, registry, adminToken: config.adminToken, clock });
        registerDashboardPageRoutes(scope, { guards, dashboardUrl: () => publicUrls?.dashboard ?? '' });
      });
      // Read before the first viewer can arrive (once per process; config geoip.enabled).
      if (config.geoip.enabled) geoIp = await loadDbIpCity();
      await listenOrExplain('http', config.http.host, config.http.port, () => http.listen({ host: config.http.host, port: config.http.port }));
      const address = http.server.address();
      const httpPort = typeof address === 'object' && address !== null ? address.port : config.http.port;
      const httpHost = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host;
      const httpOrigin = `${config.http.tls === undefined ? 'http' : 'https'}://${httpHost.includes(':') ? `[${httpHost}]` : httpHost}:${httpPort}`;
      registry.start();
      // Builds a previous run left mid-pipeline resume where they stood.
      await buildService.pipeline?.resumeUnfinished();
      await distribution.resumeAtStart();
      retention.start();
      void checkBlobStore(blobs, blobStoreWhere(config), blobsLog);
      if (config.blobs.s3?.endpoint !== undefined && crossesNetworkInPlaintext(config.blobs.s3.endpoint)) {
        blobsLog.warn({ endpoint: config.blobs.s3.endpoint }, 'object storage over plain HTTP to another machine (blobs.s3.insecure): build archives, engine logs and presigned links cross the network unencrypted');
      }
      mail.start();
      mailLog.info({ destination: mail.destination }, 'mail delivery started');
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
      log.info({ httpOrigin, grpcPort: grpc.port, grpcTls: grpc.tls, dataDir: config.dataDir, blobs: blobStoreWhere(config) }, 'control plane started');
      return started;
    },

    close() {
      closing ??= (async () => {
        for (const [, step] of shutdownSteps) await step();
        log.info('control plane stopped');
      })();
      return closing;
    },
  };
}
