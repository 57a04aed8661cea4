// The gRPC server: AgentService, AdminService, grpc.health.v1 and server reflection (from the
// committed descriptor set), with keepalive settings that detect dead agents.
import { readFileSync } from 'node:fs';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { loadFileDescriptorSetFromBuffer, loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import { adminV1, agentV1, descriptorSetPath } from '@pixelfleet/proto';
import { ReloadableServerCredentials, type ServerTlsFiles } from './server-tls';

/** Largest message either side may send, in bytes (log chunks are at most 1 MiB). */
export const GRPC_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

export interface GrpcServerHandle {
  /** The port actually bound (useful with port 0). */
  port: number;
  health: HealthImplementation;
  /** Whether the listener speaks TLS (grpc.tls set). */
  tls: boolean;
  /** Reads grpc.tls's files again for new connections (SIGHUP); throws, keeping the current ones, when they are unusable. No-op without TLS. */
  reloadTls(): void;
  /** Graceful shutdown, forced after deadlineMs. */
  shutdown(deadlineMs: number): Promise<void>;
}

export async function startGrpcServer(options: {
  host: string;
  port: number;
  agentService: agentV1.AgentServiceServer;
  adminService: adminV1.AdminServiceServer;
  /** Certificate, key and optional client CA (mutual TLS); without it the listener is plaintext. */
  tls?: ServerTlsFiles | undefined;
}): Promise<GrpcServerHandle> {
  // Read first: unusable files refuse the start before anything listens.
  const tlsCredentials = options.tls === undefined ? undefined : new ReloadableServerCredentials(options.tls);
  const server = new Server({
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': GRPC_MAX_MESSAGE_BYTES,
  });
  server.addService(agentV1.AgentServiceService, options.agentService);
  server.addService(adminV1.AdminServiceService, options.adminService);

  const health = new HealthImplementation({
    '': 'SERVING',
    'pixelfleet.agent.v1.AgentService': 'SERVING',
    'pixelfleet.admin.v1.AdminService': 'SERVING',
  });
  health.addToServer(server);

  const ours = loadFileDescriptorSetFromBuffer(readFileSync(descriptorSetPath));
  const healthDefinition = loadSync(healthProtoPath);
  new ReflectionService({ ...ours, ...healthDefinition }).addToServer(server);

  const address = options.host.includes(':') ? `[${options.host}]:${options.port}` : `${options.host}:${options.port}`;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, tlsCredentials ?? ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });

  return {
    port,
    health,
    tls: tlsCredentials !== undefined,
    reloadTls: () => tlsCredentials?.reload(),
    async shutdown(deadlineMs) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, deadlineMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
