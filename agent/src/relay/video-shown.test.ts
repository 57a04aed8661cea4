// The relay's witness that video reached a viewer, from the viewer's receiver reports: only a
// report that reaches past the end of the first whole keyframe sent, with nothing lost, counts.
import { describe, expect, it } from 'vitest';
import { VideoShownWitness } from './video-shown';

// H.264 payloads (RFC 6184): a P-slice, an SPS, FU-A fragments of an IDR (start, middle).
const P_SLICE = Uint8Array.of(0x41, 0x9a);
const SPS = Uint8Array.of(0x67, 0x42);
const IDR_START = Uint8Array.of(0x7c, 0x85);
const IDR_MIDDLE = Uint8Array.of(0x7c, 0x05);

/** Sends packets from sequence number `first`: each [payload, marker]. */
function send(witness: VideoShownWitness, first: number, packets: [Uint8Array, boolean][]): void {
  packets.forEach(([payload, marker], i) => witness.sent((first + i) & 0xffff, marker, payload));
}

describe('VideoShownWitness', () => {
  it('holds once a report reaches the end of the first keyframe with nothing lost, and only the first time', () => {
    const witness = new VideoShownWitness();
    send(witness, 100, [[P_SLICE, true], [SPS, false], [IDR_START, false], [IDR_MIDDLE, true], [P_SLICE, true]]);
    // The keyframe is 101..103: a report up to 102 says part of it arrived.
    expect(witness.report(102, 0)).toBe(false);
    expect(witness.report(103, 0)).toBe(true);
    expect(witness.report(104, 0)).toBe(false); // said once
  });

  it('counts no report before a keyframe was sent, nor one that says packets are missing (until they are resent)', () => {
    const witness = new VideoShownWitness();
    send(witness, 10, [[P_SLICE, true], [P_SLICE, true]]);
    expect(witness.report(11, 0)).toBe(false); // frames, but no keyframe yet: nothing the viewer could decode
    send(witness, 12, [[IDR_START, false], [IDR_MIDDLE, false], [IDR_MIDDLE, true]]);
    expect(witness.report(20, 2)).toBe(false);
    expect(witness.report(21, 0)).toBe(true); // the two came again (a NACK answered)
  });

  it('reads the cumulative-lost field as the signed 24-bit number it is (duplicates make it negative)', () => {
    const witness = new VideoShownWitness();
    send(witness, 0, [[IDR_START, true]]);
    expect(witness.report(0, 0xffffff)).toBe(true); // -1
  });

  it('follows sequence numbers across their wrap, and takes an extended highest sequence number', () => {
    const witness = new VideoShownWitness();
    send(witness, 0xfffe, [[SPS, false], [IDR_START, false], [IDR_MIDDLE, true]]); // 65534, 65535, 0
    expect(witness.report(0xffff, 0)).toBe(false); // one short
    expect(witness.report(0x10000 + 1, 0)).toBe(true); // cycle 1, sequence 1: past the end
  });
});
