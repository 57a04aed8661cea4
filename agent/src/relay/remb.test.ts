import { describe, expect, it } from 'vitest';
import { RtcpPacketConverter, RtcpPayloadSpecificFeedback, ReceiverEstimatedMaxBitrate } from 'werift';
import { rembPacket, rembTargetBps, VIEWER_ESTIMATE_TTL_MS } from './remb';

const bitrate = { minBps: 500_000, maxBps: 20_000_000 };

describe('rembTargetBps', () => {
  it('is maxBps with no viewer estimate, else the lowest fresh one clamped to [minBps, maxBps]', () => {
    expect(rembTargetBps([], 0, bitrate)).toBe(20_000_000);
    expect(rembTargetBps([{ bps: 3_000_000, atMs: 0 }, { bps: 8_000_000, atMs: 0 }], 10, bitrate)).toBe(3_000_000);
    expect(rembTargetBps([{ bps: 1_000, atMs: 0 }], 0, bitrate)).toBe(500_000);
    expect(rembTargetBps([{ bps: 90_000_000, atMs: 0 }], 0, bitrate)).toBe(20_000_000);
  });

  it(`ignores estimates older than ${VIEWER_ESTIMATE_TTL_MS} ms`, () => {
    expect(rembTargetBps([{ bps: 1_000_000, atMs: 0 }], VIEWER_ESTIMATE_TTL_MS + 1, bitrate)).toBe(20_000_000);
    expect(rembTargetBps([{ bps: 1_000_000, atMs: 0 }], VIEWER_ESTIMATE_TTL_MS, bitrate)).toBe(1_000_000);
  });
});

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
