// A strict RTCP parser for tests: libwebrtc's rules (modules/rtp_rtcp/source/rtcp_receiver.cc
// ParseCompoundPacket and the rtcp_packet/*::Parse functions), which a packaged Unreal app applies
// to every RTCP packet the relay sends it. libwebrtc drops a WHOLE compound packet when any block
// in it is malformed — a bad FIR voids the PLI beside it (issue 21) — so a test fails on the first
// bad block, naming it. Blocks of types libwebrtc skips are reported but not judged.

export interface RtcpBlock {
  /** Packet type (200 SR, 201 RR, 202 SDES, 203 BYE, 205 RTPFB, 206 PSFB, …). */
  type: number;
  /** The header's count or FMT field. */
  countOrFormat: number;
  /** Short name: 'SR', 'RR', 'SDES', 'BYE', 'NACK', 'PLI', 'FIR', 'REMB', … or 'PT<n>/<fmt>'. */
  name: string;
  /** The header's length field (32-bit words minus one). */
  lengthField: number;
  /** The block's bytes, header included. */
  bytes: Buffer;
}

export class MalformedRtcp extends Error {
  constructor(
    readonly blockIndex: number,
    reason: string,
    readonly packet: Buffer,
  ) {
    super(`RTCP block ${blockIndex} is malformed (libwebrtc drops the whole packet): ${reason}; packet ${packet.toString('hex')}`);
  }
}

const HEADER = 4;
const COMMON_FEEDBACK = 8;

/** Parses one (compound) RTCP packet as libwebrtc would; throws MalformedRtcp where libwebrtc rejects it. */
export function parseRtcpStrictly(packet: Buffer): RtcpBlock[] {
  if (packet.length === 0) throw new MalformedRtcp(0, 'empty packet', packet);
  const blocks: RtcpBlock[] = [];
  let offset = 0;
  while (offset < packet.length) {
    const index = blocks.length;
    const fail = (reason: string): never => {
      throw new MalformedRtcp(index, reason, packet);
    };
    const remaining = packet.length - offset;
    if (remaining < HEADER) fail(`${remaining} bytes left, fewer than a header`);
    const first = packet[offset]!;
    if (first >> 6 !== 2) fail(`version ${first >> 6}, not 2`);
    const padded = (first & 0x20) !== 0;
    const countOrFormat = first & 0x1f;
    const type = packet[offset + 1]!;
    const lengthField = packet.readUInt16BE(offset + 2);
    const blockSize = HEADER + lengthField * 4;
    if (blockSize > remaining) fail(`length field ${lengthField} says ${blockSize} bytes, only ${remaining} are left`);
    let payloadSize = lengthField * 4;
    if (padded) {
      if (payloadSize === 0) fail('padding bit set on an empty payload');
      const paddingSize = packet[offset + blockSize - 1]!;
      if (paddingSize === 0) fail('padding bit set with a padding size of 0');
      if (paddingSize > payloadSize) fail(`padding size ${paddingSize} exceeds the payload (${payloadSize})`);
      payloadSize -= paddingSize;
    }
    const payload = packet.subarray(offset + HEADER, offset + HEADER + payloadSize);
    const name = checkBlock(type, countOrFormat, payload, fail);
    blocks.push({ type, countOrFormat, name, lengthField, bytes: packet.subarray(offset, offset + blockSize) });
    offset += blockSize;
  }
  return blocks;
}

function checkBlock(type: number, countOrFormat: number, payload: Buffer, fail: (reason: string) => never): string {
  const size = payload.length;
  switch (type) {
    case 200: {
      if (size < 24 + countOrFormat * 24) fail(`SR of ${size} bytes cannot hold ${countOrFormat} report blocks`);
      return 'SR';
    }
    case 201: {
      if (size < 4 + countOrFormat * 24) fail(`RR of ${size} bytes cannot hold ${countOrFormat} report blocks`);
      return 'RR';
    }
    case 202:
      checkSdes(countOrFormat, payload, fail);
      return 'SDES';
    case 203: {
      if (size < countOrFormat * 4) fail(`BYE of ${size} bytes cannot hold ${countOrFormat} SSRCs`);
      if (size > countOrFormat * 4) {
        const reasonLength = payload[countOrFormat * 4]!;
        if (countOrFormat * 4 + 1 + reasonLength > size) fail(`BYE reason of ${reasonLength} bytes runs past the payload`);
      }
      return 'BYE';
    }
    case 205:
      if (countOrFormat === 1) {
        if (size < COMMON_FEEDBACK + 4) fail(`NACK of ${size} bytes holds no item`);
        return 'NACK';
      }
      return `PT205/${countOrFormat}`;
    case 206:
      switch (countOrFormat) {
        case 1:
          if (size < COMMON_FEEDBACK) fail(`PLI of ${size} bytes, fewer than 8`);
          return 'PLI';
        case 4:
          if (size < COMMON_FEEDBACK + 8) fail(`FIR of ${size} bytes holds no FCI entry (16 bytes at least)`);
          if ((size - COMMON_FEEDBACK) % 8 !== 0) fail(`FIR FCI of ${size - COMMON_FEEDBACK} bytes is not whole 8-byte entries`);
          return 'FIR';
        case 15:
          return checkApplicationFeedback(payload, fail);
        default:
          return `PT206/${countOrFormat}`;
      }
    default:
      return `PT${type}/${countOrFormat}`;
  }
}

/** PSFB FMT 15: a REMB is judged (a bad one is ignored by libwebrtc, so the bitrate never lands). */
function checkApplicationFeedback(payload: Buffer, fail: (reason: string) => never): string {
  if (payload.length < 16 || payload.toString('latin1', 8, 12) !== 'REMB') return 'AFB';
  const ssrcCount = payload[12]!;
  if (payload.length !== COMMON_FEEDBACK + (2 + ssrcCount) * 4) fail(`REMB of ${payload.length} bytes does not hold exactly ${ssrcCount} SSRCs`);
  const exponent = payload[13]! >> 2;
  const mantissa = ((payload[13]! & 0x03) << 16) | payload.readUInt16BE(14);
  if (mantissa * 2 ** exponent > Number.MAX_SAFE_INTEGER) fail(`REMB bitrate ${mantissa}·2^${exponent} overflows`);
  return 'REMB';
}

/**
 * SDES (rtcp_packet/sdes.cc): 32-bit aligned; each chunk at least 8 bytes, an SSRC, items each with
 * room for the END item after it, at most one CNAME, then padding to a 32-bit boundary.
 */
function checkSdes(chunkCount: number, payload: Buffer, fail: (reason: string) => never): void {
  if (payload.length % 4 !== 0) fail(`SDES payload of ${payload.length} bytes is not 32-bit aligned`);
  let at = 0;
  for (let chunk = 0; chunk < chunkCount; chunk++) {
    if (payload.length - at < 8) fail(`SDES chunk ${chunk} has ${payload.length - at} bytes left, fewer than 8`);
    at += 4;
    let cnames = 0;
    for (;;) {
      const itemType = payload[at++]!;
      if (itemType === 0) break;
      if (at >= payload.length) fail(`SDES chunk ${chunk} ends inside an item`);
      const itemLength = payload[at++]!;
      if (at + itemLength + 1 > payload.length) fail(`SDES chunk ${chunk} item of ${itemLength} bytes leaves no room for END`);
      if (itemType === 1 && ++cnames > 1) fail(`SDES chunk ${chunk} has a second CNAME`);
      at += itemLength;
    }
    at += (4 - (at % 4)) % 4;
  }
}
