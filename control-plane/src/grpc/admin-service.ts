// AdminService handlers for operators. Every call must carry the admin token; the token is
// compared in constant time and never logged.
import { status, type Metadata, type ServerUnaryCall, type ServerWritableStream, type ServiceError, type sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { adminV1 } from '@pixelfleet/proto';
import { secretsEqual } from '../lib/secrets';
import type { PeopleService } from '../people/people-service';
import type { AccountService } from '../accounts/account-service';
import type { WorkerRegistry } from '../workers/registry';
import type { SessionService } from '../sessions/session-service';
import type { SessionRecord } from '../repositories/sessions';
import type { BuildsRepository } from '../repositories/builds';
import type { BuildProgress } from '../builds/build-pipeline';
import type { EventLog } from '../events/event-log';
import type { FleetEvent } from '../repositories/events';
import type { BackupFile } from '../db/online-backup';
import { EventWatch, WatchCounters } from '../events/event-watch';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { invalid } from '../errors';
import { isRegionCode, REGION_CODES } from '@pixelfleet/proto';
import { accessFromProto, buildToProto, eventToProto, sessionToProto, warmPoolToProto, workerToProto } from './admin-mapping';
import { bearerToken, endCallWithError, grpcError, toGrpcError } from './status';
import { TOO_MANY_FAILURES_DETAILS, type CredentialFailures } from './credential-failures';

export interface AdminServiceDeps {
  adminToken: string;
  accounts: AccountService;
  /** Invitations by e-mail (a new user is invited to set a dashboard password). */
  people: Pick<PeopleService, 'invite'>;
  registry: WorkerRegistry;
  sessions: SessionService;
  /** A project's unclaimed warm instances that hold slots, which its session list leaves out (ListSessions adds them). */
  unclaimedWarm: (projectId: string) => SessionRecord[];
  builds: BuildsRepository;
  /** The pipeline's progress of a build it is working on. */
  buildProgress: (uploadId: string) => BuildProgress | undefined;
  events: EventLog;
  /** Consistent copies of the database for Backup (OnlineBackups). */
  backups: { take(): Promise<BackupFile> };
  /** Failed admin-token checks per address, shared with AgentService (credential-failures.ts). */
  credentialFailures: CredentialFailures;
  log: Logger;
}

const newestFirst = (a: SessionRecord, b: SessionRecord): number => b.createdAt - a.createdAt || (a.sessionId < b.sessionId ? 1 : a.sessionId > b.sessionId ? -1 : 0);

const required = (value: string, name: string): string => {
  if (value.trim() === '') throw invalid(`${name} is required`);
  return value;
};

export interface AdminServiceHandle {
  implementation: adminV1.AdminServiceServer;
  /** Ends every open WatchEvents stream (at shutdown, so the gRPC server can drain). */
  endWatches(): void;
  /** What the open WatchEvents streams hold (events read and not yet sent), now and at peak. */
  readonly watchCounters: WatchCounters;
}

/** The database copy is sent in pieces of this many bytes. */
const BACKUP_CHUNK_BYTES = 1024 * 1024;

type WatchCall = ServerWritableStream<adminV1.WatchEventsRequest, adminV1.WatchEventsResponse>;

export function createAdminService(deps: AdminServiceDeps): AdminServiceHandle {
  const { log } = deps;
  const watches = new Map<WatchCall, EventWatch>();
  const watchCounters = new WatchCounters();

  /** undefined when the call carries the admin token; else the error it is answered with (credential-failures.ts). */
  const refusal = (metadata: Metadata, peer: string, method: string): ServiceError | undefined => {
    if (!deps.credentialFailures.mayCheck(peer, { method })) return grpcError(status.RESOURCE_EXHAUSTED, TOO_MANY_FAILURES_DETAILS);
    const token = bearerToken(metadata);
    if (token !== undefined && secretsEqual(token, deps.adminToken)) return undefined;
    deps.credentialFailures.failed(peer, 'admin call refused: missing or invalid admin token', { method });
    return grpcError(status.UNAUTHENTICATED, 'invalid admin token');
  };

  /** Wraps a handler (answering at once or with a promise) with auth and error mapping: a failure, thrown or rejected, is the call's answer. */
  function unary<Req, Res>(method: string, handle: (req: Req) => Res | Promise<Res>) {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
      const refused = refusal(call.metadata, call.getPeer(), method);
      if (refused !== undefined) {
        callback(refused);
        return;
      }
      let answer: Promise<Res>;
      try {
        answer = Promise.resolve(handle(call.request));
      } catch (err) {
        answer = Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
      // One callback either way: a throw inside the success callback must not answer the call twice.
      answer
        .then(
          (res) => callback(null, res),
          (err: unknown) => callback(toGrpcError(err, log, method)),
        )
        .catch((err: unknown) => log.error({ err, method }, 'unexpected error in gRPC handler'));
    };
  }

  const implementation: adminV1.AdminServiceServer = {
    createUser: unary('CreateUser', async (r: adminV1.CreateUserRequest) => {
      const user = await deps.accounts.createUser(required(r.email, 'email'));
      return { userId: user.userId, invitationMailed: (await deps.people.invite(user.email)).invited };
    }),
    issueKey: unary('IssueKey', async (r: adminV1.IssueKeyRequest) => ({ apiKey: await deps.accounts.issueKey(required(r.userId, 'user_id')) })),
    createProject: unary('CreateProject', async (r: adminV1.CreateProjectRequest) => ({
      projectId: (await deps.accounts.createProject(required(r.ownerUserId, 'owner_user_id'), required(r.name, 'name'), required(r.region, 'region'))).projectId,
    })),
    addMember: unary('AddMember', async (r: adminV1.AddMemberRequest) => {
      const projectId = required(r.projectId, 'project_id');
      const access = accessFromProto(r.access);
      if (r.email.trim() === '') {
        const userId = required(r.userId, 'user_id');
        await deps.accounts.addMember(projectId, userId, access);
        return { userId, invitationMailed: false };
      }
      if (r.userId.trim() !== '') throw invalid('give user_id or email, not both');
      // No invitation goes out for a project that does not exist.
      deps.accounts.requireProject(projectId);
      const { user, invited } = await deps.people.invite(r.email);
      await deps.accounts.addMember(projectId, user.userId, access);
      return { userId: user.userId, invitationMailed: invited };
    }),
    removeMember: unary('RemoveMember', (r: adminV1.RemoveMemberRequest) => ({
      removed: deps.accounts.removeMember(required(r.projectId, 'project_id'), required(r.userId, 'user_id')),
    })),
    setSubscriptionStatus: unary('SetSubscriptionStatus', (r: adminV1.SetSubscriptionStatusRequest) => {
      deps.accounts.setSubscriptionStatus(required(r.projectId, 'project_id'), required(r.status, 'status'));
      return {};
    }),
    listWorkers: unary('ListWorkers', () => ({ workers: deps.registry.list().map(workerToProto) })),
    drainWorker: unary('DrainWorker', (r: adminV1.DrainWorkerRequest) => ({ worker: workerToProto(deps.registry.drain(required(r.workerId, 'worker_id'))) })),
    undrainWorker: unary('UndrainWorker', (r: adminV1.UndrainWorkerRequest) => ({
      worker: workerToProto(deps.registry.undrain(required(r.workerId, 'worker_id'))),
    })),
    moveWorker: unary('MoveWorker', (r: adminV1.MoveWorkerRequest) => {
      const workerId = required(r.workerId, 'worker_id');
      const region = required(r.region, 'region');
      const worker = deps.registry.get(workerId);
      // Checked before anything ends: a bad region or a move to where it is ends no session.
      if (!isRegionCode(region)) throw invalid(`region "${region}" is not one of ${REGION_CODES.join(', ')}`);
      const endedSessions = worker.region === region ? 0 : deps.sessions.releaseWorker(workerId);
      return { worker: workerToProto(deps.registry.move(workerId, region)), endedSessions };
    }),
    removeWorker: unary('RemoveWorker', (r: adminV1.RemoveWorkerRequest) => {
      const workerId = required(r.workerId, 'worker_id');
      deps.registry.get(workerId);
      const endedSessions = deps.sessions.releaseWorker(workerId);
      return { worker: workerToProto(deps.registry.remove(workerId)), endedSessions };
    }),
    listSessions: unary('ListSessions', (r: adminV1.ListSessionsRequest) => {
      const limit = r.limit === 0 ? 100 : Math.min(r.limit, 1000);
      if (r.projectId === '') return { sessions: deps.sessions.list({ limit }).map(sessionToProto) };
      // An operator asking why a project's slots are held sees its idle warm instances among its
      // sessions (marked warm_instance), in the same newest-first order.
      const merged = [...deps.sessions.list({ projectId: r.projectId, limit }), ...deps.unclaimedWarm(r.projectId)].sort(newestFirst).slice(0, limit);
      return { sessions: merged.map(sessionToProto) };
    }),
    endSession: unary('EndSession', (r: adminV1.EndSessionRequest) => ({
      session: sessionToProto(deps.sessions.endByOperator(required(r.sessionId, 'session_id'))),
    })),
    getProjectStats: unary('GetProjectStats', (r: adminV1.GetProjectStatsRequest) => {
      const project = deps.accounts.requireProject(required(r.projectId, 'project_id'));
      const { liveUser, queueUser } = deps.sessions.counts(r.projectId);
      const pool = deps.sessions.warmPoolOf(project);
      const hasPool = pool.wanted > 0 || pool.ready + pool.starting + pool.ending > 0 || pool.claims + pool.misses > 0 || pool.stopped !== undefined;
      return { liveUser, queueUser, ...(hasPool ? { warmPool: warmPoolToProto(pool) } : {}) };
    }),
    listBuilds: unary('ListBuilds', async (r: adminV1.ListBuildsRequest) => {
      deps.accounts.requireProject(required(r.projectId, 'project_id'));
      return { builds: (await deps.builds.listByProject(r.projectId)).map((b) => buildToProto(b, deps.buildProgress(b.uploadId))) };
    }),

    watchEvents(call: WatchCall) {
      const refused = refusal(call.metadata, call.getPeer(), 'WatchEvents');
      if (refused !== undefined) {
        endCallWithError(call, refused);
        return;
      }
      const { fromStart, afterEventId } = call.request;
      const after = fromStart ? 0 : afterEventId > 0 ? afterEventId : 'latest';
      const sink = {
        write: (event: FleetEvent, sent: () => void) => call.write({ event: eventToProto(event) }, sent),
        drained: (signal: AbortSignal) => once(call, 'drain', { signal }).then(() => undefined),
      };
      const watch = new EventWatch(deps.events, sink, after, watchCounters, (err) => {
        watches.delete(call);
        endCallWithError(call, toGrpcError(err, log, 'WatchEvents'));
      });
      watches.set(call, watch);
      watch.start();
      const done = () => {
        watch.stop();
        watches.delete(call);
      };
      call.on('cancelled', done);
      call.on('close', done);
      call.on('error', done);
    },

    backup(call: ServerWritableStream<adminV1.BackupRequest, adminV1.BackupResponse>) {
      const refused = refusal(call.metadata, call.getPeer(), 'Backup');
      if (refused !== undefined) {
        endCallWithError(call, refused);
        return;
      }
      void sendBackup(call);
    },
  };

  /**
   * Takes a copy and streams it in 1 MiB pieces, waiting for the client to keep up, then its size
   * and SHA-256. The copy is removed however the call ends. A client that cancels or goes away
   * aborts every wait at once (grpc-js never completes writes on a cancelled call, so a 'drain'
   * would never come); a failed read ends the call with INTERNAL.
   */
  async function sendBackup(call: ServerWritableStream<adminV1.BackupRequest, adminV1.BackupResponse>): Promise<void> {
    // Read now: once the client has gone grpc-js answers "unknown".
    const peer = call.getPeer();
    const gone = new AbortController();
    const abort = () => gone.abort();
    call.once('cancelled', abort);
    call.once('close', abort);
    let file: BackupFile | undefined;
    try {
      file = await deps.backups.take();
      if (call.cancelled) gone.abort();
      gone.signal.throwIfAborted();
      log.info({ bytes: file.bytes, peer }, 'database backup taken; sending it');
      const hash = createHash('sha256');
      let total = 0;
      await pipeline(
        createReadStream(file.path, { highWaterMark: BACKUP_CHUNK_BYTES }),
        // pipeline's own signal: aborted when the client goes or the read fails.
        async (source: AsyncIterable<Buffer>, options?: { signal?: AbortSignal }) => {
          for await (const chunk of source) {
            hash.update(chunk);
            total += chunk.length;
            if (!call.write({ chunk, totalBytes: 0, sha256: '' })) await once(call, 'drain', { signal: options?.signal ?? gone.signal });
          }
        },
        { signal: gone.signal },
      );
      call.write({ chunk: Buffer.alloc(0), totalBytes: total, sha256: hash.digest('hex') });
      call.end();
      log.info({ bytes: total, peer }, 'database backup sent');
    } catch (err) {
      if (gone.signal.aborted) log.warn({ peer }, 'database backup abandoned: the client cancelled or went away; the copy is removed');
      else endCallWithError(call, toGrpcError(err, log, 'Backup'));
    } finally {
      call.off('cancelled', abort);
      call.off('close', abort);
      file?.remove();
    }
  }

  return {
    implementation,
    endWatches() {
      for (const [call, watch] of watches) {
        watch.stop();
        call.end();
      }
      watches.clear();
    },
    watchCounters,
  };
}
