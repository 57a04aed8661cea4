// Why the control link cannot connect, when the reason is TLS. Enroll and Connect wait for the
// channel (waitForReady), so a refused handshake never reaches them as an error: they would wait
// in silence. This watches the channel instead: each time it fails to connect, one TLS probe with
// the same settings (probeTls) finds the reason — a wrong CA, an expired certificate, a wrong host
// name, a refused client certificate — and a new reason is logged once, as an error naming the
// setting to fix, and kept for the agent's status until the link is welcomed again.
import { connectivityState, type Client } from '@grpc/grpc-js';
import type { Logger } from 'pino';

export class TlsWatch {
  private reason: string | undefined;
  private probing = false;
  private closed = false;

  constructor(
    private readonly client: Client,
    private readonly probe: () => Promise<string | undefined>,
    private readonly log: Logger,
  ) {
    this.onState();
  }

  /** The last TLS reason the channel could not connect for, until healthy() (undefined: none seen). */
  get failure(): string | undefined {
    return this.reason;
  }

  /** The link was welcomed: the next TLS failure is news again. */
  healthy(): void {
    this.reason = undefined;
  }

  close(): void {
    this.closed = true;
  }

  private onState(): void {
    if (this.closed) return;
    const channel = this.client.getChannel();
    const state = channel.getConnectivityState(false);
    if (state === connectivityState.SHUTDOWN) return;
    if (state === connectivityState.TRANSIENT_FAILURE && !this.probing) {
      this.probing = true;
      // Async wrapper: a probe that throws at once (a TLS file renamed away) is a failed probe, not
      // an exception out of grpc-js's connectivity callback, which would end the agent.
      void (async () => this.probe())().then(
        (reason) => this.settle(reason),
        (err: unknown) => this.settle(undefined, err),
      );
    }
    channel.watchConnectivityState(state, Infinity, () => this.onState());
  }

  private settle(reason: string | undefined, err?: unknown): void {
    this.probing = false;
    if (err !== undefined) this.log.debug({ err: (err as Error).message }, 'TLS probe failed');
    if (this.closed || reason === undefined || reason === this.reason) return;
    this.reason = reason;
    this.log.error(`control link refused: ${reason}`);
  }
}
