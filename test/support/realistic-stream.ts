// A realistic Unreal sender and a real browser viewer (issues 9 and 21): a headless chromium page
// plays the app the way a packaged Unreal app does (libwebrtc, OpenH264, its pacer, NACK/RTX,
// REMB), drawing what a game draws (game-scene.ts: coherent motion at the project's resolution, so
// the encoder makes keyframes only at the start and when asked) and offering what libwebrtc offers
// by default: every codec with RTX, RED and FEC, `ccm fir`, header extensions, an audio track and a
// data channel — the relay narrows it. An encoded-frame tap records when each keyframe was made
// and how large it was. Nothing is downloaded and nothing large is committed: the picture is
// generated in the page. A second chromium (another browser process, as a viewer is another
// machine) answers plain RTCPeerConnection offers and reports what a viewer sees. Both are driven
// over playwright-core; signalling is plain values.
import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import { launchChromium } from './chromium';
import { GAME_SCENE_SCRIPT } from './game-scene';

export interface SenderOptions {
  width: number;
  height: number;
  fps: number;
  /**
   * Withhold the encoded video (dropped in the encoded-frame tap) until this long after the first
   * encoded frame, ms (default 0). A viewer on the app's own peer connection then joins a running
   * stream on a delta frame, as a late viewer of the relay does, and its PLI goes straight to the
   * app: the direct path's late joiner.
   */
  withholdVideoMs?: number;
}

/** One keyframe the app's encoder made, as the encoded-frame tap saw it. */
export interface KeyFrame {
  /** When it left the encoder, epoch ms (performance.timeOrigin + performance.now()). */
  atMs: number;
  bytes: number;
}

/** What the app's libwebrtc says about its video (outbound-rtp and the candidate pair), and the tap's record. */
export interface SenderStats {
  /** performance.now() of the sender page when read. */
  at: number;
  /** The sender page's performance.timeOrigin: `at + timeOrigin` is epoch ms. */
  timeOrigin: number;
  packetsSent: number;
  bytesSent: number;
  retransmittedPacketsSent: number;
  nackCount: number;
  pliCount: number;
  firCount: number;
  framesEncoded: number;
  keyFramesEncoded: number;
  targetBitrate: number;
  frameWidth: number;
  frameHeight: number;
  qualityLimitationReason: string;
  availableOutgoingBitrate: number;
  /** The audio track's packets sent (the app streams sound as a game does). */
  audioPacketsSent: number;
  /** Every keyframe so far, in order (the first is the stream's opening keyframe). */
  keyFrames: KeyFrame[];
  /** When the first encoded frame left the encoder, epoch ms; undefined before it. */
  firstFrameAtMs: number | undefined;
  /** When the first frame was let through after withholdVideoMs, epoch ms (the first frame when nothing is withheld). */
  videoReleasedAtMs: number | undefined;
  codec: string;
}

/** What the viewer's libwebrtc says about the video it receives. */
export interface ViewerStats {
  at: number;
  /** The viewer page's performance.timeOrigin: `at + timeOrigin` is epoch ms. */
  timeOrigin: number;
  /** performance.now() of the first decoded frame (requestVideoFrameCallback), or undefined. */
  firstFrameAt: number | undefined;
  /** performance.now() when the peer connection reached 'connected', or undefined. */
  connectedAt: number | undefined;
  framesDecoded: number;
  keyFramesDecoded: number;
  packetsReceived: number;
  packetsLost: number;
  bytesReceived: number;
  nackCount: number;
  pliCount: number;
  firCount: number;
  frameWidth: number;
  frameHeight: number;
  framesReceived: number;
  framesDropped: number;
  freezeCount: number;
  /** Seconds summed over emitted frames; divide by jitterBufferEmittedCount. */
  jitterBufferDelay: number;
  jitterBufferEmittedCount: number;
  totalDecodeTime: number;
}

/** How the app answered keyframe requests: each keyframe after the opening one, against the request that asked for it. */
export interface KeyframeAnswers {
  /** Per keyframe the app made after a request: its tap time − the earliest request since the keyframe before it, ms. */
  latenciesMs: number[];
  /** Requests after the app's last keyframe that no keyframe followed (a request the app never obeyed). */
  unanswered: number;
  /** Keyframes the app made with no request since the one before (scene cuts, its own period). */
  unasked: number;
}

