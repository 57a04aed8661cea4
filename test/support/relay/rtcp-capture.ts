// Records every RTCP packet werift sends from this process, as the bytes that go into SRTCP, so a
// test can hold them to libwebrtc's rules (strict-rtcp.ts). It wraps RTCDtlsTransport.sendRtcp,
// which every RTCP writer in werift 0.24.4 goes through (sender reports, receiver reports, NACK,
// PLI, REMB, and the relay's own bytes). With the peers in other processes (chromium), what is
// captured is the relay's alone. Each packet carries the time werift was handed it, so a test can
// tell when the relay asked the app for a keyframe.
import { RTCDtlsTransport, type RtcpPacket } from 'werift';
import { MalformedRtcp, parseRtcpStrictly, type RtcpBlock } from './strict-rtcp';

export interface RtcpCapture {
  /** Every packet sent since the capture began, in order. */
  readonly packets: Buffer[];
  /** When each packet was handed to werift, epoch ms (performance.timeOrigin + performance.now()); parallel to packets. */
  readonly sentAtMs: number[];
  /**
   * When each packet carrying a keyframe request (PLI or FIR) was sent, epoch ms. Found by walking
   * the block headers without judging them, so a request in a malformed compound packet still
   * counts as sent (what the app then does with it is the test's question).
   */
  keyframeRequestTimes(): number[];
  /** Each packet's blocks, parsed strictly; throws MalformedRtcp naming the first bad one. */
  parseAll(): RtcpBlock[][];
  /** How many blocks of each name were sent ('PLI', 'SR', …). */
  countBlocks(): Record<string, number>;
  /** Restores werift's sendRtcp. */
  stop(): void;
}

export function captureRtcp(): RtcpCapture {
  type SendRtcp = (this: unknown, packets: RtcpPacket[]) => Promise<unknown>;
  const prototype = RTCDtlsTransport.prototype as unknown as { sendRtcp: SendRtcp };
  const original = prototype.sendRtcp;
  const packets: Buffer[] = [];
  const sentAtMs: number[] = [];
  prototype.sendRtcp = function sendRtcp(this: unknown, sent: RtcpPacket[]) {
    packets.push(Buffer.concat(sent.map((p) => p.serialize())));
    sentAtMs.push(performance.timeOrigin + performance.now());
    return original.call(this, sent);
  };
  const parseAll = () => packets.map((p) => parseRtcpStrictly(p));
  return {
    packets,
    sentAtMs,
    keyframeRequestTimes: () => sentAtMs.filter((_, i) => carriesKeyframeRequest(packets[i]!)),
    parseAll,
    countBlocks: () => {
      const counts: Record<string, number> = {};
      for (const packet of packets) {
        try {
          for (const block of parseRtcpStrictly(packet)) counts[block.name] = (counts[block.name] ?? 0) + 1;
        } catch (err) {
          if (!(err instanceof MalformedRtcp)) throw err;
          counts.malformed = (counts.malformed ?? 0) + 1;
        }
      }
      return counts;
    },
    stop: () => {
      prototype.sendRtcp = original;
    },
  };
}

/** A PSFB block with FMT 1 (PLI) or 4 (FIR) anywhere in the packet, headers walked by their length fields (not judged). */
export function carriesKeyframeRequest(packet: Buffer): boolean {
  for (let offset = 0; offset + 4 <= packet.length; offset += 4 + packet.readUInt16BE(offset + 2) * 4) {
    const format = packet[offset]! & 0x1f;
    if (packet[offset + 1] === 206 && (format === 1 || format === 4)) return true;
  }
  return false;
}
