// The zod schema of every catalogue message and the size limits on its strings. Unknown fields
// are dropped (never rejected, never forwarded), so a `playerId` that a UE 5.7+ peer adds to any
// message passes; required fields and types are enforced, except `protocolVersion`.
import { z } from 'zod';
import type {
  AnswerMessage,
  IceCandidateInit,
  IceCandidateMessage,
  LayerPreferenceMessage,
  MessageOf,
  MessageType,
  OfferMessage,
  PeerConnectionOptions,
  ResumeMessage,
  SignallingMessage,
} from './messages';

/** Longest accepted string per field kind, in UTF-16 code units. A real SDP is 5–10 KB, a candidate line ~150 chars. */
export const FIELD_LIMITS = {
  sdp: 32_768,
  candidate: 1_024,
  sdpMid: 64,
  /** RFC 8839 allows ICE ufrags up to 256 characters. */
  usernameFragment: 256,
  /** Streamer and player IDs. */
  id: 256,
  protocolVersion: 32,
  scalabilityMode: 32,
  /** Free text: `disconnectPlayer.reason`, `subscribeFailed.message`. */
  text: 1_024,
  /** `streamerList.ids` entries. */
  listLength: 1_024,
  /** `pixelfleetResume.viewerToken` (ours are ~50 characters). */
  token: 256,
} as const;

const id = z.string().min(1).max(FIELD_LIMITS.id);
const sdp = z.string().min(1).max(FIELD_LIMITS.sdp);
/**
 * Informational only: nothing compares versions (pixel-streaming.md §1.5: ours is "1.3.0", Epic's JS
 * streamer sends "1.0.0", a newer app may send anything), so a value that is not a short string is dropped, not
 * refused: a refused `endpointId` would end the session of an app that works.
 */
const protocolVersion = z.string().max(FIELD_LIMITS.protocolVersion).optional().catch(undefined);
const text = z.string().max(FIELD_LIMITS.text);
const bitrateBps = z.number().min(0).max(2 ** 31 - 1);

const peerConnectionOptions: z.ZodType<PeerConnectionOptions> = z.object({
  iceServers: z
    .array(
      z.object({
        urls: z.union([z.string(), z.array(z.string())]),
        username: z.string().optional(),
        credential: z.string().optional(),
      }),
    )
    .optional(),
  iceTransportPolicy: z.enum(['all', 'relay']).optional(),
});

export const iceCandidateInitSchema: z.ZodType<IceCandidateInit> = z.object({
  // Empty is the end-of-candidates marker some stacks trickle.
  candidate: z.string().max(FIELD_LIMITS.candidate),
  sdpMid: z.string().max(FIELD_LIMITS.sdpMid),
  sdpMLineIndex: z.int().min(0).max(65_535),
  usernameFragment: z.string().max(FIELD_LIMITS.usernameFragment).optional(),
});

export const offerSchema = z.object({
  type: z.literal('offer'),
  sdp,
  playerId: id.optional(),
  sfu: z.boolean().optional(),
  multiplex: z.boolean().optional(),
  scalabilityMode: z.string().max(FIELD_LIMITS.scalabilityMode).optional(),
}) satisfies z.ZodType<OfferMessage>;

export const answerSchema = z.object({
  type: z.literal('answer'),
  sdp,
  playerId: id.optional(),
  minBitrateBps: bitrateBps.optional(),
  maxBitrateBps: bitrateBps.optional(),
}) satisfies z.ZodType<AnswerMessage>;

export const iceCandidateSchema = z.object({
  type: z.literal('iceCandidate'),
  candidate: iceCandidateInitSchema,
  playerId: id.optional(),
}) satisfies z.ZodType<IceCandidateMessage>;

export const layerPreferenceSchema = z.object({
  type: z.literal('layerPreference'),
  spatialLayer: z.int32(),
  temporalLayer: z.int32(),
  // Epic's frontend always sends "" here (protobuf default); the server stamps the real one.
  playerId: z.string().max(FIELD_LIMITS.id).optional(),
}) satisfies z.ZodType<LayerPreferenceMessage>;

type CatalogueSchemas = { readonly [T in MessageType]: z.ZodObject & z.ZodType<MessageOf<T>> };

/** One schema per catalogue type; the parser narrows them per sender role. */
export const MESSAGE_SCHEMAS: CatalogueSchemas = {
  config: z.object({ type: z.literal('config'), peerConnectionOptions, protocolVersion }),
  identify: z.object({ type: z.literal('identify') }),
  endpointId: z.object({ type: z.literal('endpointId'), id, protocolVersion }),
  endpointIdConfirm: z.object({ type: z.literal('endpointIdConfirm'), committedId: id }),
  streamerIdChanged: z.object({ type: z.literal('streamerIdChanged'), newID: id }),
  listStreamers: z.object({ type: z.literal('listStreamers') }),
  streamerList: z.object({ type: z.literal('streamerList'), ids: z.array(id).max(FIELD_LIMITS.listLength) }),
  subscribe: z.object({ type: z.literal('subscribe'), streamerId: id }),
  unsubscribe: z.object({ type: z.literal('unsubscribe') }),
  subscribeFailed: z.object({ type: z.literal('subscribeFailed'), message: text }),
  playerConnected: z.object({ type: z.literal('playerConnected'), playerId: id, dataChannel: z.boolean(), sfu: z.boolean() }),
  playerDisconnected: z.object({ type: z.literal('playerDisconnected'), playerId: id }),
  offer: offerSchema,
  answer: answerSchema,
  iceCandidate: iceCandidateSchema,
  disconnectPlayer: z.object({ type: z.literal('disconnectPlayer'), playerId: id, reason: text.optional() }),
  ping: z.object({ type: z.literal('ping'), time: z.number() }),
  pong: z.object({ type: z.literal('pong'), time: z.number() }),
  layerPreference: layerPreferenceSchema,
  dataChannelRequest: z.object({ type: z.literal('dataChannelRequest') }),
  peerDataChannelsReady: z.object({ type: z.literal('peerDataChannelsReady') }),
};

export const resumeSchema = z.object({
  type: z.literal('pixelfleetResume'),
  viewerToken: z.string().min(1).max(FIELD_LIMITS.token),
  received: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
}) satisfies z.ZodType<ResumeMessage>;

/** The routing `playerId` a streamer must put on messages meant for a player. */
export const routingPlayerId = id;

/** True for a streamer or player ID the schemas accept (1–256 characters). */
export function isValidId(value: string): boolean {
  return id.safeParse(value).success;
}

// The union in messages.ts and MESSAGE_TYPES must name the same types.
type SameKeys<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _catalogueMatchesUnion: SameKeys<MessageType, SignallingMessage['type']> = true;