/** Pairs request times (epoch ms, e.g. RtcpCapture.keyframeRequestTimes()) with the keyframes the app made. */
export function keyframeAnswers(requestsAtMs: readonly number[], keyFrames: readonly KeyFrame[]): KeyframeAnswers {
  const answers: KeyframeAnswers = { latenciesMs: [], unanswered: 0, unasked: 0 };
  const requests = [...requestsAtMs].sort((x, y) => x - y);
  let previous = keyFrames[0]?.atMs ?? Infinity;
  for (const key of keyFrames.slice(1)) {
    const asked = requests.find((at) => at > previous && at <= key.atMs);
    if (asked === undefined) answers.unasked++;
    else answers.latenciesMs.push(key.atMs - asked);
    previous = key.atMs;
  }
  answers.unanswered = requests.filter((at) => at > previous).length;
  return answers;
}

export interface Candidate {
  candidate: string;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
}

const SENDER_PAGE = `<!doctype html><meta charset="utf-8"><title>realistic sender</title><body style="margin:0">
<canvas id="c"></canvas>
<script>${GAME_SCENE_SCRIPT}</script>
<script>
const params = new URLSearchParams(location.search);
const W = Number(params.get('w')), H = Number(params.get('h')), FPS = Number(params.get('fps')), WITHHOLD_MS = Number(params.get('withhold') || 0);
const canvas = document.getElementById('c');
startGameScene(canvas, { width: W, height: H, fps: FPS });
const epochNow = () => performance.timeOrigin + performance.now();

const pc = new RTCPeerConnection({ iceServers: [], encodedInsertableStreams: true });
window.pc = pc;
const tap = { keyFrames: [], firstFrameAtMs: undefined, videoReleasedAtMs: undefined };
pc.onicecandidate = (e) => { if (e.candidate) window.pfCandidate(e.candidate.toJSON()); };
window.pfOffer = async () => {
  (await navigator.mediaDevices.getUserMedia({ video: true })).getTracks().forEach((t) => t.stop());
  // As Unreal does: the app creates the data channel and offers its video and sound. The offer is
  // libwebrtc's own (no codec preferences): the relay picks H.264 42e01f out of it.
  pc.createDataChannel('datachannel', { ordered: true });
  const video = canvas.captureStream(FPS).getVideoTracks()[0];
  video.contentHint = 'motion';
  const audio = new AudioContext();
  const tone = audio.createOscillator();
  const level = audio.createGain();
  level.gain.value = 0.05;
  const sound = audio.createMediaStreamDestination();
  tone.connect(level).connect(sound);
  tone.start();
  await audio.resume();
  const sound0 = sound.stream.getAudioTracks()[0];
  const stream = new MediaStream([video, sound0]);
  const videoTransceiver = pc.addTransceiver(video, { direction: 'sendonly', streams: [stream] });
  const audioTransceiver = pc.addTransceiver(sound0, { direction: 'sendonly', streams: [stream] });
  // Unreal streams at the resolution it renders (-ForceRes): keep it, let the frame rate give.
  const sendParams = videoTransceiver.sender.getParameters();
  sendParams.degradationPreference = 'maintain-resolution';
  await videoTransceiver.sender.setParameters(sendParams);
  // Encoded-frame tap: when each keyframe left the encoder and its size; every frame passes on
  // unchanged, except those withheld at the start (withholdVideoMs).
  const v = videoTransceiver.sender.createEncodedStreams();
  v.readable.pipeThrough(new TransformStream({ transform(frame, out) {
    const at = epochNow();
    tap.firstFrameAtMs ??= at;
    if (frame.type === 'key') tap.keyFrames.push({ atMs: at, bytes: frame.data.byteLength });
    if (at < tap.firstFrameAtMs + WITHHOLD_MS) return;
    tap.videoReleasedAtMs ??= at;
    out.enqueue(frame);
  } })).pipeTo(v.writable);
  // With encoded streams on, a sender whose streams are not piped sends nothing.
  const a = audioTransceiver.sender.createEncodedStreams();
  a.readable.pipeTo(a.writable);
  await pc.setLocalDescription(await pc.createOffer());
  return pc.localDescription.sdp;
};
const pending = [];
window.pfAnswer = async (sdp) => {
  await pc.setRemoteDescription({ type: 'answer', sdp });
  for (const c of pending.splice(0)) await pc.addIceCandidate(c);
};
// The peer's candidates may come before its answer: held until then.
window.pfAddCandidate = async (c) => { if (!pc.remoteDescription) pending.push(c); else await pc.addIceCandidate(c); };
window.pfStats = async () => {
  const out = { at: performance.now(), timeOrigin: performance.timeOrigin, packetsSent: 0, bytesSent: 0, retransmittedPacketsSent: 0, nackCount: 0, pliCount: 0, firCount: 0,
    framesEncoded: 0, keyFramesEncoded: 0, targetBitrate: 0, frameWidth: 0, frameHeight: 0, qualityLimitationReason: '', availableOutgoingBitrate: 0,
    audioPacketsSent: 0, keyFrames: tap.keyFrames.slice(), firstFrameAtMs: tap.firstFrameAtMs, videoReleasedAtMs: tap.videoReleasedAtMs, codec: '' };
  const report = await pc.getStats();
  report.forEach((s) => {
    if (s.type === 'outbound-rtp' && s.kind === 'video') {
      for (const k of ['packetsSent', 'bytesSent', 'retransmittedPacketsSent', 'nackCount', 'pliCount', 'firCount', 'framesEncoded', 'keyFramesEncoded', 'targetBitrate', 'frameWidth', 'frameHeight']) out[k] += s[k] || 0;
      out.qualityLimitationReason = s.qualityLimitationReason || '';
      const codec = report.get(s.codecId);
      if (codec) out.codec = codec.mimeType + ' ' + (codec.sdpFmtpLine || '');
    }
    if (s.type === 'outbound-rtp' && s.kind === 'audio') out.audioPacketsSent += s.packetsSent || 0;
    if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') out.availableOutgoingBitrate = s.availableOutgoingBitrate || 0;
  });
  return out;
};
</script>`;

