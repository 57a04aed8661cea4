// bench:stream part (c), libwebrtc ramp: a headless chromium page streams a canvas into the relay's
// ingest the way Unreal does (offer → relay answer, trickled ICE) with one viewer; its outgoing
// bitrate second by second. Twice: the viewer there from the start (a cold session: the relay
// subscribes as its viewer does), and the viewer joining an app that streamed to nobody for
// WARM_IDLE_MS (a warm instance, whose relay ingests from the app's identification: libwebrtc's
// 2 s start phase, in which it takes a higher REMB at once, is over when its viewer comes). Figures only.
import { createServer, type Server } from 'node:http';
import pino from 'pino';
import type { Page } from 'playwright-core';
import type { RtpPacket } from 'werift';
import { SessionRelay } from '@pixelfleet/agent/test-support';
import { FakeViewer } from '../support/relay/fake-viewer';
import { launchChromium } from '../support/chromium';
import { f, mbps, until, waitMs } from './bench-support';

const TARGET_RAMP_FRACTION = 0.8;
const RAMP = { startBps: 4_000_000, minBps: 1_000_000, maxBps: 8_000_000 };
const RAMP_SECONDS = 15;
/** How long the warm case's app streams to nobody before its viewer joins. */
const WARM_IDLE_MS = 5_000;

interface SenderStats {
  at: number;
  bytesSent: number;
  retransmittedBytesSent: number;
  targetBitrate?: number;
  availableOutgoingBitrate?: number;
  frameWidth?: number;
  frameHeight?: number;
  framesPerSecond?: number;
  qualityLimitationReason?: string;
  encoderImplementation?: string;
  codec?: string;
}

const STREAMER_PAGE = `<!doctype html><meta charset="utf-8"><title>bench streamer</title><body style="margin:0">
<canvas id="c" width="1280" height="720"></canvas>
<script>
// A 1280x720 canvas with motion everywhere, roughly as hard to encode as a game camera panning:
// a smooth texture (noise upscaled ×4) panning every frame, a fresh-noise patch moving across it
// (so the encoder always has more detail to spend bits on), a moving square and a frame counter.
const canvas = document.getElementById('c');
const g = canvas.getContext('2d');
const noise = (w, h) => {
  const c = document.createElement('canvas');
  c.width = w; c.height = h;
  const cg = c.getContext('2d');
  const img = cg.createImageData(w, h);
  for (let i = 0; i < img.data.length; i += 4) { const v = Math.random() * 255; img.data[i] = v; img.data[i + 1] = (v * 7) % 255; img.data[i + 2] = 255 - v; img.data[i + 3] = 255; }
  cg.putImageData(img, 0, 0);
  return c;
};
const texture = noise(320, 180);
const patch = document.createElement('canvas');
patch.width = 256; patch.height = 144;
const pg = patch.getContext('2d');
const patchImg = pg.createImageData(256, 144);
let n = 0;
setInterval(() => {
  n++;
  const dx = (n * 6) % 1280, dy = (n * 3) % 720;
  for (const x of [-dx, 1280 - dx]) for (const y of [-dy, 720 - dy]) g.drawImage(texture, x, y, 1280, 720);
  for (let i = 0; i < patchImg.data.length; i += 4) { const v = Math.random() * 255; patchImg.data[i] = v; patchImg.data[i + 1] = v; patchImg.data[i + 2] = v; patchImg.data[i + 3] = 255; }
  pg.putImageData(patchImg, 0, 0);
  g.drawImage(patch, (n * 9) % 1024, (n * 5) % 576);
  g.fillStyle = '#fff'; g.fillRect((n * 14) % 1184, 312 + 200 * Math.sin(n / 14), 96, 96);
  g.fillStyle = '#000'; g.fillRect(20, 20, 420, 50); g.fillStyle = '#fff'; g.font = '36px monospace'; g.fillText('frame ' + n, 30, 58);
}, 1000 / 30);
const pc = new RTCPeerConnection({ iceServers: [] });
window.pc = pc;
pc.onicecandidate = (e) => { if (e.candidate) window.pfCandidate(e.candidate.toJSON()); };
window.pfStart = async () => {
  // Like Unreal: the streamer creates the data channel and offers sendonly video.
  pc.createDataChannel('datachannel', { ordered: true });
  const track = canvas.captureStream(30).getVideoTracks()[0];
  const transceiver = pc.addTransceiver(track, { direction: 'sendonly' });
  const codecs = RTCRtpSender.getCapabilities('video').codecs;
  const rank = (c) => c.mimeType === 'video/H264' && /profile-level-id=42e01f/i.test(c.sdpFmtpLine || '') && /packetization-mode=1/.test(c.sdpFmtpLine || '') ? 0 : c.mimeType === 'video/H264' ? 1 : 2;
  transceiver.setCodecPreferences([...codecs].sort((a, b) => rank(a) - rank(b)));
  await pc.setLocalDescription(await pc.createOffer());
  return pc.localDescription.sdp;
};
window.pfAnswer = (sdp) => pc.setRemoteDescription({ type: 'answer', sdp });
window.pfAddCandidate = (c) => pc.addIceCandidate(c);
window.pfStats = async () => {
  const out = { at: performance.now(), bytesSent: 0, retransmittedBytesSent: 0 };
  const report = await pc.getStats();
  const byId = new Map();
  report.forEach((s) => byId.set(s.id, s));
  report.forEach((s) => {
    if (s.type === 'outbound-rtp' && s.kind === 'video') {
      out.bytesSent += s.bytesSent; out.retransmittedBytesSent += s.retransmittedBytesSent || 0;
      out.targetBitrate = s.targetBitrate; out.frameWidth = s.frameWidth; out.frameHeight = s.frameHeight;
      out.framesPerSecond = s.framesPerSecond; out.qualityLimitationReason = s.qualityLimitationReason;
      out.encoderImplementation = s.encoderImplementation;
      const codec = byId.get(s.codecId);
      if (codec) out.codec = codec.mimeType + ' ' + (codec.sdpFmtpLine || '');
    }
    if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') out.availableOutgoingBitrate = s.availableOutgoingBitrate;
  });
  return out;
};
</script>`;

