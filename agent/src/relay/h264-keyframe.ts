// Where a keyframe starts in an H.264 RTP stream (RFC 6184), from the first bytes of a payload
// only: the relay must know when a keyframe it asked the app for is arriving and when it is whole,
// without parsing or buffering frames on the ingest path.

const NAL_IDR = 5;
const NAL_SPS = 7;
const STAP_A = 24;
const FU_A = 28;

/** True when this payload begins a keyframe: an IDR slice or an SPS (sent just before the IDR). */
export function startsKeyframe(payload: Uint8Array): boolean {
  const first = payload[0];
  if (first === undefined) return false;
  const type = first & 0x1f;
  if (type === NAL_IDR || type === NAL_SPS) return true;
  if (type === FU_A) {
    const header = payload[1];
    // The first fragment (S bit) of an IDR slice.
    return header !== undefined && (header & 0x80) !== 0 && (header & 0x1f) === NAL_IDR;
  }
  if (type === STAP_A) {
    // Aggregated NAL units: 16-bit size, then the unit (its first byte is its header).
    let at = 1;
    while (at + 2 < payload.length) {
      const size = ((payload[at] ?? 0) << 8) | (payload[at + 1] ?? 0);
      const inner = (payload[at + 2] ?? 0) & 0x1f;
      if (inner === NAL_IDR || inner === NAL_SPS) return true;
      if (size === 0) return false;
      at += 2 + size;
    }
  }
  return false;
}
