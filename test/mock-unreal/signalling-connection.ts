// The streamer's end of the Pixel Streaming signalling socket (design/pixel-streaming.md §1):
// JSON text frames with a `type`, parsed at the edge with zod into typed messages; keep-alive
// pings like PS2's SignalingKeepAliveInterval.
import WebSocket from 'ws';
import { z } from 'zod';

const playerId = z.union([z.string().min(1), z.number()]).transform(String);

const serverMessageSchemas = {
  config: z.object({ type: z.literal('config'), peerConnectionOptions: z.unknown().optional(), protocolVersion: z.string().optional() }),
  identify: z.object({ type: z.literal('identify') }),
  endpointIdConfirm: z.object({ type: z.literal('endpointIdConfirm'), committedId: z.string() }),
  playerConnected: z.object({
    type: z.literal('playerConnected'),
    playerId,
    dataChannel: z.boolean().optional(),
    sfu: z.boolean().optional(),
  }),
  playerDisconnected: z.object({ type: z.literal('playerDisconnected'), playerId }),
  answer: z.object({
    type: z.literal('answer'),
    playerId,
    sdp: z.string().min(1),
    minBitrateBps: z.number().optional(),
    maxBitrateBps: z.number().optional(),
  }),
  iceCandidate: z.object({
    type: z.literal('iceCandidate'),
    playerId,
    candidate: z.object({
      candidate: z.string(),
      sdpMid: z.string().nullish(),
      sdpMLineIndex: z.number().int().nullish(),
      usernameFragment: z.string().nullish(),
    }),
  }),
  ping: z.object({ type: z.literal('ping'), time: z.number().optional() }),
  pong: z.object({ type: z.literal('pong'), time: z.number().optional() }),
} as const;

export type ServerMessage = z.infer<(typeof serverMessageSchemas)[keyof typeof serverMessageSchemas]>;

export interface IceCandidateInit {
  readonly candidate: string;
  readonly sdpMid: string | undefined;
  readonly sdpMLineIndex: number | undefined;
}

export type StreamerMessage =
  | { readonly type: 'endpointId'; readonly id: string; readonly protocolVersion: string }
  | { readonly type: 'offer'; readonly playerId: string; readonly sdp: string }
  | { readonly type: 'iceCandidate'; readonly playerId: string; readonly candidate: IceCandidateInit }
  | { readonly type: 'disconnectPlayer'; readonly playerId: string; readonly reason?: string }
  | { readonly type: 'ping' | 'pong'; readonly time: number };

export type ParseResult =
  | { readonly kind: 'message'; readonly message: ServerMessage }
  | { readonly kind: 'unhandled'; readonly type: string }
  | { readonly kind: 'invalid'; readonly problem: string };

function isKnownType(type: string): type is keyof typeof serverMessageSchemas {
  return Object.hasOwn(serverMessageSchemas, type);
}

/** Parses one text frame from the signalling server. Never throws. */
export function parseServerMessage(text: string): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { kind: 'invalid', problem: 'not JSON' };
  }
  const typed = z.object({ type: z.string() }).safeParse(json);
  if (!typed.success) return { kind: 'invalid', problem: 'no string "type" field' };
  const { type } = typed.data;
  if (!isKnownType(type)) return { kind: 'unhandled', type };
  const parsed = serverMessageSchemas[type].safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { kind: 'invalid', problem: `${type}: ${issue ? `${issue.path.join('.') || '(root)'} ${issue.message}` : 'invalid'}` };
  }
  return { kind: 'message', message: parsed.data };
}

export interface SignallingCloseInfo {
  readonly code: number;
  readonly reason: string;
  /** The socket error that preceded the close, if any (e.g. ECONNREFUSED). */
  readonly error: string | undefined;
}

export interface SignallingHandlers {
  onOpen(): void;
  onParsed(result: ParseResult): void;
  onClose(info: SignallingCloseInfo): void;
}

export interface SignallingConnectionOptions {
  readonly url: string;
  /** Milliseconds between keep-alive pings; 0 = none. */
  readonly keepAliveIntervalMs: number;
}

export class SignallingConnection {
  private readonly socket: WebSocket;
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  private lastError: string | undefined;

  constructor(options: SignallingConnectionOptions, handlers: SignallingHandlers) {
    this.socket = new WebSocket(options.url, { handshakeTimeout: 10_000 });
    this.socket.on('open', () => {
      if (options.keepAliveIntervalMs > 0) {
        this.keepAlive = setInterval(() => this.send({ type: 'ping', time: Math.floor(Date.now() / 1000) }), options.keepAliveIntervalMs);
      }
      handlers.onOpen();
    });
    this.socket.on('message', (data, isBinary) => {
      if (isBinary) {
        handlers.onParsed({ kind: 'invalid', problem: 'binary frame' });
        return;
      }
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(new Uint8Array(data));
      const text = bytes.toString('utf8');
      handlers.onParsed(parseServerMessage(text));
    });
    this.socket.on('error', (error) => {
      this.lastError = error.message;
    });
    this.socket.on('close', (code, reason) => {
      if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
      handlers.onClose({ code, reason: reason.toString('utf8'), error: this.lastError });
    });
  }

  /** Sends one message; dropped (returns false) unless the socket is open. */
  send(message: StreamerMessage): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  /** Closes the socket normally (1000). Idempotent; onClose still fires. */
  close(reason = 'Streamer shutting down'): void {
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    if (this.socket.readyState === WebSocket.CONNECTING) this.socket.terminate();
    else if (this.socket.readyState === WebSocket.OPEN) this.socket.close(1000, reason);
  }
}
