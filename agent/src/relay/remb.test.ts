import { describe, expect, it } from 'vitest';
import { RtcpPacketConverter, RtcpPayloadSpecificFeedback, ReceiverEstimatedMaxBitrate } from 'werift';
import { rembPacket } from './remb';


describe('rembPacket', () => {
  it('round-trips through werift’s parser with the SSRCs and the bitrate (18-bit mantissa)', () => {
    for (const bps of [20_000_000, 2_000_000, 300_000, 123_456_789, 0]) {
      const [parsed] = RtcpPacketConverter.deSerialize(rembPacket(0x1234, [0xabcdef01], bps).serialize());
      if (!(parsed instanceof RtcpPayloadSpecificFeedback) || !(parsed.feedback instanceof ReceiverEstimatedMaxBitrate)) throw new Error('not a REMB');
      expect(parsed.feedback.senderSsrc).toBe(0x1234);
      expect(parsed.feedback.ssrcFeedbacks).toEqual([0xabcdef01]);
      const decoded = Number(parsed.feedback.bitrate);
      expect(decoded).toBeLessThanOrEqual(bps);
      expect(bps - decoded).toBeLessThan(Math.max(1, bps / 2 ** 17));
    }
  });
});
