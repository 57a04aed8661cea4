// Why the relay refused a call or dropped its ingest, with a stable code that the session code
// maps onto its own failures (CommandFailure codes, signalling replies, session events).

export type RelayErrorCode =
  /** RelayOptions out of range (bitrates, port range, addresses). */
  | 'INVALID_OPTIONS'
  /** The app's offer has no codec the relay can pass through (H.264 42e01f packetization-mode 1; Opus for audio). */
  | 'UNSUPPORTED_CODEC'
  /** werift rejected a description or candidate (malformed SDP, wrong signalling state). */
  | 'NEGOTIATION_FAILED'
  /** No viewer with that id (never added, removed, or already disconnected). */
  | 'UNKNOWN_VIEWER'
  /** addViewer with an id that is already in use. */
  | 'DUPLICATE_VIEWER'
  /** The viewer was removed (or the relay closed) while its offer was being made. */
  | 'VIEWER_REMOVED'
  /** The relay was closed. */
  | 'RELAY_CLOSED';

export class RelayError extends Error {
  override readonly name = 'RelayError';
  constructor(
    readonly code: RelayErrorCode,
    message: string,
  ) {
    super(message);
  }
}
