// A promise-based AdminService client that attaches the admin token to every call.
import { credentials, Metadata, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { adminV1 } from '@pixelfleet/proto';

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

  constructor(server: string, token: string) {
    this.client = new adminV1.AdminServiceClient(server, credentials.createInsecure());
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
