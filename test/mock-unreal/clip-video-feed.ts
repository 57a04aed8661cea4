// One player's view of the looping clip: its own position, RTP sequence numbers and timestamp
// base, over the shared pre-built payloads. It starts at a keyframe and jumps to the next keyframe
// when asked (PLI, IFrameRequest), which is what an encoder answering a keyframe request looks like.
import type { RtpPacket } from 'werift';
import { nextKeyframeIndex, type H264Clip } from './h264-clip';
import { H264RtpPacketizer, rtpTimestampForFrame } from './h264-rtp';
import type { FrameTick } from './frame-clock';

export interface ClipVideoFeedOptions {
  /** Uniform [0, 1) source for the initial sequence number and timestamp base (default Math.random). */
  readonly random?: () => number;
  /** Monotonic milliseconds (default performance.now). */
  readonly now?: () => number;
  /**
   * A keyframe request within this many ms of the last one honoured is ignored (default 300):
   * libwebrtc's rule (EncoderRtcpFeedback, kMinKeyframeSendIntervalMs). The stream's own opening
   * keyframe does not count, so the first request is always honoured.
   */
  readonly keyframeRequestCooldownMs?: number;
}

export interface ClipVideoFeedStats {
  framesSent: number;
  keyframesSent: number;
  packetsSent: number;
  payloadBytesSent: number;
  keyframeRequestsHonoured: number;
  keyframeRequestsIgnored: number;
}

export class ClipVideoFeed {
  readonly stats: ClipVideoFeedStats = {
    framesSent: 0,
    keyframesSent: 0,
    packetsSent: 0,
    payloadBytesSent: 0,
    keyframeRequestsHonoured: 0,
    keyframeRequestsIgnored: 0,
  };
  private readonly packetizer: H264RtpPacketizer;
  private readonly timestampBase: number;
  private readonly now: () => number;
  private readonly cooldownMs: number;
  private active = false;
  private cursor = 0;
  private keyframePending = true;
  private lastHonouredRequestAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clip: H264Clip,
    private readonly sink: (packet: RtpPacket) => void,
    options: ClipVideoFeedOptions = {},
  ) {
    const random = options.random ?? Math.random;
    this.packetizer = new H264RtpPacketizer({ initialSequenceNumber: Math.floor(random() * 0x10000) });
    this.timestampBase = Math.floor(random() * 2 ** 32);
    this.now = options.now ?? (() => performance.now());
    this.cooldownMs = options.keyframeRequestCooldownMs ?? 300;
  }

  /** Starts sending on the next tick, from a keyframe. */
  activate(): void {
    if (this.active) return;
    this.active = true;
    this.keyframePending = true;
  }

  deactivate(): void {
    this.active = false;
  }

  /** Asks for a keyframe on the next tick. Returns false when one is already coming or a request was honoured too recently. */
  requestKeyframe(): boolean {
    const now = this.now();
    if (this.keyframePending || now - this.lastHonouredRequestAt < this.cooldownMs) {
      this.stats.keyframeRequestsIgnored++;
      return false;
    }
    this.keyframePending = true;
    this.lastHonouredRequestAt = now;
    this.stats.keyframeRequestsHonoured++;
    return true;
  }

  /** Sends the frame at the current position with the tick's timestamp, then advances. */
  onTick(tick: FrameTick): void {
    if (!this.active) return;
    if (tick.skipped || this.keyframePending) {
      this.cursor = nextKeyframeIndex(this.clip, this.cursor);
      this.keyframePending = false;
    }
    const frame = this.clip.frames[this.cursor];
    if (frame === undefined) return;
    const timestamp = rtpTimestampForFrame(tick.index, this.clip.fps, this.timestampBase);
    for (const packet of this.packetizer.packetize(frame.payloads, timestamp)) {
      this.stats.packetsSent++;
      this.stats.payloadBytesSent += packet.payload.length;
      this.sink(packet);
    }
    this.stats.framesSent++;
    if (frame.keyframe) this.stats.keyframesSent++;
    this.cursor = (this.cursor + 1) % this.clip.frames.length;
  }
}
