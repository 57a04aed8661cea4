import { describe, expect, it } from 'vitest';
import { RtcpPacketConverter } from 'werift';
import { keyframeRequestBytes, rtcpBytes } from './keyframe-request';
import { parseRtcpStrictly } from '../../../test/support/relay/strict-rtcp';

const SENDER = 0x11223344;
const MEDIA = 0xaabbccdd;

describe('keyframe request bytes', () => {
  it('is a PLI on its own when the app offered PLI, even beside FIR: one block, length field = bytes / 4 − 1', () => {
    const bytes = keyframeRequestBytes({ pli: true, fir: true }, SENDER, MEDIA, 7)!;
    expect(bytes.toString('hex')).toBe('81ce000211223344aabbccdd');
    const blocks = parseRtcpStrictly(bytes);
    expect(blocks.map((b) => b.name)).toEqual(['PLI']);
    for (const block of blocks) expect(block.lengthField).toBe(block.bytes.length / 4 - 1);
  });

  it('is a well-formed FIR on its own for an app that offered FIR without PLI (media SSRC 0, the target in the FCI)', () => {
    const bytes = keyframeRequestBytes({ pli: false, fir: true }, SENDER, MEDIA, 0x1ff)!;
    expect(bytes.toString('hex')).toBe('84ce000411223344' + '00000000' + 'aabbccdd' + 'ff000000');
    const [block] = parseRtcpStrictly(bytes);
    expect(block?.name).toBe('FIR');
    expect(block?.lengthField).toBe(bytes.length / 4 - 1);
  });

  it('is nothing when the app offered neither', () => {
    expect(keyframeRequestBytes({ pli: false, fir: false }, SENDER, MEDIA, 0)).toBeUndefined();
  });

  it("goes out as our bytes: werift's own FIR serialisation is one word short, which libwebrtc rejects", () => {
    const ours = keyframeRequestBytes({ pli: false, fir: true }, SENDER, MEDIA, 1)!;
    expect(rtcpBytes(ours).serialize()).toBe(ours);
    // Why not werift's: parse our FIR and let werift write it again.
    const weriftBytes = Buffer.concat(RtcpPacketConverter.deSerialize(ours).map((p) => p.serialize()));
    expect(weriftBytes.readUInt16BE(2)).toBe(3);
    expect(() => parseRtcpStrictly(weriftBytes)).toThrow(/FIR of 12 bytes/);
  });
});
