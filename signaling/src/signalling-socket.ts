// What both endpoints share about their `ws` socket: every frame through the rate limit and the
// parser, a rejected frame closes the socket with a code and reason, a peer that stops reading is
// dropped before its unsent backlog grows past a bound, an idempotent close(), and exactly one
// `closed` report however the socket ends (our close, the peer's, a ws error, keepalive).
import { WebSocket, type RawData } from 'ws';
import { CLOSE_CODES, isSendableCloseCode, limitCloseReason } from './close-codes';
import { SignallingUsageError } from './errors';
import { Keepalive, type KeepaliveOptions } from './keepalive';
import { parseSignallingMessage, type MessageFrom, type SenderRole } from './parser';
import { systemClock, type Clock, TokenBucket, type RateLimitOptions } from '@pixelfleet/common';
import { VIEWER_CLOSES } from './viewer-closes';

export interface SignallingSocketHandlers<R extends SenderRole> {
  message(message: MessageFrom<R>): void;
  protocolError(reason: string): void;
  closed(code: number, reason: string): void;
}

export interface SignallingSocketOptions {
  /** Sent as soon as the socket is open (at construction for an accepted socket), before anything else. */
  readonly greeting: readonly OutgoingMessage[];
  readonly maxMessageBytes?: number;
  /** false disables the protocol-level keepalive. */
  readonly keepalive: EndpointKeepaliveOptions | false;
  /** Unsent bytes the socket may hold before the peer counts as not reading (default DEFAULT_MAX_BUFFERED_BYTES). */
  readonly maxBufferedBytes?: number;
  /** Messages the peer may send; false: no limit. */
  readonly rateLimit: RateLimitOptions | false;
  /** Time source of the rate limit, and of the keepalive unless it names its own (default real, unref'd timers). */
  readonly clock?: Clock;
}

/** What may go out on a socket: a JSON object with a string `type`. */
export type OutgoingMessage = { readonly type: string } & object;

/** Keepalive settings an endpoint takes; the endpoint reports the timeout itself, as `closed(1006, 'keepalive timeout')`. */
export type EndpointKeepaliveOptions = Omit<KeepaliveOptions, 'onTimeout'>;

/** The reason `closed` reports when the keepalive gave up on a peer. */
export const KEEPALIVE_TIMEOUT_REASON = 'keepalive timeout';

/**
 * Default bound on a socket's unsent data (ws `bufferedAmount`), 1 MiB: some thousands of
 * signalling messages, which no peer that reads ever leaves behind (an offer is at most 32 KiB).
 */
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;

/** The reason `closed` reports (with 1008) for a peer whose unsent data passed maxBufferedBytes. */
export const NOT_READING_REASON = 'not reading: too much unsent data';

/** The close reason (with 1008) for a peer that sent faster than its rate limit. */
export const TOO_MANY_MESSAGES_REASON = VIEWER_CLOSES.tooManyMessages.reason;

/** 'terminating': the socket is being destroyed for the code and reason that `closed` will report. */
type SocketState = { readonly kind: 'open' } | { readonly kind: 'terminating'; readonly code: number; readonly reason: string } | { readonly kind: 'closed' };

export class SignallingSocket<R extends SenderRole> {
  private state: SocketState = { kind: 'open' };
  private keepalive: Keepalive | undefined;
  private readonly maxBufferedBytes: number;
  private readonly inbound: TokenBucket | undefined;

  constructor(
    private readonly socket: WebSocket,
    private readonly role: R,
    private readonly handlers: SignallingSocketHandlers<R>,
    private readonly options: SignallingSocketOptions,
  ) {
    if (socket.readyState === WebSocket.CONNECTING) throw new SignallingUsageError('wrong_state', 'the socket must be an accepted, open one');
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    if (!(this.maxBufferedBytes > 0)) throw new RangeError('maxBufferedBytes must be positive');
    this.inbound = options.rateLimit === false ? undefined : new TokenBucket(options.rateLimit, options.clock ?? systemClock);
    socket.on('message', (data, isBinary) => this.onFrame(data, isBinary));
    socket.on('close', (code, reason) => {
      // After terminate() ws reports 1006; the owner hears why we ended it.
      if (this.state.kind === 'terminating') this.finish(this.state.code, this.state.reason);
      else this.finish(code, limitCloseReason(reason.toString('utf8')));
    });
    // ws reports bad frames (WS_ERR_*: invalid UTF-8, over maxPayload, bad opcodes) and transport
    // errors here, then closes the socket itself; without a listener the process would crash.
    socket.on('error', (err: Error & { code?: unknown }) => {
      if (this.state.kind !== 'open' || !isFrameError(err)) return;
      this.handlers.protocolError(limitCloseReason(err.message));
      // ws has sent this code in a reasonless close frame; the peer's reply may never be read.
      this.finish(closeCodeOfFrameError(err.code), '');
    });

    // At once, so that the greeting (`config` first) precedes anything the owner sends next.
    if (socket.readyState === WebSocket.OPEN) this.start();
    // Deferred so that the owner can attach its `closed` listener first.
    else queueMicrotask(() => this.finish(CLOSE_CODES.abnormal, 'socket already closed'));
  }

