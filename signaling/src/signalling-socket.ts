// What both endpoints share about their `ws` socket: every frame through the parser, a rejected
// frame closes the socket with the parser's code and reason, an idempotent close(), and exactly
// one `closed` report however the socket ends (our close, the peer's, a ws error, keepalive).
import { WebSocket, type RawData } from 'ws';
import { CLOSE_CODES, isSendableCloseCode, limitCloseReason } from './close-codes';
import { SignallingUsageError } from './errors';
import { Keepalive, type KeepaliveOptions } from './keepalive';
import { parseSignallingMessage, type MessageFrom, type SenderRole } from './parser';

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
}

/** What may go out on a socket: a JSON object with a string `type`. */
export type OutgoingMessage = { readonly type: string } & object;

/** Keepalive settings an endpoint takes; the endpoint reports the timeout itself, as `closed(1006, 'keepalive timeout')`. */
export type EndpointKeepaliveOptions = Omit<KeepaliveOptions, 'onTimeout'>;

/** The reason `closed` reports when the keepalive gave up on a peer. */
export const KEEPALIVE_TIMEOUT_REASON = 'keepalive timeout';

export class SignallingSocket<R extends SenderRole> {
  private state: 'open' | 'closed' = 'open';
  private keepalive: Keepalive | undefined;

  constructor(
    private readonly socket: WebSocket,
    private readonly role: R,
    private readonly handlers: SignallingSocketHandlers<R>,
    private readonly options: SignallingSocketOptions,
  ) {
    if (socket.readyState === WebSocket.CONNECTING) throw new SignallingUsageError('wrong_state', 'the socket must be an accepted, open one');
    socket.on('message', (data, isBinary) => this.onFrame(data, isBinary));
    socket.on('close', (code, reason) => this.finish(code, limitCloseReason(reason.toString('utf8'))));
    // ws reports bad frames (WS_ERR_*: invalid UTF-8, over maxPayload, bad opcodes) and transport
    // errors here, then closes the socket itself; without a listener the process would crash.
    socket.on('error', (err: Error & { code?: unknown }) => {
      if (this.state !== 'open' || typeof err.code !== 'string' || !err.code.startsWith('WS_ERR_')) return;
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
    return this.state === 'open';
  }

  /** Sends one JSON message; a no-op once closed (the `closed` report has been made). */
  send(message: OutgoingMessage): void {
    if (this.state !== 'open' || this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(JSON.stringify(message));
  }

  /** Sends a close frame and reports `closed(code, reason)` at once. Idempotent. */
  close(code: number, reason: string): void {
    if (!isSendableCloseCode(code)) throw new SignallingUsageError('invalid_argument', `close code ${code} cannot be sent`);
    if (this.state === 'closed') return;
    const limited = limitCloseReason(reason);
    this.socket.close(code, limited);
    this.finish(code, limited);
  }

  private start(): void {
    if (this.options.keepalive !== false) {
      this.keepalive = new Keepalive(this.socket, {
        ...this.options.keepalive,
        onTimeout: () => this.finish(CLOSE_CODES.abnormal, KEEPALIVE_TIMEOUT_REASON),
      });
    }
    for (const message of this.options.greeting) this.send(message);
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    if (this.state !== 'open') return;
    const parsed = parseSignallingMessage(data, this.role, { binary: isBinary, maxBytes: this.options.maxMessageBytes });
    if (!parsed.ok) {
      this.handlers.protocolError(parsed.reason);
      this.close(parsed.closeCode, parsed.reason);
      return;
    }
    this.handlers.message(parsed.message);
  }

  private finish(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.keepalive?.stop();
    this.handlers.closed(code, reason);
  }
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
