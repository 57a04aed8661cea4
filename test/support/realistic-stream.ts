// A realistic Unreal sender and a real browser viewer (issue 9): a headless chromium page plays
// the app the way a packaged Unreal app does (libwebrtc, OpenH264, its pacer, NACK/RTX, REMB),
// drawing high-entropy video at the project's resolution — fresh noise over a panning texture,
// every pixel new every frame, so each frame costs the bitrate the encoder is given and its
// keyframes are as large as a game's (hundreds of KB at 1080p 10–20 Mbps). Nothing is downloaded
// and nothing large is committed: the picture is generated in the page. A second chromium (another
// browser process, as a viewer is another machine) answers plain RTCPeerConnection offers and
// reports what a viewer sees. Both are driven over playwright-core; signalling is plain values.
import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import { launchChromium } from './chromium';

export interface SenderOptions {
  width: number;
  height: number;
  fps: number;
}

/** What the app's libwebrtc says about its video (outbound-rtp and the candidate pair). */
export interface SenderStats {
  /** performance.now() of the sender page when read. */
  at: number;
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
  /** Encoded sizes of the keyframes so far, bytes (from an encoded-frame tap). */
  keyFrameBytes: number[];
  codec: string;
}

/** What the viewer's libwebrtc says about the video it receives. */
export interface ViewerStats {
  at: number;
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

export interface Candidate {
  candidate: string;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
}

const SENDER_PAGE = `<!doctype html><meta charset="utf-8"><title>realistic sender</title><body style="margin:0">
<canvas id="c"></canvas>
<script>
const params = new URLSearchParams(location.search);
const W = Number(params.get('w')), H = Number(params.get('h')), FPS = Number(params.get('fps'));
const canvas = document.getElementById('c');
canvas.width = W; canvas.height = H;
const g = canvas.getContext('2d', { alpha: false });
// A fast camera move over a detailed scene: a colour field and a full-frame layer of fine detail
// (noise, like foliage) panning smoothly — new detail at every edge, motion the encoder can follow,
// so no frame looks like a scene cut — plus a region of fresh noise every frame (particles, film
// grain) that soaks up whatever bitrate is left. Noise from crypto (64 KiB a call).
const random = (bytes) => { for (let i = 0; i < bytes.length; i += 65536) crypto.getRandomValues(bytes.subarray(i, Math.min(i + 65536, bytes.length))); return bytes; };
const tile = (w, h, grey) => {
  const c = document.createElement('canvas'); c.width = w; c.height = h;
  const cg = c.getContext('2d'); const img = cg.createImageData(w, h);
  random(img.data);
  for (let i = 0; i < img.data.length; i += 4) { if (grey) { img.data[i + 1] = img.data[i]; img.data[i + 2] = img.data[i]; } img.data[i + 3] = 255; }
  cg.putImageData(img, 0, 0);
  return c;
};
const coarse = tile(Math.ceil(W / 8), Math.ceil(H / 8), false);
const fine = tile(1024, 1024, true);
const fresh = g.createImageData(Math.round(W / 4), Math.round(H / 4));
let n = 0;
const draw = () => {
  n++;
  const dx = (n * 5) % W, dy = (n * 2) % H;
  g.globalAlpha = 1;
  for (const x of [-dx, W - dx]) for (const y of [-dy, H - dy]) g.drawImage(coarse, x, y, W, H);
  g.globalAlpha = 0.35;
  const fx = (n * 7) % 1024, fy = (n * 3) % 1024;
  for (let x = -fx; x < W; x += 1024) for (let y = -fy; y < H; y += 1024) g.drawImage(fine, x, y);
  g.globalAlpha = 1;
  random(fresh.data);
  for (let i = 3; i < fresh.data.length; i += 4) fresh.data[i] = 255;
  g.putImageData(fresh, Math.round(W / 2 + (W / 4) * Math.sin(n / 40)), Math.round(H / 8));
  g.fillStyle = '#fff'; g.fillRect((n * 23) % (W - 120), H / 2 + (H / 3) * Math.sin(n / 11), 120, 120);
  g.fillStyle = '#000'; g.fillRect(20, 20, 360, 50); g.fillStyle = '#fff'; g.font = '36px monospace'; g.fillText('frame ' + n, 30, 58);
};
draw();
setInterval(draw, 1000 / FPS);

const pc = new RTCPeerConnection({ iceServers: [], encodedInsertableStreams: true });
window.pc = pc;
const keyFrameBytes = [];
pc.onicecandidate = (e) => { if (e.candidate) window.pfCandidate(e.candidate.toJSON()); };
window.pfOffer = async () => {
  (await navigator.mediaDevices.getUserMedia({ video: true })).getTracks().forEach((t) => t.stop());
  // As Unreal does: the app creates the data channel and offers sendonly video (H.264 first).
  pc.createDataChannel('datachannel', { ordered: true });
  const track = canvas.captureStream(FPS).getVideoTracks()[0];
  track.contentHint = 'motion';
  const transceiver = pc.addTransceiver(track, { direction: 'sendonly' });
  // Unreal streams at the resolution it renders (-ForceRes): keep it, let the frame rate give.
  const params = transceiver.sender.getParameters();
  params.degradationPreference = 'maintain-resolution';
  await transceiver.sender.setParameters(params);
  const codecs = RTCRtpSender.getCapabilities('video').codecs;
  const rank = (c) => c.mimeType === 'video/H264' && /profile-level-id=42e01f/i.test(c.sdpFmtpLine || '') && /packetization-mode=1/.test(c.sdpFmtpLine || '') ? 0
    : /rtx|red|ulpfec/i.test(c.mimeType) ? 1 : 2;
  transceiver.setCodecPreferences([...codecs].filter((c) => rank(c) < 2));
  // Encoded-frame tap: records keyframe sizes, passes every frame on unchanged.
  const { readable, writable } = transceiver.sender.createEncodedStreams();
  readable.pipeThrough(new TransformStream({ transform(frame, out) { if (frame.type === 'key') keyFrameBytes.push(frame.data.byteLength); out.enqueue(frame); } })).pipeTo(writable);
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
  const out = { at: performance.now(), packetsSent: 0, bytesSent: 0, retransmittedPacketsSent: 0, nackCount: 0, pliCount: 0, firCount: 0,
    framesEncoded: 0, keyFramesEncoded: 0, targetBitrate: 0, frameWidth: 0, frameHeight: 0, qualityLimitationReason: '', availableOutgoingBitrate: 0,
    keyFrameBytes: keyFrameBytes.slice(), codec: '' };
  const report = await pc.getStats();
  report.forEach((s) => {
    if (s.type === 'outbound-rtp' && s.kind === 'video') {
      for (const k of ['packetsSent', 'bytesSent', 'retransmittedPacketsSent', 'nackCount', 'pliCount', 'firCount', 'framesEncoded', 'keyFramesEncoded', 'targetBitrate', 'frameWidth', 'frameHeight']) out[k] += s[k] || 0;
      out.qualityLimitationReason = s.qualityLimitationReason || '';
      const codec = report.get(s.codecId);
      if (codec) out.codec = codec.mimeType + ' ' + (codec.sdpFmtpLine || '');
    }
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
window.pfAnswer = async (sdp) => {
  makePc();
  await pc.setRemoteDescription({ type: 'offer', sdp });
  for (const c of pending.splice(0)) await pc.addIceCandidate(c);
  await pc.setLocalDescription(await pc.createAnswer());
  return pc.localDescription.sdp;
};
// Candidates may come before the offer (werift trickles from inside setLocalDescription).
window.pfAddCandidate = async (c) => { if (!pc || !pc.remoteDescription) pending.push(c); else await pc.addIceCandidate(c); };
window.pfStats = async () => {
  const out = { at: performance.now(), firstFrameAt: marks.firstFrameAt, connectedAt: marks.connectedAt, framesDecoded: 0, keyFramesDecoded: 0,
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
type ViewerApi = { pfAnswer(sdp: string): Promise<string>; pfAddCandidate(c: Candidate): Promise<void>; pfStats(): Promise<ViewerStats> };

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
    await page.goto(`${this.origin}/sender?w=${options.width}&h=${options.height}&fps=${options.fps}`);
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
  /** The offer → the viewer's answer. */
  answer(offerSdp: string): Promise<string> {
    return this.page.evaluate((s) => (window as unknown as ViewerApi).pfAnswer(s), offerSdp);
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
