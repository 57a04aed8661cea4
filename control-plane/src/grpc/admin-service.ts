// AdminService handlers for operators. Every call must carry the admin token; the token is
// compared in constant time and never logged.
import { status, type Metadata, type ServerUnaryCall, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { adminV1 } from '@pixelfleet/proto';
import { secretsEqual } from '../lib/secrets';
import type { AccountService } from '../accounts/account-service';
import type { WorkerRegistry } from '../workers/registry';
import type { SessionService } from '../sessions/session-service';
import type { BuildsRepository } from '../repositories/builds';
import type { BuildProgress } from '../builds/build-pipeline';
import type { EventLog } from '../events/event-log';
import type { OnlineBackups } from '../db/online-backup';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { once } from 'node:events';
import { invalid } from '../errors';
import { accessFromProto, buildToProto, eventToProto, sessionToProto, workerToProto } from './admin-mapping';
import { bearerToken, endCallWithError, grpcError, toGrpcError } from './status';

export interface AdminServiceDeps {
  adminToken: string;
  accounts: AccountService;
  registry: WorkerRegistry;
  sessions: SessionService;
  builds: BuildsRepository;
  /** The pipeline's progress of a build it is working on. */
  buildProgress: (uploadId: string) => BuildProgress | undefined;
  events: EventLog;
  /** Consistent copies of the database for Backup. */
  backups: OnlineBackups;
  log: Logger;
}

const required = (value: string, name: string): string => {
  if (value.trim() === '') throw invalid(`${name} is required`);
  return value;
};

export interface AdminServiceHandle {
  implementation: adminV1.AdminServiceServer;
  /** Ends every open WatchEvents stream (at shutdown, so the gRPC server can drain). */
  endWatches(): void;
}

export function createAdminService(deps: AdminServiceDeps): AdminServiceHandle {
  const { log } = deps;
  const watches = new Set<ServerWritableStream<adminV1.WatchEventsRequest, adminV1.WatchEventsResponse>>();

  const authorized = (metadata: Metadata, peer: string, method: string): boolean => {
    const token = bearerToken(metadata);
    const ok = token !== undefined && secretsEqual(token, deps.adminToken);
    if (!ok) log.warn({ peer, method }, 'admin call refused: missing or invalid admin token');
    return ok;
  };

  /** Wraps a synchronous handler with auth and error mapping. */
  function unary<Req, Res>(method: string, handle: (req: Req) => Res) {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
      if (!authorized(call.metadata, call.getPeer(), method)) {
        callback(grpcError(status.UNAUTHENTICATED, 'invalid admin token'));
        return;
      }
      try {
        callback(null, handle(call.request));
      } catch (err) {
        callback(toGrpcError(err, log, method));
      }
    };
  }

  const implementation: adminV1.AdminServiceServer = {
    createUser: unary('CreateUser', (r: adminV1.CreateUserRequest) => ({ userId: deps.accounts.createUser(required(r.email, 'email')).userId })),
    issueKey: unary('IssueKey', (r: adminV1.IssueKeyRequest) => ({ apiKey: deps.accounts.issueKey(required(r.userId, 'user_id')) })),
    createProject: unary('CreateProject', (r: adminV1.CreateProjectRequest) => ({
      projectId: deps.accounts.createProject(required(r.ownerUserId, 'owner_user_id'), required(r.name, 'name'), required(r.region, 'region')).projectId,
    })),
    addMember: unary('AddMember', (r: adminV1.AddMemberRequest) => {
      deps.accounts.addMember(required(r.projectId, 'project_id'), required(r.userId, 'user_id'), accessFromProto(r.access));
      return {};
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
    listSessions: unary('ListSessions', (r: adminV1.ListSessionsRequest) => {
      const limit = r.limit === 0 ? 100 : Math.min(r.limit, 1000);
      const filter = r.projectId === '' ? { limit } : { projectId: r.projectId, limit };
      return { sessions: deps.sessions.list(filter).map(sessionToProto) };
    }),
    endSession: unary('EndSession', (r: adminV1.EndSessionRequest) => ({
      session: sessionToProto(deps.sessions.endByOperator(required(r.sessionId, 'session_id'))),
    })),
    getProjectStats: unary('GetProjectStats', (r: adminV1.GetProjectStatsRequest) => {
      deps.accounts.requireProject(required(r.projectId, 'project_id'));
      const { liveUser, queueUser } = deps.sessions.counts(r.projectId);
      return { liveUser, queueUser };
    }),
    listBuilds: unary('ListBuilds', (r: adminV1.ListBuildsRequest) => {
      deps.accounts.requireProject(required(r.projectId, 'project_id'));
      return { builds: deps.builds.listByProject(r.projectId).map((b) => buildToProto(b, deps.buildProgress(b.uploadId))) };
    }),

    watchEvents(call: ServerWritableStream<adminV1.WatchEventsRequest, adminV1.WatchEventsResponse>) {
      if (!authorized(call.metadata, call.getPeer(), 'WatchEvents')) {
        endCallWithError(call, grpcError(status.UNAUTHENTICATED, 'invalid admin token'));
        return;
      }
      const stop = deps.events.follow(call.request.fromStart ? 'first' : call.request.afterEventId, (event) => {
        call.write({ event: eventToProto(event) });
      });
      watches.add(call);
      const done = () => {
        stop();
        watches.delete(call);
      };
      call.on('cancelled', done);
      call.on('close', done);
      call.on('error', done);
    },

    backup(call: ServerWritableStream<adminV1.BackupRequest, adminV1.BackupResponse>) {
      if (!authorized(call.metadata, call.getPeer(), 'Backup')) {
        endCallWithError(call, grpcError(status.UNAUTHENTICATED, 'invalid admin token'));
        return;
      }
      void sendBackup(call);
    },
  };

  /** Takes a copy, streams it in 1 MiB pieces (waiting for the client to keep up), then its size and SHA-256. */
  async function sendBackup(call: ServerWritableStream<adminV1.BackupRequest, adminV1.BackupResponse>): Promise<void> {
    let file;
    try {
      file = await deps.backups.take();
      log.info({ bytes: file.bytes, peer: call.getPeer() }, 'database backup taken; sending it');
      const hash = createHash('sha256');
      let total = 0;
      const cancelled = once(call, 'cancelled');
      for await (const chunk of createReadStream(file.path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
        if (call.cancelled) return;
        hash.update(chunk);
        total += chunk.length;
        if (!call.write({ chunk, totalBytes: 0, sha256: '' })) await Promise.race([once(call, 'drain'), cancelled]);
      }
      if (call.cancelled) return;
      call.write({ chunk: Buffer.alloc(0), totalBytes: total, sha256: hash.digest('hex') });
      call.end();
    } catch (err) {
      endCallWithError(call, toGrpcError(err, log, 'Backup'));
    } finally {
      file?.remove();
    }
  }

  return {
    implementation,
    endWatches() {
      for (const call of watches) call.end();
      watches.clear();
    },
  };
}
