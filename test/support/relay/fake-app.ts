// A stand-in for the Unreal app: a werift peer on 127.0.0.1 offering sendonly H.264 (several
// variants, like libwebrtc), Opus and one data channel; it writes real H.264 RTP, sends Unreal's
// start-up messages (255 ×2, 7) when the channel opens, and records RTCP and messages it gets.
// It reads RTCP as libwebrtc does: a compound packet with one malformed block (strict-rtcp.ts) is
// dropped whole and counted in `rtcp.malformed`, so a bad block beside a PLI hides the PLI here too.
import {
  GenericNack,
  MediaStreamTrack,
  ReceiverEstimatedMaxBitrate,
  PictureLossIndication,
  RTCPeerConnection,
  RtcpPayloadSpecificFeedback,
  RtcpTransportLayerFeedback,
  RtpHeader,
  RtpPacket,
  useFIR,
  useH264,
  useNACK,
  useOPUS,
  usePLI,
  useREMB,
  useVP8,
  type RTCDataChannel,
  type RTCPeerConnectionConfig,
  type RTCRtpSender,
} from 'werift';
import { accessUnits, packetizeAccessUnit, TEST_PATTERN_H264, type H264RtpPayload } from './h264-fixture';
import { parseRtcpStrictly } from './strict-rtcp';

/** The PT of the one codec the relay must pick: H.264 42e01f packetization-mode=1, offered third. */
export const APP_H264_42E01F_PT = 102;

export const PROTOCOL_TO_STREAMER = utf16Message(255, '{"Direction":0,"IFrameRequest":{"id":0,"structure":[]}}');
export const PROTOCOL_FROM_STREAMER = utf16Message(255, '{"Direction":1,"InitialSettings":{"id":7,"structure":[]}}');
export const INITIAL_SETTINGS = utf16Message(7, '{"PixelStreaming":{"AllowPixelStreamingCommands":false}}');
export const STARTUP_MESSAGES: readonly Buffer[] = [PROTOCOL_TO_STREAMER, PROTOCOL_FROM_STREAMER, INITIAL_SETTINGS];

export interface AppRtcp {
  pli: number;
  /** Sequence numbers of each generic NACK received, in order. */
  nacks: number[][];
  fir: number;
  /** The command sequence number of each FIR entry received, in order. */
  firSequenceNumbers: number[];
  /** REMB bitrates received, bps, in order. */
  remb: number[];
  /** Why each dropped packet was malformed (libwebrtc drops such a packet whole). */
  malformed: string[];
}

/** Which keyframe requests the app offers for its H.264 (libwebrtc offers both). */
export type AppKeyframeFeedback = 'pli and fir' | 'fir only';

/** The werift settings both fake peers share with the relay's ingest (werift-notes §7.3). */
export function loopbackPeer(): RTCPeerConnectionConfig {
  return { iceServers: [], bundlePolicy: 'max-bundle', iceUseIpv4: true, iceUseIpv6: false, iceAdditionalHostAddresses: ['127.0.0.1'] };
}

export class FakeApp {
  readonly pc: RTCPeerConnection;
  readonly channel: RTCDataChannel;
  readonly rtcp: AppRtcp = { pli: 0, fir: 0, firSequenceNumbers: [], remb: [], nacks: [], malformed: [] };
  /** Messages the app received on its channel. */
  readonly messages: Buffer[] = [];
  /** Payloads (and PTs) of the RTP the app wrote, in order. */
  readonly sent: { payloadType: number; payload: Buffer }[] = [];
  private videoSender: RTCRtpSender;
  private audioSender: RTCRtpSender;
  private readonly frames: H264RtpPayload[][];
  private timer: NodeJS.Timeout | undefined;
  private sequenceNumber = Math.floor(Math.random() * 65_536);
  private timestamp = Math.floor(Math.random() * 2 ** 32);
  private frameIndex = 0;
  private readonly lost = new Map<number, { payload: Buffer; marker: boolean; timestamp: number }>();
  private readonly listeners = new Set<() => void>();

