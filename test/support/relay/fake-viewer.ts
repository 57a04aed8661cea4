// A stand-in for a browser viewer in relay tests: a werift peer on 127.0.0.1 that answers the
// relay's offer (H.264 42e01f and Opus, like Chromium), records the RTP and channel messages it
// gets, can send a message the moment its channel opens, and sends PLI / FIR / REMB on demand.
import {
  GenericNack,
  RTCPeerConnection,
  ReceiverEstimatedMaxBitrate,
  RtcpPayloadSpecificFeedback,
  RtcpTransportLayerFeedback,
  useH264,
  useNACK,
  useOPUS,
  usePLI,
  useREMB,
  type MediaStreamTrack,
  type RTCDataChannel,
  type RTCRtpReceiver,
  type RtcpPacket,
} from 'werift';
import { loopbackPeer } from './fake-app';
import { payloadSpecificFeedback, rtcpBytes } from '@pixelfleet/agent/test-support';

export interface ReceivedRtp {
  payloadType: number;
  ssrc: number;
  sequenceNumber: number;
  extensions: number;
  payload: Buffer;
  /** performance.now() at arrival, ms. */
  atMs: number;
}

export class FakeViewer {
  readonly pc: RTCPeerConnection;
  readonly video: ReceivedRtp[] = [];
  readonly audio: ReceivedRtp[] = [];
  /** Channel messages received, in order. */
  readonly messages: Buffer[] = [];
  channel: RTCDataChannel | undefined;
  private readonly listeners = new Set<() => void>();
  private videoTrack: MediaStreamTrack | undefined;
  private keepPayloads: boolean;

  /**
   * @param sendOnOpen sent from the channel's open handler, the earliest moment a browser app can
   * @param keepPayloads false keeps only headers (benchmarks)
   */
  constructor(options: { sendOnOpen?: Buffer; keepPayloads?: boolean; recordRtp?: boolean } = {}) {
    this.keepPayloads = options.keepPayloads ?? true;
    const recordRtp = options.recordRtp ?? true;
    this.pc = new RTCPeerConnection({
      ...loopbackPeer(),
      codecs: {
        video: [useH264({ payloadType: 96, rtcpFeedback: [useNACK(), usePLI(), useREMB()] })],
        audio: [useOPUS({ payloadType: 111 })],
      },
    });
    this.pc.onTrack.subscribe((track) => {
      if (track.kind === 'video') this.videoTrack = track;
      if (!recordRtp) return;
      const into = track.kind === 'video' ? this.video : this.audio;
      track.onReceiveRtp.subscribe((rtp) => {
        into.push({
          payloadType: rtp.header.payloadType,
          ssrc: rtp.header.ssrc,
          sequenceNumber: rtp.header.sequenceNumber,
          extensions: rtp.header.extensions.length,
          payload: this.keepPayloads ? Buffer.from(rtp.payload) : Buffer.alloc(0),
          atMs: performance.now(),
        });
        this.notify();
      });
    });
    this.pc.onDataChannel.subscribe((channel) => {
      this.channel = channel;
      channel.onMessage.subscribe((data) => {
        this.messages.push(Buffer.isBuffer(data) ? Buffer.from(data) : Buffer.from(data, 'utf8'));
        this.notify();
      });
      channel.stateChanged.subscribe((state) => {
        if (state === 'open' && options.sendOnOpen) channel.send(options.sendOnOpen);
        this.notify();
      });
    });
    this.pc.connectionStateChange.subscribe(() => this.notify());
  }

  async answer(offerSdp: string): Promise<string> {
    await this.pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
    await this.pc.setLocalDescription(await this.pc.createAnswer());
    const sdp = this.pc.localDescription?.sdp;
    if (sdp === undefined) throw new Error('no answer');
    return sdp;
  }

  /** Calls listener after anything recorded changes; returns unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  sendPli(): void {
    const { receiver, mediaSsrc } = this.videoReceiver();
    void receiver.sendRtcpPLI(mediaSsrc);
  }

  sendFir(): void {
    const { receiver, mediaSsrc } = this.videoReceiver();
    // Our own bytes, as a browser writes them: werift's FIR serialisation is one word short.
    const fci = Buffer.alloc(8);
    fci.writeUInt32BE(mediaSsrc, 0);
    this.sendRtcp(receiver, [rtcpBytes(payloadSpecificFeedback(4, receiver.rtcpSsrc, 0, fci))]);
  }

  /** A generic NACK for the video stream, as a browser sends for packets it misses. */
  sendNack(sequenceNumbers: number[]): void {
    const { receiver, mediaSsrc } = this.videoReceiver();
    const nack = new GenericNack({ senderSsrc: receiver.rtcpSsrc, mediaSourceSsrc: mediaSsrc, lost: sequenceNumbers });
    this.sendRtcp(receiver, [new RtcpTransportLayerFeedback({ feedback: nack })]);
  }

  sendRemb(bps: number): void {
    const { receiver, mediaSsrc } = this.videoReceiver();
    let mantissa = bps;
    let exponent = 0;
    while (mantissa > 0x3ffff) {
      mantissa = Math.floor(mantissa / 2);
      exponent++;
    }
    const remb = new ReceiverEstimatedMaxBitrate({ senderSsrc: receiver.rtcpSsrc, mediaSsrc: 0, ssrcNum: 1, ssrcFeedbacks: [mediaSsrc], brExp: exponent, brMantissa: mantissa });
    this.sendRtcp(receiver, [new RtcpPayloadSpecificFeedback({ feedback: remb })]);
  }

  send(message: Buffer): void {
    this.channel?.send(message);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.pc.close();
  }

  private videoReceiver(): { receiver: RTCRtpReceiver; mediaSsrc: number } {
    const receiver = this.pc.getTransceivers().find((t) => t.kind === 'video')?.receiver;
    const mediaSsrc = this.video[this.video.length - 1]?.ssrc ?? this.videoTrack?.ssrc;
    if (receiver === undefined || mediaSsrc === undefined) throw new Error('no video received yet');
    return { receiver, mediaSsrc };
  }

  private sendRtcp(receiver: RTCRtpReceiver, packets: RtcpPacket[]): void {
    void receiver.dtlsTransport.sendRtcp(packets);
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
