// RFC 6184 RTP payload format for H.264, packetization-mode 1: single NAL unit packets, STAP-A
// aggregation of small units (SPS+PPS, as libwebrtc does) and FU-A fragmentation of large ones.
// Payload building is pure; H264RtpPacketizer adds sequence numbers, timestamps and the marker.
import { RtpHeader, RtpPacket } from 'werift';

/** Largest RTP payload in bytes; 1200 keeps SRTP packets under any path MTU, like libwebrtc. */
export const DEFAULT_MAX_PAYLOAD_SIZE = 1200;
export const H264_CLOCK_RATE = 90_000;

const STAP_A = 24;
const FU_A = 28;
const FU_START = 0x80;
const FU_END = 0x40;

export interface PayloadOptions {
  /** Maximum RTP payload size in bytes (default 1200). */
  readonly maxPayloadSize?: number;
  /** Aggregate consecutive small NAL units into STAP-A packets (default true). */
  readonly aggregate?: boolean;
}

/** Splits one large NAL unit into FU-A payloads of near-equal size, each at most maxPayloadSize. */
function fragment(nal: Buffer, maxPayloadSize: number): Buffer[] {
  const header = nal[0] ?? 0;
  const indicator = (header & 0xe0) | FU_A;
  const body = nal.subarray(1);
  const perPacket = maxPayloadSize - 2;
  const count = Math.ceil(body.length / perPacket);
  const base = Math.floor(body.length / count);
  let extra = body.length % count;
  const payloads: Buffer[] = [];
  let offset = 0;
  for (let i = 0; i < count; i++) {
    const size = base + (extra > 0 ? 1 : 0);
    if (extra > 0) extra--;
    let fuHeader = header & 0x1f;
    if (i === 0) fuHeader |= FU_START;
    if (i === count - 1) fuHeader |= FU_END;
    payloads.push(Buffer.concat([Buffer.from([indicator, fuHeader]), body.subarray(offset, offset + size)]));
    offset += size;
  }
  return payloads;
}

/** STAP-A: F = OR of the units' F bits, NRI = their highest NRI (RFC 6184 §5.7.1). */
function aggregateUnits(nals: readonly Buffer[]): Buffer {
  let f = 0;
  let nri = 0;
  const parts: Buffer[] = [Buffer.alloc(1)];
  for (const nal of nals) {
    const header = nal[0] ?? 0;
    f |= header & 0x80;
    nri = Math.max(nri, header & 0x60);
    const size = Buffer.alloc(2);
    size.writeUInt16BE(nal.length);
    parts.push(size, nal);
  }
  const payload = Buffer.concat(parts);
  payload[0] = f | nri | STAP_A;
  return payload;
}

/**
 * Builds the RTP payloads for one access unit (NAL units without start codes), in order.
 * Units larger than maxPayloadSize become FU-A fragments; with `aggregate`, runs of units that fit
 * together become one STAP-A; everything else is a single NAL unit packet.
 */
export function buildPayloads(nalUnits: readonly Buffer[], options: PayloadOptions = {}): Buffer[] {
  const maxPayloadSize = options.maxPayloadSize ?? DEFAULT_MAX_PAYLOAD_SIZE;
  const aggregate = options.aggregate ?? true;
  if (!Number.isInteger(maxPayloadSize) || maxPayloadSize < 3) {
    throw new RangeError(`maxPayloadSize must be an integer >= 3, got ${maxPayloadSize}`);
  }
  const payloads: Buffer[] = [];
  let pending: Buffer[] = [];
  let pendingSize = 1; // the STAP-A NAL header
  const flush = (): void => {
    const [only] = pending;
    if (pending.length === 1 && only !== undefined) payloads.push(only);
    else if (pending.length > 1) payloads.push(aggregateUnits(pending));
    pending = [];
    pendingSize = 1;
  };
  for (const nal of nalUnits) {
    if (nal.length === 0) continue;
    if (nal.length > maxPayloadSize) {
      flush();
      payloads.push(...fragment(nal, maxPayloadSize));
      continue;
    }
    if (!aggregate) {
      payloads.push(nal);
      continue;
    }
    if (pendingSize + 2 + nal.length > maxPayloadSize) flush();
    pending.push(nal);
    pendingSize += 2 + nal.length;
  }
  flush();
  return payloads;
}

/** RTP timestamp of frame `frameIndex` at `fps`, on the 90 kHz clock, offset by `base`, mod 2^32. */
export function rtpTimestampForFrame(frameIndex: number, fps: number, base = 0): number {
  return (base + Math.round((frameIndex * H264_CLOCK_RATE) / fps)) % 2 ** 32;
}

export interface PacketizerOptions {
  /** Payload type written in the header (default 96); werift's sender rewrites it anyway. */
  readonly payloadType?: number;
  /** SSRC written in the header (default 0); werift's sender sets its own. */
  readonly ssrc?: number;
  /** First sequence number, 0..65535 (RFC 3550 wants it random). */
  readonly initialSequenceNumber: number;
}

/** Turns access-unit payloads into RTP packets: consecutive sequence numbers wrapping at 65535,
 *  one timestamp per access unit, marker bit on its last packet (RFC 6184 §5.1). */
export class H264RtpPacketizer {
  private sequenceNumber: number;
  private readonly payloadType: number;
  private readonly ssrc: number;

  constructor(options: PacketizerOptions) {
    this.sequenceNumber = options.initialSequenceNumber & 0xffff;
    this.payloadType = options.payloadType ?? 96;
    this.ssrc = options.ssrc ?? 0;
  }

  /** The sequence number the next packet will carry. */
  get nextSequenceNumber(): number {
    return this.sequenceNumber;
  }

  packetize(payloads: readonly Buffer[], timestamp: number): RtpPacket[] {
    return payloads.map((payload, i) => {
      const header = new RtpHeader({
        payloadType: this.payloadType,
        sequenceNumber: this.sequenceNumber,
        timestamp: timestamp >>> 0,
        ssrc: this.ssrc,
        marker: i === payloads.length - 1,
      });
      this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
      return new RtpPacket(header, payload);
    });
  }
}
