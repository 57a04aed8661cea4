// RFC 6184 packetization (single NAL, STAP-A, FU-A), RTP sequencing and timestamps, and the
// fixture clip as the app streams it, cross-checked with werift's independent depacketizer.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { H264RtpPayload } from 'werift';
import { NalUnitType, splitNalUnits } from './h264-annexb';
import { DEFAULT_FIXTURE_PATH } from './fixture';
import { clipFromAnnexB, loadClip, nextKeyframeIndex } from './h264-clip';
import { buildPayloads, DEFAULT_MAX_PAYLOAD_SIZE, H264RtpPacketizer, rtpTimestampForFrame } from './h264-rtp';

/** A NAL unit of `size` bytes: header (NRI 3, `type`), then a counting pattern. */
const nalOf = (type: number, size: number, nri = 3): Buffer => {
  const bytes = Buffer.alloc(size);
  bytes[0] = (nri << 5) | type;
  for (let i = 1; i < size; i++) bytes[i] = i % 251;
  return bytes;
};

/** Depacketizes one access unit's payloads with werift and returns its NAL units. */
const weriftDepacketize = (payloads: readonly Buffer[]): Buffer[] => {
  let fragment: Buffer | undefined;
  const annexB: Buffer[] = [];
  for (const payload of payloads) {
    const parsed = H264RtpPayload.deSerialize(payload, fragment);
    fragment = parsed.fragment;
    if (parsed.payload) annexB.push(parsed.payload);
  }
  return splitNalUnits(Buffer.concat(annexB)).map((u) => u.data);
};

describe('buildPayloads', () => {
  it('sends a unit that fits as a single NAL unit packet, unchanged', () => {
    const nal = nalOf(1, 500);
    expect(buildPayloads([nal], { aggregate: false })).toEqual([nal]);
    expect(buildPayloads([nal])).toEqual([nal]);
  });

  it('aggregates SPS + PPS (+ a small slice) into one STAP-A with 16-bit sizes, F = OR, NRI = max', () => {
    const sps = nalOf(7, 20, 3);
    const pps = nalOf(8, 5, 2);
    const idr = nalOf(5, 30, 3);
    const [stap, ...rest] = buildPayloads([sps, pps, idr]);
    expect(rest).toEqual([]);
    expect(stap?.[0]).toBe((3 << 5) | 24);
    expect(stap).toEqual(Buffer.concat([Buffer.from([0x78, 0, 20]), sps, Buffer.from([0, 5]), pps, Buffer.from([0, 30]), idr]));
    expect(weriftDepacketize(buildPayloads([sps, pps, idr]))).toEqual([sps, pps, idr]);
  });

  it('without aggregation sends SPS, PPS and slice as three single NAL unit packets', () => {
    const units = [nalOf(7, 20), nalOf(8, 5), nalOf(5, 30)];
    expect(buildPayloads(units, { aggregate: false })).toEqual(units);
  });

  it('fragments a unit larger than the MTU into FU-A packets with S on the first and E on the last', () => {
    const idr = nalOf(5, 5000, 3);
    const payloads = buildPayloads([idr]);
    expect(payloads.length).toBe(Math.ceil((5000 - 1) / (DEFAULT_MAX_PAYLOAD_SIZE - 2)));
    payloads.forEach((p, i) => {
      expect(p.length).toBeLessThanOrEqual(DEFAULT_MAX_PAYLOAD_SIZE);
      expect(p[0]).toBe((3 << 5) | 28); // FU indicator: F and NRI of the unit, type 28
      expect((p[1] ?? 0) & 0x80).toBe(i === 0 ? 0x80 : 0); // S
      expect((p[1] ?? 0) & 0x40).toBe(i === payloads.length - 1 ? 0x40 : 0); // E
      expect((p[1] ?? 0) & 0x20).toBe(0); // R
      expect((p[1] ?? 0) & 0x1f).toBe(NalUnitType.IdrSlice);
    });
    const sizes = payloads.map((p) => p.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1); // balanced, no runt tail
    // Reassembly: header rebuilt from indicator + FU header, then the bodies in order.
    const body = Buffer.concat(payloads.map((p) => p.subarray(2)));
    expect(Buffer.concat([Buffer.from([((payloads[0]?.[0] ?? 0) & 0xe0) | ((payloads[0]?.[1] ?? 0) & 0x1f)]), body])).toEqual(idr);
    expect(weriftDepacketize(payloads)).toEqual([idr]);
  });

  it('fragments only above the limit, and flushes a pending STAP-A before a fragmented unit', () => {
    expect(buildPayloads([nalOf(5, 1200)]).length).toBe(1);
    expect(buildPayloads([nalOf(5, 1201)]).map((p) => (p[0] ?? 0) & 0x1f)).toEqual([28, 28]);
    const types = buildPayloads([nalOf(7, 20), nalOf(8, 5), nalOf(5, 3000)]).map((p) => (p[0] ?? 0) & 0x1f);
    expect(types).toEqual([24, 28, 28, 28]);
    expect(() => buildPayloads([nalOf(5, 10)], { maxPayloadSize: 2 })).toThrow(RangeError);
  });

  it('honours a smaller maxPayloadSize', () => {
    const payloads = buildPayloads([nalOf(7, 20), nalOf(8, 5), nalOf(1, 1000)], { maxPayloadSize: 300 });
    expect(payloads.every((p) => p.length <= 300)).toBe(true);
    expect(weriftDepacketize(payloads)).toEqual([nalOf(7, 20), nalOf(8, 5), nalOf(1, 1000)]);
  });
});