const VIEWER_PAGE = `<!doctype html><meta charset="utf-8"><title>viewer</title><body style="margin:0">
<video id="v" autoplay muted playsinline style="width:640px"></video>
<script>
const video = document.getElementById('v');
const marks = { firstFrameAt: undefined, connectedAt: undefined };
let pc;
const watchFirstFrame = () => video.requestVideoFrameCallback(() => { marks.firstFrameAt ??= performance.now(); });
watchFirstFrame();
const makePc = () => {
  pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  pc.onicecandidate = (e) => { if (e.candidate) window.pfCandidate(e.candidate.toJSON()); };
  pc.onconnectionstatechange = () => { if (pc.connectionState === 'connected') marks.connectedAt ??= performance.now(); };
  pc.ontrack = (e) => { if (e.track.kind === 'video') video.srcObject = e.streams[0] || new MediaStream([e.track]); };
  pc.ondatachannel = () => {};
  return pc;
};
const pending = [];
const isRelayH264 = (c) => c.mimeType === 'video/H264' && /profile-level-id=42e01f/i.test(c.sdpFmtpLine || '') && /packetization-mode=1/.test(c.sdpFmtpLine || '');
window.pfAnswer = async (sdp, h264Only) => {
  makePc();
  await pc.setRemoteDescription({ type: 'offer', sdp });
  if (h264Only) {
    const codecs = RTCRtpReceiver.getCapabilities('video').codecs.filter((c) => isRelayH264(c) || c.mimeType === 'video/rtx');
    for (const t of pc.getTransceivers()) if (t.receiver.track.kind === 'video') t.setCodecPreferences(codecs);
  }
  for (const c of pending.splice(0)) await pc.addIceCandidate(c);
  await pc.setLocalDescription(await pc.createAnswer());
  return pc.localDescription.sdp;
};
// Candidates may come before the offer (werift trickles from inside setLocalDescription).
window.pfAddCandidate = async (c) => { if (!pc || !pc.remoteDescription) pending.push(c); else await pc.addIceCandidate(c); };
window.pfStats = async () => {
  const out = { at: performance.now(), timeOrigin: performance.timeOrigin, firstFrameAt: marks.firstFrameAt, connectedAt: marks.connectedAt, framesDecoded: 0, keyFramesDecoded: 0,
    packetsReceived: 0, packetsLost: 0, bytesReceived: 0, nackCount: 0, pliCount: 0, firCount: 0, frameWidth: 0, frameHeight: 0,
    framesReceived: 0, framesDropped: 0, freezeCount: 0, jitterBufferDelay: 0, jitterBufferEmittedCount: 0, totalDecodeTime: 0 };
  if (!pc) return out;
  const report = await pc.getStats();
  report.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      for (const k of ['framesDecoded', 'keyFramesDecoded', 'packetsReceived', 'packetsLost', 'bytesReceived', 'nackCount', 'pliCount', 'firCount', 'frameWidth', 'frameHeight', 'framesReceived', 'framesDropped', 'freezeCount', 'jitterBufferDelay', 'jitterBufferEmittedCount', 'totalDecodeTime']) out[k] += s[k] || 0;
    }
  });
  return out;
};
</script>`;

