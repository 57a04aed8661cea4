// The sessions wing of the control plane: the session lifecycle with its lines, scheduler and
// timers, the viewer gateway (the share page's signalling socket), and the engine logs agents
// upload for their sessions. app.ts builds it and names its close steps in the one shutdown order.
import type { Logger } from 'pino';
import type { Clock } from '@pixelfleet/common';
import type { ControlPlaneConfig } from '../config';
import type { IdSource } from '../lib/ids';
import type { BlobStore } from '../blobs/blob-store';
import type { EventLog } from '../events/event-log';
import type { WorkerRegistry } from '../workers/registry';
import type { Repositories } from '../store/store';
import type { ClientDimensions } from '../repositories/session-dimensions';
import type { ViewerOrigin } from '../enrichment/client-dimensions';
import { SessionService } from '../sessions/session-service';
import { LogUploads } from '../sessions/log-uploads';
import { QueueWaitEstimator } from '../sessions/queue-wait';
import { ViewerGateway } from '../share/viewer-gateway';

export interface SessionsWingInput {
  config: ControlPlaneConfig;
  clock: Clock;
  ids: IdSource;
  log: Logger;
  events: EventLog;
  registry: WorkerRegistry;
  /** Sessions, their engine logs and diagnoses (the relay's witness of video shown), and builds whose warm instances keep failing. */
  store: Pick<Repositories, 'projects' | 'sessions' | 'logFiles' | 'diagnoses' | 'warmFailures'>;
  blobs: BlobStore;
  /** True when the worker may run sessions of that live build (the builds wing's distribution). */
  canRunBuild: (workerId: string, uploadId: string) => boolean;
  /** Where the page posts its telemetry, once the HTTP server listens. */
  telemetryUrl: () => string;
  /** The share page's own origin, once the HTTP server listens (sockets arrive only then). */
  shareOrigin: () => string;
  /** What a viewer's address and browser tell (GeoIP, once loaded). */
  clientOf: (origin: ViewerOrigin) => ClientDimensions;
}

export interface SessionsWing {
  readonly sessions: SessionService;
  readonly gateway: ViewerGateway;
  readonly logUploads: LogUploads;
}

export function buildSessionsWing(input: SessionsWingInput): SessionsWing {
  const { config, clock, ids, log, events, registry, blobs } = input;
  const { projects, sessions: sessionsRepo, logFiles } = input.store;
  const sessions = new SessionService({
    repo: sessionsRepo,
    projects,
    registry,
    events,
    clock,
    ids,
    log: log.child({ component: 'sessions' }),
    canRunBuild: input.canRunBuild,
    diagnoses: input.store.diagnoses,
    warmFailures: input.store.warmFailures,
    connectTimeoutMs: config.sessions.connectTimeoutSeconds * 1000,
    resumeGraceMs: config.viewers.resumeGraceSeconds * 1000,
  });
  // What the region's sessions did lately, for each queued viewer's estimated wait.
  const queueWait = new QueueWaitEstimator(clock, (region) => sessionsRepo.slotHoldersOfRegion(region));
  queueWait.follow(sessions);
  const gateway = new ViewerGateway({
    sessions,
    queueWait,
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
    telemetryUrl: input.telemetryUrl,
    log: log.child({ component: 'gateway' }),
    clientOf: input.clientOf,
    ...(config.turn ? { turn: config.turn } : {}),
    allowPrivateViewerCandidates: config.network.allowPrivateViewerCandidates,
    shareOrigin: input.shareOrigin,
  });
  return { sessions, gateway, logUploads: new LogUploads(sessionsRepo, logFiles, blobs, clock, ids) };
}
