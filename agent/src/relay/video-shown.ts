// Whether video reached one viewer, from what only the viewer can say: its RTCP receiver reports
// (RFC 3550 §6.4.1). The relay notes where the first whole keyframe it sent this viewer ends (the
// packet with the marker bit that closes the access unit a keyframe started, as this viewer's
// sequence numbers count); once a receiver report's extended highest sequence number reaches that
// packet with no packet counted lost, every packet up to the end of a keyframe arrived, so the
// viewer had a picture to decode. A session's diagnosis takes this as a second witness beside the
// player's own telemetry, which a viewer who leaves early may never deliver.
import { startsKeyframe } from './h264-keyframe';

/** Half the 16-bit sequence space: a report this far "ahead" of the keyframe's end is behind it. */
const HALF_SEQUENCE_SPACE = 0x8000;

export class VideoShownWitness {
  private inKeyframe = false;
  /** This viewer's sequence number of the last packet of the first keyframe it was sent. */
  private keyframeEnd: number | undefined;
  private shown = false;

  /** A video packet written to this viewer, with its sequence number as the viewer gets it. */
  sent(sequenceNumber: number, marker: boolean, payload: Uint8Array): void {
    if (this.keyframeEnd !== undefined) return;
    if (!this.inKeyframe && startsKeyframe(payload)) this.inKeyframe = true;
    if (this.inKeyframe && marker) this.keyframeEnd = sequenceNumber;
  }

  /**
   * A receiver report block about this viewer's video. True the first time it shows the whole
   * first keyframe arrived: its highest sequence number at or past the keyframe's end, and none lost
   * (cumulative lost 0 or below: retransmissions and duplicates count as received).
   */
  report(highestSequence: number, cumulativeLost: number): boolean {
    if (this.shown || this.keyframeEnd === undefined) return false;
    const ahead = (highestSequence - this.keyframeEnd) & 0xffff;
    if (ahead >= HALF_SEQUENCE_SPACE || signed24(cumulativeLost) > 0) return false;
    this.shown = true;
    return true;
  }
}

/** The cumulative-lost field is a signed 24-bit number; werift reads it unsigned. */
function signed24(value: number): number {
  return value & 0x800000 ? value - 0x1000000 : value;
}