const FAKE_MEDIA_ARGS = ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream'];

type SenderApi = { pfOffer(): Promise<string>; pfAnswer(sdp: string): Promise<void>; pfAddCandidate(c: Candidate): Promise<void>; pfStats(): Promise<SenderStats> };
type ViewerApi = { pfAnswer(sdp: string, h264Only: boolean): Promise<string>; pfAddCandidate(c: Candidate): Promise<void>; pfStats(): Promise<ViewerStats> };

/** Serves the two pages on 127.0.0.1 and owns one chromium per role. */
export class RealisticStreamLab {
  private constructor(
    private readonly server: Server,
    readonly origin: string,
    private readonly senderBrowser: Awaited<ReturnType<typeof launchChromium>>,
    private readonly viewerBrowser: Awaited<ReturnType<typeof launchChromium>>,
  ) {}

  static async start(): Promise<RealisticStreamLab> {
    const server = createServer((req, res) => {
      const page = req.url?.startsWith('/sender') ? SENDER_PAGE : req.url?.startsWith('/viewer') ? VIEWER_PAGE : undefined;
      if (page === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'text/html' }).end(page);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    // The sender gathers host candidates (an app on a server does): chromium enumerates interfaces
    // only for a page with media permission, which a fake camera grants without asking.
    const [senderBrowser, viewerBrowser] = await Promise.all([launchChromium(FAKE_MEDIA_ARGS), launchChromium()]);
    return new RealisticStreamLab(server, origin, senderBrowser, viewerBrowser);
  }

  /** A sender page drawing at the given size; its candidates go to `onCandidate`. */
  async sender(options: SenderOptions, onCandidate: (c: Candidate) => void): Promise<SenderPage> {
    const page = await this.senderBrowser.context.newPage();
    await page.exposeFunction('pfCandidate', onCandidate);
    await page.goto(`${this.origin}/sender?w=${options.width}&h=${options.height}&fps=${options.fps}&withhold=${options.withholdVideoMs ?? 0}`);
    return new SenderPage(page);
  }

  async viewer(onCandidate: (c: Candidate) => void): Promise<ViewerPage> {
    const page = await this.viewerBrowser.context.newPage();
    await page.exposeFunction('pfCandidate', onCandidate);
    await page.goto(`${this.origin}/viewer`);
    return new ViewerPage(page);
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.senderBrowser.close(), this.viewerBrowser.close()]);
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

export class SenderPage {
  constructor(readonly page: Page) {}
  offer(): Promise<string> {
    return this.page.evaluate(() => (window as unknown as SenderApi).pfOffer());
  }
  answer(sdp: string): Promise<void> {
    return this.page.evaluate((s) => (window as unknown as SenderApi).pfAnswer(s), sdp);
  }
  addCandidate(c: Candidate): Promise<void> {
    return this.page.evaluate((x) => (window as unknown as SenderApi).pfAddCandidate(x), c);
  }
  stats(): Promise<SenderStats> {
    return this.page.evaluate(() => (window as unknown as SenderApi).pfStats());
  }
  close(): Promise<void> {
    return this.page.close();
  }
}

export class ViewerPage {
  constructor(readonly page: Page) {}
  /**
   * The offer → the viewer's answer. h264Only (default false): the answer keeps only H.264 42e01f
   * packetization-mode 1 (and its RTX), what the relay sends its viewers — for a viewer that answers
   * the app's own offer, which lists VP8 first, so both paths carry the same codec.
   */
  answer(offerSdp: string, options: { h264Only?: boolean } = {}): Promise<string> {
    return this.page.evaluate(([s, h264Only]) => (window as unknown as ViewerApi).pfAnswer(s, h264Only), [offerSdp, options.h264Only ?? false] as const);
  }
  addCandidate(c: Candidate): Promise<void> {
    return this.page.evaluate((x) => (window as unknown as ViewerApi).pfAddCandidate(x), c);
  }
  stats(): Promise<ViewerStats> {
    return this.page.evaluate(() => (window as unknown as ViewerApi).pfStats());
  }
  close(): Promise<void> {
    return this.page.close();
  }
}
