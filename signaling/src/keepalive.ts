// Server-side liveness for one accepted `ws` socket: a protocol-level ping every intervalMs, and
// terminate() when no pong follows within timeoutMs. Browsers and Unreal answer pings on their own.
// (JSON `ping` → `pong` is the endpoints' job, not this one.)
import { randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import { systemClock, type TimerHandle, type Clock } from '@pixelfleet/common';

export interface KeepaliveOptions {
  /** Time between pings in ms (default 15000). */
  readonly intervalMs?: number;
  /** How long a ping may go unanswered before the socket is terminated, in ms (default 10000). */
  readonly timeoutMs?: number;
  /** Timer source (default real, unref'd timers). */
  readonly clock?: Clock;
  /** Called just before a dead socket is terminated. */
  readonly onTimeout?: () => void;
}

export const DEFAULT_KEEPALIVE_INTERVAL_MS = 15_000;
export const DEFAULT_KEEPALIVE_TIMEOUT_MS = 10_000;

/** Bytes of the random payload of each ping (a pong must echo it, RFC 6455 §5.5.3). */
const PING_NONCE_BYTES = 8;

/**
 * Starts on construction; stops by itself when the socket closes, or on stop().
 *
 * Only the pong that echoes the outstanding ping's random payload proves the peer alive. RFC 6455
 * allows unsolicited pongs, and a peer can send them without reading anything: if any pong counted,
 * a client that never reads (so that everything sent to it piles up in our memory) would never be
 * dropped. The payload is unguessable, so only a peer that read the ping can answer it.
 */
export class Keepalive {
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly onTimeout: (() => void) | undefined;
  private interval: TimerHandle | undefined;
  /** Set while a ping awaits its pong, with the payload that pong must carry. */
  private outstanding: { readonly deadline: TimerHandle; readonly nonce: Buffer } | undefined;
  private readonly onPong = (data: Buffer): void => {
    if (this.outstanding?.nonce.equals(data)) this.clearDeadline();
  };
  private readonly onClose = (): void => this.stop();

  constructor(
    private readonly socket: WebSocket,
    options: KeepaliveOptions = {},
  ) {
    const intervalMs = options.intervalMs ?? DEFAULT_KEEPALIVE_INTERVAL_MS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_KEEPALIVE_TIMEOUT_MS;
    if (!(intervalMs > 0) || !(this.timeoutMs > 0)) throw new RangeError('keepalive intervalMs and timeoutMs must be positive');
    this.clock = options.clock ?? systemClock;
    this.onTimeout = options.onTimeout;
    if (socket.readyState === WebSocket.CLOSING || socket.readyState === WebSocket.CLOSED) return;
    socket.on('pong', this.onPong);
    socket.once('close', this.onClose);
    this.interval = this.clock.setInterval(() => this.tick(), intervalMs);
  }

  /** Idempotent. */
  stop(): void {
    this.interval?.cancel();
    this.interval = undefined;
    this.clearDeadline();
    this.socket.off('pong', this.onPong);
    this.socket.off('close', this.onClose);
  }

  private tick(): void {
    // A ping still awaiting its pong has its own deadline; don't stack another.
    if (this.outstanding !== undefined || this.socket.readyState !== WebSocket.OPEN) return;
    const nonce = randomBytes(PING_NONCE_BYTES);
    this.outstanding = { deadline: this.clock.setTimeout(() => this.expire(), this.timeoutMs), nonce };
    this.socket.ping(nonce);
  }

  private expire(): void {
    this.outstanding = undefined;
    this.stop();
    this.onTimeout?.();
    this.socket.terminate();
  }

  private clearDeadline(): void {
    this.outstanding?.deadline.cancel();
    this.outstanding = undefined;
  }
}
