// Records every RTCP packet werift sends from this process, as the bytes that go into SRTCP, so a
// test can hold them to libwebrtc's rules (strict-rtcp.ts). It wraps RTCDtlsTransport.sendRtcp,
// which every RTCP writer in werift 0.24.4 goes through (sender reports, receiver reports, NACK,
// PLI, REMB, and the relay's own bytes). With the peers in other processes (chromium), what is
// captured is the relay's alone.
import { RTCDtlsTransport, type RtcpPacket } from 'werift';
import { MalformedRtcp, parseRtcpStrictly, type RtcpBlock } from './strict-rtcp';

export interface RtcpCapture {
  /** Every packet sent since the capture began, in order. */
  readonly packets: Buffer[];
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
  prototype.sendRtcp = function sendRtcp(this: unknown, sent: RtcpPacket[]) {
    packets.push(Buffer.concat(sent.map((p) => p.serialize())));
    return original.call(this, sent);
  };
  const parseAll = () => packets.map((p) => parseRtcpStrictly(p));
  return {
    packets,
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
