// The edge: turns one untrusted WebSocket frame into a typed message the sender's role may send,
// or into a short close reason and code. Never throws; reasons never echo peer content.
import type { RawData } from 'ws';
import type { z } from 'zod';
import { CLOSE_CODES } from './close-codes';
import {
  MESSAGE_TYPES,
  PLAYER_EXTENSION_TYPES,
  type MessageType,
  type PlayerCatalogueMessage,
  type PlayerToServerMessage,
  type StreamerToServerMessage,
} from './messages';
import {
  MESSAGE_SCHEMAS,
  answerSchema,
  iceCandidateSchema,
  layerPreferenceSchema,
  offerSchema,
  resumeSchema,
  routingPlayerId,
} from './schemas';

/** Who sent the frame: the Unreal app, or a browser running Epic's frontend. */
export type SenderRole = 'streamer' | 'player';

export type MessageFrom<R extends SenderRole> = R extends 'streamer' ? StreamerToServerMessage : PlayerToServerMessage;

export type ParsedMessage<M = StreamerToServerMessage | PlayerToServerMessage> =
  | { readonly ok: true; readonly message: M }
  | { readonly ok: false; readonly reason: string; readonly closeCode: number };

export interface ParseOptions {
  /** Largest accepted frame in bytes (default DEFAULT_MAX_MESSAGE_BYTES, 64 KiB). */
  readonly maxBytes?: number;
  /** The `isBinary` flag of ws's `message` event; binary frames are refused. Default false. */
  readonly binary?: boolean;
}

/** 64 KiB: an SDP is 5–10 KB. Give the same value to `WebSocketServer({ maxPayload })`. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024;

type RoleSchemas<M extends { readonly type: string }> = { readonly [T in M['type']]: z.ZodType<Extract<M, { readonly type: T }>> };

const routed = { playerId: routingPlayerId };
const unrouted = { playerId: true } as const;

/** What a streamer may send to a server (Wilbur's streamer allow-list plus the messages it forwards). */
const STREAMER_SCHEMAS: RoleSchemas<StreamerToServerMessage> = {
  endpointId: MESSAGE_SCHEMAS.endpointId,
  offer: offerSchema.extend(routed),
  answer: answerSchema.extend(routed),
  iceCandidate: iceCandidateSchema.extend(routed),
  disconnectPlayer: MESSAGE_SCHEMAS.disconnectPlayer,
  layerPreference: layerPreferenceSchema,
  ping: MESSAGE_SCHEMAS.ping,
  pong: MESSAGE_SCHEMAS.pong,
};

/** What a player may send to a server. A claimed `playerId` is dropped: the server knows who sent it. */
const PLAYER_SCHEMAS: RoleSchemas<PlayerCatalogueMessage> & RoleSchemas<Exclude<PlayerToServerMessage, PlayerCatalogueMessage>> = {
  listStreamers: MESSAGE_SCHEMAS.listStreamers,
  subscribe: MESSAGE_SCHEMAS.subscribe,
  unsubscribe: MESSAGE_SCHEMAS.unsubscribe,
  offer: offerSchema.omit(unrouted),
  answer: answerSchema.omit(unrouted),
  iceCandidate: iceCandidateSchema.omit(unrouted),
  ping: MESSAGE_SCHEMAS.ping,
  pong: MESSAGE_SCHEMAS.pong,
  dataChannelRequest: MESSAGE_SCHEMAS.dataChannelRequest,
  peerDataChannelsReady: MESSAGE_SCHEMAS.peerDataChannelsReady,
  layerPreference: layerPreferenceSchema.omit(unrouted),
  pixelfleetResume: resumeSchema,
};

const SCHEMAS_BY_ROLE: { readonly [R in SenderRole]: ReadonlyMap<string, z.ZodType<MessageFrom<R>>> } = {
  streamer: new Map(Object.entries(STREAMER_SCHEMAS)),
  player: new Map(Object.entries(PLAYER_SCHEMAS)),
};

const EXTENSION_TYPES: ReadonlySet<string> = new Set(PLAYER_EXTENSION_TYPES);

/** The catalogue types each role may send, for documentation and tests (a player may also send PLAYER_EXTENSION_TYPES). */
export const ALLOWED_TYPES: { readonly [R in SenderRole]: readonly MessageType[] } = {
  streamer: Object.keys(STREAMER_SCHEMAS) as MessageType[],
  player: Object.keys(PLAYER_SCHEMAS).filter((type) => !EXTENSION_TYPES.has(type)) as MessageType[],
};

const KNOWN_TYPES: ReadonlySet<string> = new Set([...MESSAGE_TYPES, ...PLAYER_EXTENSION_TYPES]);

