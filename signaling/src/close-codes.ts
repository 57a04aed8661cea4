// WebSocket close codes (RFC 6455 §7.4.1) as the signalling endpoints use them, and the
// rule that keeps close reasons inside the 123 bytes a close frame can carry.

export const CLOSE_CODES = {
  /** Normal end of a session. */
  normal: 1000,
  /** The server is shutting down or the peer navigated away. */
  goingAway: 1001,
  /** A broken WebSocket frame (bad opcode, missing mask…), as ws reports it. */
  protocolError: 1002,
  /** A binary frame on a text-only protocol. */
  unsupportedData: 1003,
  /** A close frame without a code, as a browser reports it. Reported, never sent. */
  noStatus: 1005,
  /** No close frame at all (peer vanished, keepalive timeout). Reported, never sent. */
  abnormal: 1006,
  /** A text frame that is not valid UTF-8. */
  invalidPayload: 1007,
  /** Malformed JSON, unknown or forbidden message type, wrong fields. */
  policyViolation: 1008,
  /** A frame over the size limit. */
  messageTooBig: 1009,
  /** The server ended the connection on purpose (Wilbur uses it for `disconnectPlayer`). */
  internalError: 1011,
  /** The service is restarting; the client may try again. */
  serviceRestart: 1012,
} as const;

export type CloseCode = (typeof CLOSE_CODES)[keyof typeof CLOSE_CODES];

/** A close frame carries at most 125 payload bytes, two of them the code. */
export const MAX_CLOSE_REASON_BYTES = 123;

/** True for codes a close frame may carry: 1000–1003, 1007–1014 and the 3000–4999 private range. */
export function isSendableCloseCode(code: number): boolean {
  if (!Number.isInteger(code)) return false;
  if (code >= 3000 && code <= 4999) return true;
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014);
}

/** Cuts reason to MAX_CLOSE_REASON_BYTES of UTF-8 without splitting a character. */
export function limitCloseReason(reason: string): string {
  if (Buffer.byteLength(reason, 'utf8') <= MAX_CLOSE_REASON_BYTES) return reason;
  let out = '';
  let bytes = 0;
  for (const char of reason) {
    const size = Buffer.byteLength(char, 'utf8');
    if (bytes + size > MAX_CLOSE_REASON_BYTES) break;
    out += char;
    bytes += size;
  }
  return out;
}
