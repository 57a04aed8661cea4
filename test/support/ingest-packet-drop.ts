// Loss on the relay's ingest that NACK cannot repair (issue 21): drops a run of the app's video
// packets as werift receives them in this process, and every retransmission of them. The app
// resends a NACKed packet on its RTX SSRC (the sequence number it repairs in the payload's first
// two bytes, RFC 4588) and werift unwraps it back into the stream, so both are caught at the one
// place every SRTP packet passes: the DTLS transport's onRtp event, after decryption. The relay
// then NACKs the hole until it gives up, and only a keyframe fills it.
import { RTCDtlsTransport, type RtpPacket } from 'werift';

/** The app's video SSRC and its RTX SSRC (from the offer's `a=ssrc-group:FID`). */
export interface AppVideoSsrcs {
  video: number;
  rtx: number | undefined;
}

/** The first `a=ssrc-group:FID <video> <rtx>` of the offer, or the first `a=ssrc` of its video section. */
export function appVideoSsrcs(offerSdp: string): AppVideoSsrcs {
  const video = offerSdp.split(/^m=/m).find((section) => section.startsWith('video'));
  if (video === undefined) throw new Error('the offer has no video section');
  const group = /^a=ssrc-group:FID (\d+) (\d+)/m.exec(video);
  if (group) return { video: Number(group[1]), rtx: Number(group[2]) };
  const ssrc = /^a=ssrc:(\d+) /m.exec(video);
  if (!ssrc) throw new Error('the offer names no video SSRC');
  return { video: Number(ssrc[1]), rtx: undefined };
}

export interface DroppedRun {
  /** Sequence numbers of the video packets dropped. */
  sequenceNumbers: number[];
  /** When the last of them was dropped, epoch ms. */
  endedAtMs: number;
}

export interface IngestPacketDrop {
  /** Drops the next `count` video packets that arrive, and every retransmission of them; resolves once the run is dropped. */
  dropRun(count: number): Promise<DroppedRun>;
  /** Retransmissions of dropped packets dropped so far. */
  readonly retransmissionsDropped: number;
  /** Lets every packet through again and restores werift (transports already started stay wrapped, inert). */
  stop(): void;
}

type Transport = { onRtp: { execute: (rtp: RtpPacket) => void } };

/** Wraps werift's SRTP receive path; call before the relay's ingest connects (it wraps transports as they start SRTP). */
export function dropAtIngest(ssrcs: AppVideoSsrcs): IngestPacketDrop {
  type StartSrtp = (this: Transport) => void;
  const prototype = RTCDtlsTransport.prototype as unknown as { startSrtp: StartSrtp };
  const original = prototype.startSrtp;
  const dropped = new Set<number>();
  let run: { remaining: number; sequenceNumbers: number[]; done: (run: DroppedRun) => void } | undefined;
  let active = true;
  let retransmissionsDropped = 0;

  const drops = (rtp: RtpPacket): boolean => {
    const { ssrc, sequenceNumber } = rtp.header;
    if (ssrc === ssrcs.video) {
      if (run && run.remaining > 0) {
        dropped.add(sequenceNumber);
        run.sequenceNumbers.push(sequenceNumber);
        if (--run.remaining === 0) {
          run.done({ sequenceNumbers: run.sequenceNumbers, endedAtMs: performance.timeOrigin + performance.now() });
          run = undefined;
        }
        return true;
      }
      return false;
    }
    if (ssrc === ssrcs.rtx && rtp.payload.length >= 2 && dropped.has(rtp.payload.readUInt16BE(0))) {
      retransmissionsDropped++;
      return true;
    }
    return false;
  };

  prototype.startSrtp = function startSrtp(this: Transport) {
    original.call(this);
    const execute = this.onRtp.execute;
    this.onRtp.execute = (rtp) => {
      if (active && drops(rtp)) return;
      execute(rtp);
    };
  };

  return {
    dropRun: (count) =>
      new Promise<DroppedRun>((resolve) => {
        if (run) throw new Error('a run is already being dropped');
        run = { remaining: count, sequenceNumbers: [], done: resolve };
      }),
    get retransmissionsDropped() {
      return retransmissionsDropped;
    },
    stop: () => {
      active = false;
      prototype.startSrtp = original;
    },
  };
}
