// A browser stand-in for streaming tests that need no Chromium: connects to the gateway like
// Epic's frontend (listStreamers → subscribe → answer the relay's offer, trickled ICE) with a
// werift peer, and records the RTP and data-channel bytes it receives. Like the page, it carries
// its negotiation across a resumed socket: what it sends while away is sent after the resume, and
// a viewer that never had its streamer list asks for it again.
import { RTCIceCandidate, RTCPeerConnection, RTCSessionDescription, useH264, useOPUS, type RTCDataChannel } from 'werift';
import { loopbackPeer } from './relay/fake-app';
import WebSocket from 'ws';
import { FakePlayer } from './fake-player';
import { MessageInbox, type ServerMessage } from './message-inbox';

export class WeriftViewer {
  readonly pc: RTCPeerConnection;
  /** The session's signalling socket: a new one after resume(). */
  signalling: FakePlayer;
  rtpPackets = 0;
  /** performance.now() of the latest RTP packet: gaps in the video show here. */
  lastRtpAt = 0;
  /** The longest time between two RTP packets since resetRtpGap(), in ms. */
  longestRtpGapMs = 0;
  payloadTypes = new Set<number>();
  readonly dataMessages: Buffer[] = [];
  channel: RTCDataChannel | undefined;
  sessionId = '';
  /** The bearer a resume proves the session with (from pixelfleetSession). */
  viewerToken = '';
  private videoSsrc: number | undefined;
  private readonly waiters: { test: () => boolean; resolve: () => void }[] = [];
  /** Every message of every socket of the session, in order (the negotiation reads these). */
  private readonly inbox = new MessageInbox();
  /** Sent while the socket was away: sent on the resumed one, as the page does. */
  private held: Record<string, unknown>[] = [];
  private streamerListed = false;
  private beforeAnswer: (() => Promise<void>) | undefined;
  /** Why the negotiation stopped, if it did (no streamer list or offer in time). */
  negotiationError: Error | undefined;

  private constructor(signalling: FakePlayer) {
    this.signalling = signalling;
    this.listen(signalling);
    this.pc = new RTCPeerConnection({
      codecs: { video: [useH264({ payloadType: 96 })], audio: [useOPUS()] },
      ...loopbackPeer(),
    });
    this.pc.onTrack.subscribe((track) => {
      if (track.kind === 'video') this.videoSsrc = track.ssrc;
      track.onReceiveRtp.subscribe((rtp) => {
        const now = performance.now();
        if (this.lastRtpAt > 0) this.longestRtpGapMs = Math.max(this.longestRtpGapMs, now - this.lastRtpAt);
        this.lastRtpAt = now;
        this.rtpPackets += 1;
        this.payloadTypes.add(rtp.header.payloadType);
        this.check();
      });
    });
    this.pc.onDataChannel.subscribe((channel) => {
      this.channel = channel;
      channel.onMessage.subscribe((data) => {
        this.dataMessages.push(typeof data === 'string' ? Buffer.from(data) : Buffer.from(data));
        this.check();
      });
    });
    this.pc.onIceCandidate.subscribe((c) => {
      if (c) this.sendSignal({ type: 'iceCandidate', candidate: { candidate: c.candidate, sdpMid: c.sdpMid ?? '0', sdpMLineIndex: c.sdpMLineIndex ?? 0 } });
    });
  }

  /**
   * Opens the signalling socket and plays the frontend's part until media flows. `beforeAnswer`:
   * awaited once the relay's offer is applied, before the answer is made and sent (a test holds the
   * negotiation there, e.g. across a control plane restart).
   */
  static async join(wsUrl: string, options: { beforeAnswer?: () => Promise<void> } = {}): Promise<WeriftViewer> {
    const signalling = await FakePlayer.connect(wsUrl);
    const viewer = new WeriftViewer(signalling);
    viewer.beforeAnswer = options.beforeAnswer;
    signalling.send({ type: 'listStreamers' });
    const session = await signalling.next('pixelfleetSession');
    viewer.sessionId = session.sessionId as string;
    viewer.viewerToken = session.viewerToken as string;
    // A negotiation that stalls (no streamer list, no offer) is reported by until()'s timeout, not as an unhandled rejection.
    viewer.negotiate().catch((err: unknown) => (viewer.negotiationError = err as Error));
    return viewer;
  }