/** Type names safe to quote in a close reason: short and plain. */
const QUOTABLE_TYPE = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses one frame from a peer of the given role. Rejects, with a close code and a reason of at
 * most 123 bytes: binary frames (1003), frames over maxBytes (1009), invalid UTF-8 (1007),
 * malformed JSON, non-objects, missing/unknown types, types the role may not send, and wrong or
 * missing fields or over-long strings (1008).
 */
export function parseSignallingMessage<R extends SenderRole>(
  data: RawData | string,
  role: R,
  options: ParseOptions = {},
): ParsedMessage<MessageFrom<R>> {
  try {
    return parseFrame(data, role, options);
  } catch {
    // Unreachable by design; the edge must not throw whatever arrives.
    return reject('invalid message', CLOSE_CODES.policyViolation);
  }
}

function parseFrame<R extends SenderRole>(data: RawData | string, role: R, options: ParseOptions): ParsedMessage<MessageFrom<R>> {
  if (options.binary === true) return reject('binary frames are not accepted', CLOSE_CODES.unsupportedData);

  const maxBytes = options.maxBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  if (frameBytes(data, maxBytes) > maxBytes) return reject(`message exceeds ${maxBytes} bytes`, CLOSE_CODES.messageTooBig);

  let textFrame: string;
  if (typeof data === 'string') {
    textFrame = data;
  } else {
    try {
      textFrame = utf8.decode(toBytes(data));
    } catch {
      return reject('invalid UTF-8', CLOSE_CODES.invalidPayload);
    }
  }

  let value: unknown;
  try {
    value = JSON.parse(textFrame);
  } catch {
    return reject('malformed JSON', CLOSE_CODES.policyViolation);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return reject('message is not a JSON object', CLOSE_CODES.policyViolation);
  }

  // JSON.parse makes `__proto__` an own data property, so reading `type` cannot reach a prototype.
  const type: unknown = Object.hasOwn(value, 'type') ? (value as { type?: unknown }).type : undefined;
  if (type === undefined || type === '') return reject('missing type', CLOSE_CODES.policyViolation);
  if (typeof type !== 'string') return reject('type must be a string', CLOSE_CODES.policyViolation);
  if (!KNOWN_TYPES.has(type)) {
    return reject(QUOTABLE_TYPE.test(type) ? `unknown type "${type}"` : 'unknown type', CLOSE_CODES.policyViolation);
  }

  const schema = SCHEMAS_BY_ROLE[role].get(type);
  if (schema === undefined) return reject(`${type} is not allowed from a ${role}`, CLOSE_CODES.policyViolation);

  const result = schema.safeParse(value);
  if (!result.success) return reject(`invalid ${type}: ${describeIssue(result.error.issues[0], value)}`, CLOSE_CODES.policyViolation);
  return { ok: true, message: result.data };
}

function reject(reason: string, closeCode: number): { ok: false; reason: string; closeCode: number } {
  return { ok: false, reason, closeCode };
}

/** The frame's size in bytes; a string longer than maxBytes is over it without counting (UTF-8 needs ≥ 1 byte per code unit). */
function frameBytes(data: RawData | string, maxBytes: number): number {
  if (typeof data === 'string') return data.length > maxBytes ? data.length : Buffer.byteLength(data, 'utf8');
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.byteLength, 0);
  return data.byteLength;
}

function toBytes(data: Buffer | ArrayBuffer | Buffer[]): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}

/** "sdp is too long", "candidate.sdpMLineIndex must be an integer": field names come from our schema, never the peer. */
function describeIssue(issue: z.core.$ZodIssue | undefined, input: object): string {
  if (issue === undefined) return 'invalid fields';
  const path = formatPath(issue.path);
  switch (issue.code) {
    case 'invalid_type':
      return valueAt(input, issue.path) === undefined ? `${path} is missing` : `${path} must be ${article(issue.expected)}`;
    case 'too_big':
      return `${path} is ${issue.origin === 'string' || issue.origin === 'array' ? 'too long' : 'too large'}`;
    case 'too_small':
      return `${path} is ${issue.origin === 'string' || issue.origin === 'array' ? 'too short' : 'too small'}`;
    case 'invalid_value':
      return `${path} is not an allowed value`;
    case 'invalid_union':
      return `${path} has the wrong type`;
    default:
      return `${path} is invalid`;
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? 'message' : out;
}

function valueAt(input: object, path: readonly PropertyKey[]): unknown {
  let current: unknown = input;
  for (const key of path) {
    if (typeof current !== 'object' || current === null || typeof key === 'symbol' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

function article(expected: string): string {
  switch (expected) {
    case 'int':
      return 'an integer';
    case 'array':
    case 'object':
      return `an ${expected}`;
    default:
      return `a ${expected}`;
  }
}
