// REMB toward the app (without transport-cc libwebrtc has only REMB and loss to go on, §5.7); the
// value comes from the bitrate policy (bitrate-policy.ts).
import { ReceiverEstimatedMaxBitrate, RtcpPayloadSpecificFeedback } from 'werift';

/** A REMB packet (draft-alvestrand-rmcat-remb) for the given media SSRCs; bps is rounded down to 18-bit mantissa precision. */
export function rembPacket(senderSsrc: number, mediaSsrcs: number[], bps: number): RtcpPayloadSpecificFeedback {
  let mantissa = Math.max(0, Math.floor(bps));
  let exponent = 0;
  while (mantissa > 0x3ffff) {
    mantissa = Math.floor(mantissa / 2);
    exponent++;
  }
  return new RtcpPayloadSpecificFeedback({
    feedback: new ReceiverEstimatedMaxBitrate({
      senderSsrc,
      mediaSsrc: 0,
      ssrcNum: mediaSsrcs.length,
      ssrcFeedbacks: mediaSsrcs,
      brExp: exponent,
      brMantissa: mantissa,
      bitrate: BigInt(mantissa) << BigInt(exponent),
    }),
  });
}
