// REMB toward the app (without transport-cc libwebrtc has only REMB and loss to go on, §5.7): the
// lowest recent viewer estimate, clamped to the project's [minBps, maxBps]; maxBps when no viewer
// has reported one.
import { ReceiverEstimatedMaxBitrate, RtcpPayloadSpecificFeedback } from 'werift';

/** A viewer's REMB counts for this long after it arrived, in ms. */
export const VIEWER_ESTIMATE_TTL_MS = 5_000;

export interface ViewerEstimate {
  bps: number;
  /** Clock time it arrived, ms. */
  atMs: number;
}

export function rembTargetBps(estimates: Iterable<ViewerEstimate>, nowMs: number, bitrate: { minBps: number; maxBps: number }): number {
  let lowest = Infinity;
  for (const e of estimates) if (nowMs - e.atMs <= VIEWER_ESTIMATE_TTL_MS) lowest = Math.min(lowest, e.bps);
  const wanted = Number.isFinite(lowest) ? lowest : bitrate.maxBps;
  return Math.min(bitrate.maxBps, Math.max(bitrate.minBps, Math.floor(wanted)));
}

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