interface RampResult {
  series: { second: number; bps: number; rtxBps: number; target?: number; available?: number; size: string; fps?: number; limit?: string }[];
  codec: string;
  encoder: string;
  viewerBps: number;
  rembBps: number;
  connectMs: number;
}

/** The sender's ramp after its viewer connected; the viewer joins idleMs after the app connected (0: at once, with the app). */
async function libwebrtcRamp(idleMs: number): Promise<RampResult> {
  const server: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(STREAMER_PAGE));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  const relay = new SessionRelay({ iceServers: [], hostAddresses: ['127.0.0.1'], bitrate: RAMP, log: pino({ level: 'silent' }) });
  const viewer = new FakeViewer({ recordRtp: false });
  let viewerBytes = 0;
  viewer.pc.onTrack.subscribe((track) => track.onReceiveRtp.subscribe((rtp: RtpPacket) => void (viewerBytes += rtp.payload.length)));
  const browser = await launchChromium();
  try {
    const page: Page = await browser.context.newPage();
    // Trickle ICE both ways, as between Unreal and Wilbur.
    await page.exposeFunction('pfCandidate', (c: { candidate: string; sdpMid?: string | null; sdpMLineIndex?: number | null }) => {
      relay.addStreamerCandidate(c).catch(() => undefined);
    });
    relay.onStreamerCandidate((c) => void page.evaluate((cand) => (window as unknown as { pfAddCandidate: (x: unknown) => Promise<void> }).pfAddCandidate(cand), c).catch(() => undefined));
    await page.goto(url);
    type PageApi = { pfStart: () => Promise<string>; pfAnswer: (sdp: string) => Promise<void>; pfStats: () => Promise<SenderStats>; pc: RTCPeerConnection };
    const offer = await page.evaluate(() => (window as unknown as PageApi).pfStart());
    const began = performance.now();
    const answer = await relay.acceptStreamerOffer(offer);
    await page.evaluate((sdp) => (window as unknown as PageApi).pfAnswer(sdp), answer);
    // One viewer, attached as a browser would be: with the app, or once the app has streamed to nobody for idleMs.
    const viewerConnected = new Promise<void>((r) => relay.on('viewerConnected', () => r()));
    const attachViewer = async () => relay.acceptViewerAnswer('viewer-1', await viewer.answer(await relay.addViewer('viewer-1')));
    if (idleMs === 0) await attachViewer();
    await until(() => page.evaluate(() => ((window as unknown as PageApi).pc.connectionState === 'connected' ? true : undefined)), 'the streamer page to connect', 15_000, 10);
    const connectMs = performance.now() - began;
    if (idleMs > 0) {
      await waitMs(idleMs);
      await attachViewer();
    }
    await viewerConnected;
    const samples: SenderStats[] = [await page.evaluate(() => (window as unknown as PageApi).pfStats())];
    const viewerStart = viewerBytes;
    const t0 = samples[0]!.at;
    for (let s = 1; s <= RAMP_SECONDS; s++) {
      await waitMs(t0 + s * 1000 - (await page.evaluate(() => performance.now())));
      samples.push(await page.evaluate(() => (window as unknown as PageApi).pfStats()));
    }
    const viewerBps = ((viewerBytes - viewerStart) * 8) / RAMP_SECONDS;
    const series = samples.slice(1).map((s, i) => {
      const prev = samples[i]!;
      return {
        second: Math.round((s.at - t0) / 1000),
        bps: ((s.bytesSent - prev.bytesSent) * 8 * 1000) / (s.at - prev.at),
        rtxBps: ((s.retransmittedBytesSent - prev.retransmittedBytesSent) * 8 * 1000) / (s.at - prev.at),
        ...(s.targetBitrate !== undefined ? { target: s.targetBitrate } : {}),
        ...(s.availableOutgoingBitrate !== undefined ? { available: s.availableOutgoingBitrate } : {}),
        size: `${s.frameWidth ?? '?'}x${s.frameHeight ?? '?'}`,
        ...(s.framesPerSecond !== undefined ? { fps: s.framesPerSecond } : {}),
        ...(s.qualityLimitationReason !== undefined ? { limit: s.qualityLimitationReason } : {}),
      };
    });
    const last = samples[samples.length - 1]!;
    return { series, codec: last.codec ?? '?', encoder: last.encoderImplementation ?? '', viewerBps, rembBps: relay.stats().rembBps, connectMs };
  } finally {
    await browser.close();
    relay.close();
    await viewer.close();
    await relay.whenClosed();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

/** Part (c): the sender's bitrate over RAMP_SECONDS, a cold and a warm viewer; prints the tables and returns the summary rows. */
export async function benchLibwebrtcRamp(): Promise<string[]> {
  const summary: string[] = [];
  console.log(`\n(c) libwebrtc sender ramp: chromium page (canvas.captureStream(30) 1280x720, panning texture + noise patch, H.264 42e01f preferred) → relay ingest`);
  console.log(`  (SessionRelay in this process, offer → answer, trickled ICE; bitrate start ${mbps(RAMP.startBps)}, min ${mbps(RAMP.minBps)}, max ${mbps(RAMP.maxBps)}) → one werift viewer`);
  for (const [label, idleMs] of [
    ['cold: the viewer there as the app connects', 0],
    [`warm: the viewer joins after the app streamed to nobody for ${WARM_IDLE_MS / 1000} s`, WARM_IDLE_MS],
  ] as const) {
    const c = await libwebrtcRamp(idleMs);
    console.log(`\n  ${label}: connected in ${f(c.connectMs, 0)} ms; codec ${c.codec}${c.encoder ? `; encoder ${c.encoder}` : ''}; relay REMB ${mbps(c.rembBps)}; viewer received ${mbps(c.viewerBps)} (payload, 15 s average)`);
    console.log('  | s after the viewer connected | sent (outbound-rtp bytesSent Δ over 1 s) | of which retransmitted | targetBitrate | availableOutgoingBitrate | frame | fps | limited by |');
    console.log('  |---|---|---|---|---|---|---|---|');
    for (const s of c.series)
      console.log(`  | ${s.second} | ${mbps(s.bps)} | ${mbps(s.rtxBps)} | ${s.target !== undefined ? mbps(s.target) : '–'} | ${s.available !== undefined ? mbps(s.available) : '–'} | ${s.size} | ${f(s.fps ?? NaN, 0)} | ${s.limit ?? '–'} |`);
    const firstFive = c.series.filter((x) => x.second <= 5);
    const meanFive = firstFive.reduce((sum, x) => sum + x.bps, 0) / firstFive.length;
    console.log(`  mean over the first 5 s: ${mbps(meanFive)} (the first second includes the keyframe the relay asks for as the viewer joins)`);
    for (const at of [5, 15]) {
      const s = c.series.find((x) => x.second === at);
      const fraction = s ? s.bps / RAMP.startBps : NaN;
      summary.push(
        `| (c) libwebrtc sender bitrate ${at} s after its viewer connected, ${idleMs === 0 ? 'cold' : `warm (${idleMs / 1000} s idle first)`} | ${s ? mbps(s.bps) : 'n/a'} = ${f(fraction * 100, 0)} % of start ${mbps(RAMP.startBps)} | ≥ ${TARGET_RAMP_FRACTION * 100} % ${at === 5 ? 'within 5 s' : '(reference)'} | ${fraction >= TARGET_RAMP_FRACTION ? 'met' : 'MISSED'} |`,
      );
    }
  }
  return summary;
}
