// The signalling a session's viewer and its relay exchange through the control plane, carried as
// JSON text in the agent contract's SignalMessage. One schema module for both ends: the control
// plane encodes what the viewer's endpoint has already parsed and decodes what a relay sends
// before any viewer hears it; the agent decodes the viewer's messages and encodes its own. Only
// these types cross; anything else is refused with a reason, never passed on. Fields are the
// catalogue schemas' (schemas.ts): a field they do not know is dropped (a relay's config carries
// `iceServers` with `urls`/`username`/`credential`, which they keep), and a routing `playerId` is
// dropped because the route, not the message, names the player.
import { z } from 'zod';
import type { AnswerMessage, ConfigMessage, IceCandidateMessage, OfferMessage, SubscribeMessage, UnsubscribeMessage } from './messages';
import { DEFAULT_MAX_MESSAGE_BYTES } from './parser';
import { answerSchema, iceCandidateSchema, MESSAGE_SCHEMAS, offerSchema } from './schemas';

/** What a viewer's signalling socket hands its session's relay (the player id is the route's, not the message's). */
export type ViewerToRelaySignal = SubscribeMessage | UnsubscribeMessage | Omit<AnswerMessage, 'playerId'> | Omit<IceCandidateMessage, 'playerId'>;

/** What a session's relay sends toward its viewer. */
export type RelayToViewerSignal = ConfigMessage | Omit<OfferMessage, 'playerId'> | Omit<IceCandidateMessage, 'playerId'>;

export type DecodedSignal<M> = { readonly ok: true; readonly signal: M } | { readonly ok: false; readonly reason: string };

const noPlayerId = { playerId: true } as const;

const viewerToRelaySchema: z.ZodType<ViewerToRelaySignal> = z.discriminatedUnion('type', [
  MESSAGE_SCHEMAS.subscribe,
  MESSAGE_SCHEMAS.unsubscribe,
  answerSchema.omit(noPlayerId),
  iceCandidateSchema.omit(noPlayerId),
]);

const relayToViewerSchema: z.ZodType<RelayToViewerSignal> = z.discriminatedUnion('type', [
  MESSAGE_SCHEMAS.config,
  offerSchema.omit(noPlayerId),
  iceCandidateSchema.omit(noPlayerId),
]);

/** The JSON text a relayed signal travels as. */
export function encodeRelayedSignal(signal: ViewerToRelaySignal | RelayToViewerSignal): string {
  return JSON.stringify(signal);
}

/** A viewer's message as the agent receives it: one of subscribe, unsubscribe, answer, iceCandidate. */
export function decodeViewerToRelay(json: string): DecodedSignal<ViewerToRelaySignal> {
  return decode(json, viewerToRelaySchema);
}

/** A relay's message as the control plane receives it: one of config, offer, iceCandidate. */
export function decodeRelayToViewer(json: string): DecodedSignal<RelayToViewerSignal> {
  return decode(json, relayToViewerSchema);
}

function decode<M>(json: string, schema: z.ZodType<M>): DecodedSignal<M> {
  // Characters, not bytes: a cheap bound first, before any parsing.
  if (json.length > DEFAULT_MAX_MESSAGE_BYTES) return { ok: false, reason: `signal exceeds ${DEFAULT_MAX_MESSAGE_BYTES} characters` };
  let value: unknown;
  try {
    value = JSON.parse(json) as unknown;
  } catch {
    return { ok: false, reason: 'signal is not JSON' };
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, signal: parsed.data };
  const type = typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string' ? (value as { type: string }).type : undefined;
  if (type === undefined) return { ok: false, reason: 'signal has no type' };
  const quoted = JSON.stringify(type.slice(0, 40));
  const path = parsed.error.issues[0]?.path.join('.') ?? '';
  if (path === 'type' || path === '') return { ok: false, reason: `signal of type ${quoted} is not relayed in this direction` };
  return { ok: false, reason: `signal of type ${quoted} has a bad field: ${path}` };
}
