// The iframe embedding API: messages the page posts to `window.parent`, and the one message a host
// page may send in. Incoming messages are validated here; anything else is ignored.

/** `source` on every message the player posts to its host. */
export const EMBED_SOURCE = 'pixelfleet';
/** `source` a host page puts on messages meant for the player. */
export const HOST_SOURCE = 'pixelfleet-host';

/**
 * UIInteraction strings travel as a u16 count of UTF-16 code units (data-channel protocol, §4), so a
 * longer JSON text cannot be sent.
 */
export const MAX_UI_INTERACTION_CODE_UNITS = 65_535;

/** `queue-N` while waiting (N = 1 is next), then `connecting`, `loadingComplete` (video playing), `disconnected`. */
export type EmbedQueueState = `queue-${number}`;
export type EmbedState = EmbedQueueState | 'connecting' | 'loadingComplete' | 'disconnected';

export type EmbedStateMessage =
  | { readonly source: typeof EMBED_SOURCE; readonly type: 'state'; readonly state: EmbedQueueState | 'connecting' | 'loadingComplete' }
  | {
      readonly source: typeof EMBED_SOURCE;
      readonly type: 'state';
      readonly state: 'disconnected';
      /** WebSocket close code (VIEWER_CLOSES in @pixelfleet/signaling; other codes possible). */
      readonly code: number;
      /** The reason text the server sent with the close (may be empty). */
      readonly reason: string;
      /** The sentence the page shows the viewer. */
      readonly message: string;
    };

/** A Response message from the Unreal app (data-channel message 1), passed on unchanged as text. */
export interface EmbedResponseMessage {
  readonly source: typeof EMBED_SOURCE;
  readonly type: 'response';
  readonly data: string;
}

export type PlayerToHostMessage = EmbedStateMessage | EmbedResponseMessage;

/** JSON the host may forward to the app: a string or a JSON object/array (sent with `emitUIInteraction`). */
export type UiInteractionData = string | { readonly [key: string]: unknown } | readonly unknown[];

/** From the host: forward `data` to the Unreal app as a UIInteraction. */
export interface HostUiInteractionMessage {
  readonly source: typeof HOST_SOURCE;
  readonly type: 'uiInteraction';
  readonly data: UiInteractionData;
}

export type HostToPlayerMessage = HostUiInteractionMessage;

/**
 * Validate a `message` event's data. Returns undefined for anything that is not a well-formed host
 * message (other sources, unknown types, data that is not JSON-serialisable or is too long).
 */
export function parseHostMessage(value: unknown): HostToPlayerMessage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  if (record['source'] !== HOST_SOURCE || record['type'] !== 'uiInteraction') return undefined;
  const data = record['data'];
  if (typeof data !== 'string' && (typeof data !== 'object' || data === null)) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch {
    return undefined; // cycles, BigInt
  }
  if (json === undefined || json.length > MAX_UI_INTERACTION_CODE_UNITS) return undefined;
  return { source: HOST_SOURCE, type: 'uiInteraction', data: data as UiInteractionData };
}

/** The state message for a queue position (1 = next). */
export function queueState(position: number): EmbedQueueState {
  return `queue-${position}`;
}