  /** Resolves when the predicate over what was received holds (checked on every arrival). */
  until(test: () => boolean, timeoutMs = 20_000): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const stalled = this.negotiationError === undefined ? '' : `; negotiation: ${this.negotiationError.message}`;
        reject(new Error(`condition not met within ${timeoutMs} ms (rtp ${this.rtpPackets}, dc ${this.dataMessages.length}${stalled})`));
      }, timeoutMs);
      this.waiters.push({ test, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  /**
   * Takes the session back over a new socket once the old one closed, as the page does (Pixelfleet's
   * resume): `?resume=<sessionId>`, then the viewer token first. While the server cannot be reached
   * (a control plane restarting) it tries again every `retryMs`, as the page's retries do; an answer
   * that is a close (a refusal) is thrown at once. Resolves once the server said `pixelfleetResumed`.
   */
  async resume(wsUrl: string, options: { timeoutMs?: number; retryMs?: number } = {}): Promise<void> {
    const deadline = performance.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      let socket: FakePlayer;
      try {
        socket = await FakePlayer.connect(`${wsUrl}?resume=${encodeURIComponent(this.sessionId)}`);
      } catch (err) {
        if (performance.now() >= deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? 100));
        continue;
      }
      socket.send({ type: 'pixelfleetResume', viewerToken: this.viewerToken });
      const answer = await Promise.race([socket.next('pixelfleetResumed', 10_000).then(() => undefined), socket.closed]);
      if (answer !== undefined) throw new Error(`resume refused: ${answer.code} ${answer.reason}`);
      this.signalling = socket;
      this.listen(socket);
      const held = this.held;
      this.held = [];
      for (const message of held) socket.send(message);
      // The request the first socket sent may have been held by a server that is gone (a restart).
      if (!this.streamerListed && !held.some((m) => m.type === 'listStreamers')) socket.send({ type: 'listStreamers' });
      return;
    }
  }

  /** Starts measuring the longest gap between RTP packets afresh. */
  resetRtpGap(): void {
    this.longestRtpGapMs = 0;
  }

  send(bytes: Buffer): void {
    this.channel?.send(bytes);
  }

  /** A keyframe request (PLI) for the video, as a browser sends when it cannot decode. */
  sendPli(): void {
    const receiver = this.pc.getTransceivers().find((t) => t.kind === 'video')?.receiver;
    if (receiver === undefined || this.videoSsrc === undefined) throw new Error('no video yet');
    void receiver.sendRtcpPLI(this.videoSsrc);
  }

  async close(): Promise<void> {
    this.signalling.close();
    await this.pc.close();
  }

  /** Sends on the current socket, or keeps the message for the resumed one while it is away. */
  private sendSignal(message: Record<string, unknown>): void {
    if (this.signalling.socket.readyState === WebSocket.OPEN) this.signalling.send(message);
    else this.held.push(message);
  }

  private listen(socket: FakePlayer): void {
    socket.socket.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString('utf8')) as ServerMessage;
      if (message.type === 'streamerList') this.streamerListed = true;
      this.inbox.push(message);
    });
  }

  /** The next message of this type from any of the session's sockets, not yet taken. */
  private next(type: string, timeoutMs: number): Promise<ServerMessage> {
    return this.inbox.next(type, timeoutMs);
  }

  private async negotiate(): Promise<void> {
    const list = await this.next('streamerList', 120_000);
    const [streamerId] = list.ids as string[];
    this.sendSignal({ type: 'subscribe', streamerId });
    const offer = await this.next('offer', 60_000);
    await this.pc.setRemoteDescription(new RTCSessionDescription(offer.sdp as string, 'offer'));
    await this.beforeAnswer?.();
    const answer = await this.pc.createAnswer();
    await this.pc.setLocalDescription(answer);
    this.sendSignal({ type: 'answer', sdp: this.pc.localDescription!.sdp });
    for (;;) {
      const c = await this.next('iceCandidate', 60_000).catch(() => undefined);
      if (!c) return;
      const candidate = c.candidate as { candidate: string; sdpMid: string; sdpMLineIndex: number };
      await this.pc.addIceCandidate(new RTCIceCandidate(candidate)).catch(() => undefined);
    }
  }

  private check(): void {
    for (const w of [...this.waiters]) {
      if (w.test()) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }
}
