// AgentService handlers: Enroll (join token → worker identity), Connect (the agent's control
// stream) and UploadSessionLogs. Tokens are never logged; a bad one is UNAUTHENTICATED.
import { status, type ServiceError, type ServerDuplexStream, type ServerReadableStream, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { agentV1 } from '@pixelfleet/proto';
import type { Clock, TimerHandle } from '@pixelfleet/common';
import { secretsEqual } from '../lib/secrets';
import type { WorkerRegistry } from '../workers/registry';
import type { LogUploads } from '../sessions/log-uploads';
import { AgentProtocolError, fromAgentProto, helloFromProto, logUploadParts, toAgentProto } from './agent-mapping';
import { bearerToken, endCallWithError, grpcError, toGrpcError } from './status';
import { TOO_MANY_FAILURES_DETAILS, type CredentialFailures } from './credential-failures';

export interface AgentServiceDeps {
  registry: WorkerRegistry;
  logUploads: LogUploads;
  joinToken: string;
  clock: Clock;
  log: Logger;
  /** Failed token checks per address, shared with AdminService (credential-failures.ts). */
  credentialFailures: CredentialFailures;
  /** How long a new stream may stay silent before its Hello; default 10 s. */
  helloTimeoutMs?: number;
}

export function createAgentService(deps: AgentServiceDeps): agentV1.AgentServiceServer {
  const { registry, log } = deps;

  /** The worker whose token the call carries, or the error it is answered with (credential-failures.ts). */
  const authenticateWorker = (metadata: ServerUnaryCall<unknown, unknown>['metadata'], peer: string, method: string): { workerId: string } | { refused: ServiceError } => {
    if (!deps.credentialFailures.mayCheck(peer, { method })) return { refused: grpcError(status.RESOURCE_EXHAUSTED, TOO_MANY_FAILURES_DETAILS) };
    const token = bearerToken(metadata);
    const workerId = token === undefined ? undefined : registry.authenticate(token);
    if (workerId !== undefined) return { workerId };
    deps.credentialFailures.failed(peer, 'refused: missing or invalid worker token', { method });
    return { refused: grpcError(status.UNAUTHENTICATED, 'invalid worker token') };
  };

  return {
    enroll(call: ServerUnaryCall<agentV1.EnrollRequest, agentV1.EnrollResponse>, callback: sendUnaryData<agentV1.EnrollResponse>) {
      const peer = call.getPeer();
      if (!deps.credentialFailures.mayCheck(peer, { method: 'Enroll' })) {
        callback(grpcError(status.RESOURCE_EXHAUSTED, TOO_MANY_FAILURES_DETAILS));
        return;
      }
      const token = bearerToken(call.metadata);
      if (token === undefined || !secretsEqual(token, deps.joinToken)) {
        deps.credentialFailures.failed(peer, 'Enroll refused: missing or invalid join token', { method: 'Enroll' });
        callback(grpcError(status.UNAUTHENTICATED, 'invalid join token'));
        return;
      }
      try {
        const r = call.request;
        callback(null, registry.enroll({ hostname: r.hostname, region: r.region, slots: r.slots, agentVersion: r.agentVersion }));
      } catch (err) {
        callback(toGrpcError(err, log, 'Enroll'));
      }
    },

    connect(call: ServerDuplexStream<agentV1.ConnectRequest, agentV1.ConnectResponse>) {
      const auth = authenticateWorker(call.metadata, call.getPeer(), 'Connect');
      if ('refused' in auth) {
        endCallWithError(call, auth.refused);
        return;
      }
      const { workerId } = auth;
      const slog = log.child({ workerId });
      let epoch: number | undefined;
      let finished = false;
      let helloTimer: TimerHandle | undefined = deps.clock.setTimeout(() => {
        fail(grpcError(status.DEADLINE_EXCEEDED, 'no Hello received'));
      }, deps.helloTimeoutMs ?? 10_000);

      const finish = () => {
        if (finished) return;
        finished = true;
        helloTimer?.cancel();
        if (epoch !== undefined) registry.streamClosed(workerId, epoch);
      };
      const fail = (err: ServiceError) => {
        if (finished) return;
        finish();
        endCallWithError(call, err);
      };

      call.on('data', (m: agentV1.ConnectRequest) => {
        if (finished) return;
        try {
          if (epoch === undefined) {
            if (m.msg?.$case !== 'hello') throw new AgentProtocolError('the first message must be a Hello');
            helloTimer?.cancel();
            helloTimer = undefined;
            epoch = registry.acceptHello(workerId, helloFromProto(m.msg.value), {
              peer: call.getPeer(),
              send: (out) => {
                if (!finished) call.write(toAgentProto(out));
              },
              end: (reason) => {
                slog.info({ reason }, 'ending agent stream');
                fail(grpcError(status.ABORTED, reason));
              },
            });
            return;
          }
          const msg = fromAgentProto(m);
          switch (msg.type) {
            case 'heartbeat':
              registry.heartbeat(workerId, epoch, msg.activity);
              break;
            case 'ack':
              registry.ack(workerId, epoch, msg.ack);
              break;
            case 'sessionEvent':
              registry.sessionEvent(workerId, epoch, msg.event);
              break;
            case 'signal':
              registry.signalFromAgent(workerId, epoch, msg.signal);
              break;
            default: {
              const unreachable: never = msg;
              throw new AgentProtocolError(`unknown message ${String(unreachable)}`);
            }
          }
        } catch (err) {
          if (err instanceof AgentProtocolError) {
            slog.warn({ reason: err.message }, 'agent protocol error; ending stream');
            fail(grpcError(status.INVALID_ARGUMENT, err.message));
          } else {
            fail(toGrpcError(err, slog, 'Connect'));
          }
        }
      });
      call.on('end', () => {
        finish();
        call.end();
      });
      call.on('cancelled', finish);
      call.on('error', finish);
      call.on('close', finish);
    },

    uploadSessionLogs(
      call: ServerReadableStream<agentV1.UploadSessionLogsRequest, agentV1.UploadSessionLogsResponse>,
      callback: sendUnaryData<agentV1.UploadSessionLogsResponse>,
    ) {
      const auth = authenticateWorker(call.metadata, call.getPeer(), 'UploadSessionLogs');
      if ('refused' in auth) {
        callback(auth.refused);
        return;
      }
      const { workerId } = auth;
      deps.logUploads.receive(workerId, logUploadParts(call)).then(
        (stored) => callback(null, { logFileId: stored.logFileId, gzSize: stored.gzSize }),
        (err: unknown) =>
          callback(err instanceof AgentProtocolError ? grpcError(status.INVALID_ARGUMENT, err.message) : toGrpcError(err, log, 'UploadSessionLogs')),
      );
    },
  };
}