  /** startupMessages: what the app sends when its channel opens (default STARTUP_MESSAGES); sendStartupMessages false: nothing. */
  constructor(options: { sendStartupMessages?: boolean; startupMessages?: readonly Buffer[]; keyframeFeedback?: AppKeyframeFeedback } = {}) {
    const keyframeFeedback = options.keyframeFeedback === 'fir only' ? [useFIR()] : [usePLI(), useFIR()];
    this.pc = new RTCPeerConnection({
      ...loopbackPeer(),
      codecs: {
        // Like libwebrtc: VP8 and H.264 variants first, the one the relay wants third among H.264.
        video: [
          useVP8({ payloadType: 96 }),
          useH264({ payloadType: 100, parameters: 'level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f' }),
          useH264({ payloadType: 101, parameters: 'level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f' }),
          useH264({
            payloadType: APP_H264_42E01F_PT,
            rtcpFeedback: [useNACK(), ...keyframeFeedback, useREMB()],
            parameters: 'level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f',
          }),
          useH264({ payloadType: 127, parameters: 'level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f' }),
        ],
        audio: [useOPUS({ payloadType: 111 })],
      },
    });
    this.audioSender = this.pc.addTransceiver(new MediaStreamTrack({ kind: 'audio' }), { direction: 'sendonly' }).sender;
    this.videoSender = this.pc.addTransceiver(new MediaStreamTrack({ kind: 'video' }), { direction: 'sendonly' }).sender;
    this.channel = this.pc.createDataChannel('datachannel', { ordered: true });
    this.channel.onMessage.subscribe((data) => {
      this.messages.push(Buffer.isBuffer(data) ? Buffer.from(data) : Buffer.from(data, 'utf8'));
      this.notify();
    });
    if (options.sendStartupMessages ?? true) {
      this.channel.stateChanged.subscribe((state) => {
        if (state === 'open') for (const m of options.startupMessages ?? STARTUP_MESSAGES) this.channel.send(m);
      });
    }
    this.pc.connectionStateChange.subscribe(() => this.notify());
    this.frames = accessUnits(TEST_PATTERN_H264).map((au) => packetizeAccessUnit(au));
  }

  async offer(): Promise<string> {
    await this.pc.setLocalDescription(await this.pc.createOffer());
    const sdp = this.pc.localDescription?.sdp;
    if (sdp === undefined) throw new Error('no offer');
    return sdp;
  }

