// A promise-based AdminService client that attaches the admin token to every call (over TLS
// unless the server is on loopback with no TLS option, see @pixelfleet/common's tls.ts).
import { Metadata, status as grpcStatus, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { adminV1 } from '@pixelfleet/proto';
import { clientChannel, describeTlsFailure, type ClientTlsSettings } from '@pixelfleet/common';

/** Deadline for each unary admin call, in milliseconds. */
export const ADMIN_CALL_TIMEOUT_MS = 10_000;

/** Starts one unary call with the given metadata, options and callback. */
type UnaryInvoker<Res> = (
  client: adminV1.AdminServiceClient,
  metadata: Metadata,
  options: { deadline: Date },
  callback: (err: ServiceError | null, response: Res) => void,
) => unknown;

export class AdminClient {
  private readonly client: adminV1.AdminServiceClient;
  private readonly metadata: Metadata;
  /** How this client dials (for explaining a refused connection). */
  readonly channel: { tls: boolean; clientCert: boolean };

  /** TLS per ClientTlsSettings; throws TlsFileError naming the flag when a file cannot be read. */
  constructor(server: string, token: string, tls: ClientTlsSettings = {}) {
    const channel = clientChannel(server, tls, { caFile: '--ca', certFile: '--cert', keyFile: '--key' });
    this.client = new adminV1.AdminServiceClient(server, channel.credentials, channel.options);
    this.channel = { tls: channel.tls, clientCert: channel.tls && tls.certFile !== undefined };
    this.metadata = new Metadata();
    this.metadata.set('authorization', `Bearer ${token}`);
  }

  /** Runs a unary call with the token and a deadline: `client.call((c, md, o, cb) => c.listWorkers({}, md, o, cb))`. */
  call<Res>(invoke: UnaryInvoker<Res>): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      invoke(this.client, this.metadata, { deadline: new Date(Date.now() + ADMIN_CALL_TIMEOUT_MS) }, (err, res) =>
        err ? reject(err) : resolve(res),
      );
    });
  }

  /** Events after an id (0: only new ones), or every stored event from the first. */
  watchEvents(after: number | 'first'): ClientReadableStream<adminV1.WatchEventsResponse> {
    return this.client.watchEvents(after === 'first' ? { afterEventId: 0, fromStart: true } : { afterEventId: after, fromStart: false }, this.metadata);
  }

  /** The database copy's pieces, then its size and SHA-256 (no deadline: its size is the database's). */
  backup(): ClientReadableStream<adminV1.BackupResponse> {
    return this.client.backup({}, this.metadata);
  }

  close(): void {
    this.client.close();
  }
}

/** A failed call in one line: what to set for a refused TLS handshake, else the gRPC status and its details. */
export function describeGrpcError(err: unknown, channel?: { tls: boolean; clientCert: boolean }): string {
  const e = err as Partial<ServiceError>;
  const tls = typeof e.details === 'string' ? describeTlsFailure(e.details, { caFile: '--ca', serverName: '--server-name', certFile: '--cert/--key' }, channel) : undefined;
  if (tls !== undefined) return `${tls} [${e.details}]`;
  if (typeof e.code === 'number') {
    const name = grpcStatus[e.code] ?? String(e.code);
    return `${name}: ${e.details ?? e.message ?? ''}`;
  }
  return (err as Error).message;
}
