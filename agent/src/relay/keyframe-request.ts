// The bytes of a keyframe request to the app: a PLI on its own, or — only for an app that offered
// `ccm fir` without `nack pli` — a FIR on its own. Never both in one compound packet, and never
// werift's serialisation: werift 0.24.4 writes a FIR's length field one word short
// (`FullIntraRequest.length` subtracts the header its payload never had), libwebrtc rejects the
// block and drops the whole compound packet, PLI included (issue 21). Our own bytes go out as they
// are; the strict parser in test/support/relay/strict-rtcp.ts checks them with libwebrtc's rules.
import type { RtcpPacket } from 'werift';

/** Which request the app understands, from its offer's rtcp-fb lines. */
export interface KeyframeFeedback {
  pli: boolean;
  fir: boolean;
}

/** One keyframe request packet, or undefined when the app offered neither PLI nor FIR. */
export function keyframeRequestBytes(feedback: KeyframeFeedback, senderSsrc: number, mediaSsrc: number, firSequence: number): Buffer | undefined {
  if (feedback.pli) return payloadSpecificFeedback(1, senderSsrc, mediaSsrc, Buffer.alloc(0));
  if (!feedback.fir) return undefined;
  // FCI: target SSRC, command sequence number, 3 reserved bytes; the media SSRC field is 0 (RFC 5104 §4.3.1).
  const fci = Buffer.alloc(8);
  fci.writeUInt32BE(mediaSsrc, 0);
  fci.writeUInt8(firSequence & 0xff, 4);
  return payloadSpecificFeedback(4, senderSsrc, 0, fci);
}

/**
 * Bytes werift sends exactly as given: its `RTCDtlsTransport.sendRtcp` only calls `serialize()` on
 * each packet before SRTCP protection.
 */
export function rtcpBytes(bytes: Buffer): RtcpPacket {
  return { serialize: () => bytes } as unknown as RtcpPacket;
}

/** One RTCP payload-specific feedback packet (PT 206): length field = 32-bit words − 1, header included. */
export function payloadSpecificFeedback(format: number, senderSsrc: number, mediaSsrc: number, fci: Buffer): Buffer {
  const packet = Buffer.alloc(12 + fci.length);
  packet.writeUInt8(0x80 | format, 0);
  packet.writeUInt8(206, 1);
  packet.writeUInt16BE(packet.length / 4 - 1, 2);
  packet.writeUInt32BE(senderSsrc, 4);
  packet.writeUInt32BE(mediaSsrc, 8);
  fci.copy(packet, 12);
  return packet;
}