  async acceptAnswer(sdp: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp });
    this.judgeRtcpStrictly(this.videoSender.dtlsTransport);
    this.videoSender.dtlsTransport.onRtcp.subscribe((packet) => {
      if (packet instanceof RtcpTransportLayerFeedback && packet.feedback instanceof GenericNack) {
        this.rtcp.nacks.push([...packet.feedback.lost]);
        this.notify();
        return;
      }
      if (!(packet instanceof RtcpPayloadSpecificFeedback)) return;
      const { feedback } = packet;
      if (feedback instanceof ReceiverEstimatedMaxBitrate) this.rtcp.remb.push(Number(feedback.bitrate));
      else if (feedback instanceof PictureLossIndication) this.rtcp.pli++;
      else if (feedback.count === 4) {
        // werift does not export FullIntraRequest; FMT 4 is one.
        this.rtcp.fir++;
        const entries = (feedback as unknown as { fir: { sequenceNumber: number }[] }).fir;
        this.rtcp.firSequenceNumbers.push(...entries.map((entry) => entry.sequenceNumber));
      }
      this.notify();
    });
  }

  /**
   * Checks each decrypted RTCP packet with libwebrtc's rules before werift parses it; a malformed one
   * is recorded and handed on empty, so nothing in it counts. werift creates the transport's SRTCP
   * session when DTLS completes, so the property is wrapped as it is set.
   */
  private judgeRtcpStrictly(transport: object): void {
    type Srtcp = { decrypt(data: Buffer): Buffer };
    let session: Srtcp | undefined;
    // Everything but decrypt (encrypt: the app's own RTCP) goes to werift's session untouched.
    const judge = (inner: Srtcp): Srtcp => {
      const decrypt = (data: Buffer): Buffer => {
        const plain = inner.decrypt(data);
        try {
          parseRtcpStrictly(plain);
          return plain;
        } catch (err) {
          this.rtcp.malformed.push((err as Error).message);
          this.notify();
          return Buffer.alloc(0);
        }
      };
      return new Proxy(inner, {
        get: (target, property) => {
          if (property === 'decrypt') return decrypt;
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
    };
    const current = (transport as { srtcp?: Srtcp }).srtcp;
    if (current !== undefined) session = judge(current);
    Object.defineProperty(transport, 'srtcp', {
      configurable: true,
      get: () => session,
      set: (value: Srtcp | undefined) => {
        session = value === undefined ? undefined : judge(value);
      },
    });
  }

  /** Calls listener after each keyframe request, REMB, channel message or connection state change; returns unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** The payload type the app's video sender uses after negotiation. */
  get videoPayloadType(): number | undefined {
    return this.videoSender.codec?.payloadType;
  }

  /** Writes the test pattern as RTP at fps until stop(). */
  startVideo(fps = 30): void {
    this.stop();
    this.timer = setInterval(() => this.writeFrame(), 1000 / fps);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Writes one access unit (looping over the pattern); returns the packets' payloads. */
  writeFrame(frame: H264RtpPayload[] | undefined = this.frames[this.frameIndex++ % this.frames.length]): Buffer[] {
    if (frame === undefined) return [];
    this.nextFrame();
    for (const { payload, marker } of frame) this.writeVideo(payload, marker);
    return frame.map((p) => p.payload);
  }

  /**
   * Loses the next video packet on the way out (as a full socket buffer on the receiving host
   * would): its sequence number is used, nothing is sent, and resend() sends it later.
   */
  loseNextVideo(payload: Buffer, marker: boolean): number {
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    this.lost.set(this.sequenceNumber, { payload, marker, timestamp: this.timestamp });
    return this.sequenceNumber;
  }

  /** Sends a packet kept by loseNextVideo under its own sequence number (a retransmission). */
  resend(sequenceNumber: number): void {
    const lost = this.lost.get(sequenceNumber);
    if (lost === undefined) return;
    const header = new RtpHeader({ payloadType: this.videoPayloadType ?? 0, sequenceNumber, timestamp: lost.timestamp, marker: lost.marker });
    header.ssrc = this.videoSender.ssrc;
    void this.videoSender.dtlsTransport.sendRtp(lost.payload, header);
  }

  /** Writes the pattern's keyframe (its first access unit: SPS, PPS, IDR), as an app answering a PLI does. */
  writeKeyframe(): Buffer[] {
    return this.writeFrame(this.frames[0]);
  }

  /** Moves the RTP timestamp on by one frame (30 fps); writeVideo then writes that frame's packets. */
  nextFrame(): void {
    this.timestamp = (this.timestamp + 3000) >>> 0;
  }

  /** One video RTP packet; with payloadType set, bypasses the sender (which would rewrite it). */
  writeVideo(payload: Buffer, marker: boolean, payloadType?: number): void {
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    const header = new RtpHeader({ payloadType: payloadType ?? this.videoPayloadType ?? 0, sequenceNumber: this.sequenceNumber, timestamp: this.timestamp, marker });
    if (payloadType === undefined) {
      this.sent.push({ payloadType: header.payloadType, payload });
      void this.videoSender.sendRtp(new RtpPacket(header, payload));
    } else {
      header.ssrc = this.videoSender.ssrc;
      this.sent.push({ payloadType, payload });
      void this.videoSender.dtlsTransport.sendRtp(payload, header);
    }
  }

  writeAudio(payload: Buffer): void {
    const header = new RtpHeader({ payloadType: 111, sequenceNumber: this.sequenceNumber, timestamp: this.timestamp, marker: false });
    void this.audioSender.sendRtp(new RtpPacket(header, payload));
  }

  send(message: Buffer): void {
    this.channel.send(message);
  }

  async close(): Promise<void> {
    this.stop();
    this.listeners.clear();
    await this.pc.close();
  }
}

/** A FromStreamer Pixel Streaming message: id byte + UTF-16LE text. */
export function utf16Message(id: number, text: string): Buffer {
  return Buffer.concat([Buffer.from([id]), Buffer.from(text, 'utf16le')]);
}