  get isOpen(): boolean {
    return this.state.kind === 'open';
  }

  /**
   * Sends one JSON message; a no-op once closed (the `closed` report has been made) or while
   * terminating. A peer whose unsent data already exceeds maxBufferedBytes is not reading: the
   * message is dropped and the socket terminated, and `closed(1008, NOT_READING_REASON)` follows
   * asynchronously (never from inside this call, so no owner sees its viewer go mid-send).
   */
  send(message: OutgoingMessage): void {
    this.sendFrame(JSON.stringify(message));
  }

  /** send() for a message already written as JSON text (a frame sent again on a resumed socket). */
  sendFrame(frame: string): void {
    if (this.state.kind !== 'open' || this.socket.readyState !== WebSocket.OPEN) return;
    if (this.socket.bufferedAmount > this.maxBufferedBytes) return this.terminate(CLOSE_CODES.policyViolation, NOT_READING_REASON);
    this.socket.send(frame);
  }

  /** Sends a close frame and reports `closed(code, reason)` at once. Idempotent. */
  close(code: number, reason: string): void {
    if (!isSendableCloseCode(code)) throw new SignallingUsageError('invalid_argument', `close code ${code} cannot be sent`);
    if (this.state.kind === 'closed') return;
    // Being terminated already: nothing more can be sent, and the cause stays the one reported.
    if (this.state.kind === 'terminating') return this.finish(this.state.code, this.state.reason);
    const limited = limitCloseReason(reason);
    this.socket.close(code, limited);
    this.finish(code, limited);
  }

  private start(): void {
    if (this.options.keepalive !== false) {
      this.keepalive = new Keepalive(this.socket, {
        ...this.options.keepalive,
        clock: this.options.keepalive.clock ?? this.options.clock ?? systemClock,
        onTimeout: () => this.finish(CLOSE_CODES.abnormal, KEEPALIVE_TIMEOUT_REASON),
      });
    }
    for (const message of this.options.greeting) this.send(message);
  }

  /**
   * Destroys the socket without a close frame; `closed(code, reason)` follows from its close event.
   * Not close(): the close frame would queue behind the backlog the peer is not reading, so it would
   * never arrive, and ws would keep the socket and that backlog for its 30 s closing handshake
   * (`closeTimeout`) — long enough for a few sockets to hold many MiB each. The peer sees the
   * connection drop (1006), as when its network goes away; a peer that is reading never gets here.
   */
  private terminate(code: number, reason: string): void {
    this.state = { kind: 'terminating', code, reason };
    this.keepalive?.stop();
    this.socket.terminate();
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    if (this.state.kind !== 'open') return;
    // Counted before parsing: a frame costs us work (and perhaps a reply) whatever it holds.
    if (this.inbound !== undefined && !this.inbound.take()) {
      this.handlers.protocolError(TOO_MANY_MESSAGES_REASON);
      this.close(CLOSE_CODES.policyViolation, TOO_MANY_MESSAGES_REASON);
      return;
    }
    const parsed = parseSignallingMessage(data, this.role, { binary: isBinary, maxBytes: this.options.maxMessageBytes });
    if (!parsed.ok) {
      this.handlers.protocolError(parsed.reason);
      this.close(parsed.closeCode, parsed.reason);
      return;
    }
    this.handlers.message(parsed.message);
  }

  private finish(code: number, reason: string): void {
    if (this.state.kind === 'closed') return;
    this.state = { kind: 'closed' };
    this.keepalive?.stop();
    this.handlers.closed(code, reason);
  }
}

/**
 * True for a frame ws rejected (its `WS_ERR_*` codes: invalid UTF-8, over maxPayload, too many
 * fragments, bad opcodes): ws has then sent the close code and ends the socket itself, once the
 * close frame is written. Anything else a socket reports is its transport failing, or our bug.
 */
export function isFrameError(err: Error & { code?: unknown }): err is Error & { code: string } {
  return typeof err.code === 'string' && err.code.startsWith('WS_ERR_');
}

/** The close code ws sends for one of its frame errors (ws/lib/receiver.js). */
function closeCodeOfFrameError(code: string): number {
  switch (code) {
    case 'WS_ERR_INVALID_UTF8':
      return CLOSE_CODES.invalidPayload;
    case 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH':
    case 'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH':
      return CLOSE_CODES.messageTooBig;
    case 'WS_ERR_TOO_MANY_BUFFERED_PARTS':
      return CLOSE_CODES.policyViolation;
    default:
      return CLOSE_CODES.protocolError;
  }
}