describe('H264RtpPacketizer', () => {
  it('numbers packets consecutively, shares one timestamp per access unit and marks only its last packet', () => {
    const packetizer = new H264RtpPacketizer({ initialSequenceNumber: 100 });
    const au1 = packetizer.packetize(buildPayloads([nalOf(7, 20), nalOf(8, 5), nalOf(5, 3000)]), 5000);
    const au2 = packetizer.packetize(buildPayloads([nalOf(1, 400)]), 8000);
    expect(au1.map((p) => p.header.sequenceNumber)).toEqual([100, 101, 102, 103]);
    expect(au1.map((p) => p.header.marker)).toEqual([false, false, false, true]);
    expect(au1.every((p) => p.header.timestamp === 5000 && p.header.payloadType === 96 && p.header.version === 2)).toBe(true);
    expect(au2.map((p) => [p.header.sequenceNumber, p.header.timestamp, p.header.marker])).toEqual([[104, 8000, true]]);
    expect(packetizer.nextSequenceNumber).toBe(105);
  });

  it('wraps sequence numbers from 65535 to 0', () => {
    const packetizer = new H264RtpPacketizer({ initialSequenceNumber: 65534 });
    const packets = packetizer.packetize(buildPayloads([nalOf(5, 4000)]), 0);
    expect(packets.map((p) => p.header.sequenceNumber)).toEqual([65534, 65535, 0, 1]);
  });
});

describe('rtpTimestampForFrame', () => {
  it('advances by 90000/fps per frame on the 90 kHz clock', () => {
    expect([0, 1, 2, 3].map((n) => rtpTimestampForFrame(n, 30))).toEqual([0, 3000, 6000, 9000]);
    expect(rtpTimestampForFrame(1, 60, 10)).toBe(1510);
    expect(rtpTimestampForFrame(1, 25)).toBe(3600);
  });

  it('does not drift at fractional rates: frame n is round(n·90000/fps), not n·round(90000/fps)', () => {
    const fps = 30000 / 1001;
    expect(rtpTimestampForFrame(1, fps)).toBe(3003);
    expect(rtpTimestampForFrame(30000, fps)).toBe(90_090_000);
  });

  it('wraps modulo 2^32 with the base', () => {
    expect(rtpTimestampForFrame(1, 30, 2 ** 32 - 1000)).toBe(2000);
  });
});

describe('the fixture clip', () => {
  const clip = loadClip();

  it('is 1280x720 at 30 fps, 90 frames with an IDR every 15 frames', () => {
    expect({ width: clip.width, height: clip.height, fps: clip.fps, frames: clip.frames.length }).toEqual({ width: 1280, height: 720, fps: 30, frames: 90 });
    expect(clip.keyframeIndices).toEqual([0, 15, 30, 45, 60, 75]);
    expect(nextKeyframeIndex(clip, 16)).toBe(30);
    expect(nextKeyframeIndex(clip, 30)).toBe(30);
    expect(nextKeyframeIndex(clip, 80)).toBe(0); // wraps to the loop's start
  });

  it('round-trips: every frame depacketized by werift gives back the fixture NAL units, SPS/PPS first on keyframes', () => {
    const stream = splitNalUnits(loadFixtureBytes());
    const depacketized = clip.frames.flatMap((frame) => weriftDepacketize(frame.payloads));
    expect(depacketized).toEqual(stream.map((u) => u.data));
    for (const frame of clip.frames.filter((f) => f.keyframe)) {
      expect(weriftDepacketize(frame.payloads).map((n) => (n[0] ?? 0) & 0x1f)).toEqual([7, 8, 5]);
    }
    expect(clip.frames.every((f) => f.payloads.every((p) => p.length <= DEFAULT_MAX_PAYLOAD_SIZE))).toBe(true);
  });

  it('gives IDR access units that lack in-band SPS/PPS the most recent ones', () => {
    const units = splitNalUnits(loadFixtureBytes());
    // Keep only the first SPS/PPS: later IDRs then have none in-band.
    const firstPps = units.findIndex((u) => u.type === NalUnitType.Pps);
    const stripped = units.filter((u, i) => i <= firstPps || (u.type !== NalUnitType.Sps && u.type !== NalUnitType.Pps));
    const rebuilt = clipFromAnnexB(Buffer.concat(stripped.flatMap((u) => [Buffer.from([0, 0, 0, 1]), u.data])));
    const secondKeyframe = rebuilt.frames[15];
    expect(secondKeyframe?.keyframe).toBe(true);
    expect(weriftDepacketize(secondKeyframe?.payloads ?? []).map((n) => (n[0] ?? 0) & 0x1f)).toEqual([7, 8, 5]);
  });

  it('rejects a stream that does not start with an IDR', () => {
    const units = splitNalUnits(loadFixtureBytes()).filter((u) => u.type === NalUnitType.NonIdrSlice);
    expect(() => clipFromAnnexB(Buffer.concat(units.flatMap((u) => [Buffer.from([0, 0, 1]), u.data])))).toThrow(/IDR/);
  });
});

function loadFixtureBytes(): Buffer {
  return readFileSync(DEFAULT_FIXTURE_PATH);
}
