// The moments a real app meets at the relay (issue 21): a libwebrtc sender that makes keyframes
// only at the start and when asked (test/support/realistic-stream.ts drawing game-scene.ts; 720p30,
// start 10 / max 20 Mbps, libwebrtc's own offer) → SessionRelay in this process → chromium viewers.
// A viewer that joins long after the app's opening keyframe, a second viewer on a relay already
// streaming to a first, and loss on the ingest that NACK cannot repair: each time the relay asks
// the app for a keyframe, the app makes one, the viewer decodes it, and every RTCP packet the relay
// sent passes libwebrtc's rules. Bounds are generous for CI on 2 cores; `npm run bench:stream --
// --only d` holds the targets (a keyframe ~200 ms after the request, a first frame within 1 s).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { SessionRelay } from '@pixelfleet/agent/test-support';
import { captureRtcp, type RtcpCapture } from '../support/relay/rtcp-capture';
import { RealisticStreamLab, keyframeAnswers, type KeyframeAnswers, type SenderPage, type SenderStats, type ViewerPage, type ViewerStats } from '../support/realistic-stream';
import { appVideoSsrcs, dropAtIngest, type IngestPacketDrop } from '../support/ingest-packet-drop';
import { printMoment } from '../support/moment-figures';

const BITRATE = { startBps: 10_000_000, minBps: 1_000_000, maxBps: 20_000_000 };
const SIZE = { width: 1280, height: 720, fps: 30 };
/** The app streams alone this long before the late viewer joins: its opening keyframe is long past. */
const ALONE_MS = 10_000;
/**
 * A keyframe leaves the app's encoder within this of the relay's request, ms (the bench's target:
 * ~200). Generous: on 2 shared cores the app's encoder runs at a third of its frame rate. An app
 * that drops the request makes none for ~100 s (issue 21).
 */
const KEYFRAME_BOUND_MS = 3_000;
/** A viewer decodes within this of its peer connecting, or of the request after a loss, ms (the bench's target: 1,000; as realistic-sender.test.ts). */
const DECODE_BOUND_MS = 8_000;
/** The run of the app's video packets dropped at the ingest, with every retransmission of them. */
const DROPPED_PACKETS = 100;
const POLL_MS = 100;

const noop = (): void => undefined;
const epochNow = (): number => performance.timeOrigin + performance.now();
const round = (ms: number): number => Math.round(ms);

/** Reads until `done` holds or `timeoutMs` passes; returns the last reading either way (the test then says what failed). */
async function poll<T>(read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

interface Session {
  relay: SessionRelay;
  sender: SenderPage;
  capture: RtcpCapture;
  /** The app's offer answered by the relay; `beforeAnswer` sees the offer first. */
  startApp(beforeAnswer?: (offer: string) => void): Promise<void>;
  addViewer(id: string): Promise<ViewerPage>;
  close(): Promise<void>;
}

let lab: RealisticStreamLab;

beforeAll(async () => {
  lab = await RealisticStreamLab.start();
}, 60_000);

afterAll(async () => {
  await lab?.close();
});

/** A new relay and the app's page, nothing negotiated yet. */
async function openSession(): Promise<Session> {
  const capture = captureRtcp();
  const relay = new SessionRelay({ iceServers: [], hostAddresses: ['127.0.0.1'], bitrate: BITRATE, log: pino({ level: 'silent' }) });
  const viewers = new Map<string, ViewerPage>();
  let sender: SenderPage | undefined;
  const close = async (): Promise<void> => {
    await Promise.allSettled([sender?.close(), ...[...viewers.values()].map((v) => v.close())]);
    relay.close();
    await relay.whenClosed();
    capture.stop();
  };
  try {
    sender = await lab.sender(SIZE, (c) => void relay.addStreamerCandidate(c).catch(noop));
  } catch (err) {
    await close();
    throw err;
  }
  const app = sender;
  relay.onStreamerCandidate((c) => void app.addCandidate(c).catch(noop));
  relay.onViewerCandidate((id, c) => void viewers.get(id)?.addCandidate(c).catch(noop));
  return {
    relay,
    sender: app,
    capture,
    startApp: async (beforeAnswer = noop) => {
      const offer = await app.offer();
      beforeAnswer(offer);
      await app.answer(await relay.acceptStreamerOffer(offer));
    },
    addViewer: async (id) => {
      const viewer = await lab.viewer((c) => void relay.addViewerCandidate(id, c).catch(noop));
      viewers.set(id, viewer);
      await relay.acceptViewerAnswer(id, await viewer.answer(await relay.addViewer(id)));
      return viewer;
    },
    close,
  };
}

/** A viewer connected before the app's video starts gets its opening keyframe: nothing asks for one. */
async function connectedBeforeTheApp(session: Session, id: string): Promise<ViewerPage> {
  const viewer = await session.addViewer(id);
  const v = await poll(() => viewer.stats(), (x) => x.connectedAt !== undefined, 20_000);
  expect(v.connectedAt, `viewer ${id} connects`).toBeDefined();
  return viewer;
}

/** The viewer's stats once it has decoded a frame, or DECODE_BOUND_MS + 2 s after it connected without one. */
function firstFrame(viewer: ViewerPage): Promise<ViewerStats> {
  return poll(
    () => viewer.stats(),
    (v) => v.firstFrameAt !== undefined || (v.connectedAt !== undefined && v.at - v.connectedAt > DECODE_BOUND_MS + 2_000),
    30_000,
  );
}

/** The viewer's stats once it has played `ms` past its first frame. */
function playing(viewer: ViewerPage, ms: number): Promise<ViewerStats> {
  return poll(
    () => viewer.stats(),
    (v) => v.firstFrameAt !== undefined && v.at - v.firstFrameAt >= ms,
    30_000,
  );
}

/** What a viewer's libwebrtc saw, for the log line of a moment. */
function viewerSummary(v: ViewerStats): Record<string, number | string> {
  return {
    firstFrameAfterConnectMs: v.firstFrameAt !== undefined && v.connectedAt !== undefined ? round(v.firstFrameAt - v.connectedAt) : 'none',
    connected: v.connectedAt !== undefined ? 'yes' : 'no',
    framesReceived: v.framesReceived,
    framesDecoded: v.framesDecoded,
    keyFramesDecoded: v.keyFramesDecoded,
    framesDropped: v.framesDropped,
    packetsReceived: v.packetsReceived,
    packetsLost: v.packetsLost,
    nack: v.nackCount,
    pli: v.pliCount,
  };
}

/** The relay's loss and keyframe counters, for the log line of a moment. */
function relaySummary(relay: SessionRelay): Record<string, number | string> {
  const r = relay.stats();
  return {
    requestsMade: r.keyframeRequestsMade,
    requestsToApp: r.keyframeRequestsToApp,
    fromViewers: r.keyframeRequestsFromViewers,
    coalesced: r.keyframeRequestsCoalesced,
    ingestMissing: r.ingestPacketsMissing,
    ingestAbandoned: r.ingestPacketsAbandoned,
    viewerNacks: r.viewerNacksReceived,
    viewerResent: r.viewerPacketsResent,
    viewerNackMisses: r.viewerNackMisses,
    phase: r.bitratePhase,
  };
}

/** What the app did about the relay's requests since `sinceMs` (epoch), checked the same way in every moment. */
function expectKeyframeAnswered(session: Session, sinceMs: number, before: SenderStats, after: SenderStats): KeyframeAnswers {
  const requests = session.capture.keyframeRequestTimes().filter((at) => at >= sinceMs);
  // From the last keyframe before the moment: each later one is paired with the request that asked for it.
  const answers = keyframeAnswers(requests, after.keyFrames.slice(Math.max(0, before.keyFrames.length - 1)));
  expect(requests.length, 'keyframe requests the relay sent the app').toBeGreaterThan(0);
  expect(after.keyFramesEncoded, "the app's keyFramesEncoded after the relay's request").toBeGreaterThan(before.keyFramesEncoded);
  expect(answers.latenciesMs.length, 'keyframes that answered a request').toBeGreaterThan(0);
  expect(Math.max(...answers.latenciesMs), 'request → keyframe, ms').toBeLessThanOrEqual(KEYFRAME_BOUND_MS);
  return answers;
}

describe('the relay at the moments a real app meets (a libwebrtc sender that makes keyframes only when asked)', () => {
  it("a viewer that joins 10 s after the app's first frame: the app, asked by nobody until then, made only its opening keyframe; asked by the relay, it makes one and the viewer decodes", async () => {
    const session = await openSession();
    try {
      await session.startApp();
      const started = await poll(() => session.sender.stats(), (s) => s.firstFrameAtMs !== undefined, 20_000);
      expect(started.firstFrameAtMs, "the app's first encoded frame").toBeDefined();
      const firstFrameAtMs = started.firstFrameAtMs!;
      // The scenario is the wait: the app streams to the relay alone, its opening keyframe to no one.
      await new Promise((r) => setTimeout(r, firstFrameAtMs + ALONE_MS / 2 - epochNow()));
      const half = await session.sender.stats();
      await new Promise((r) => setTimeout(r, firstFrameAtMs + ALONE_MS - epochNow()));
      const alone = await session.sender.stats();
      const aloneMbps = ((alone.bytesSent - half.bytesSent) * 8) / (alone.at - half.at) / 1000;

      const joinedAt = epochNow();
      const viewer = await session.addViewer('late');
      const seen = await firstFrame(viewer);
      const after = await session.sender.stats();
      const answers = keyframeAnswers(session.capture.keyframeRequestTimes().filter((at) => at >= joinedAt), after.keyFrames);
      printMoment({
        moment: 'late viewer (720p30, relay)',
        requestToKeyframeMs: answers.latenciesMs.map(round),
        ...(seen.firstFrameAt !== undefined && seen.connectedAt !== undefined ? { pictureMs: round(seen.firstFrameAt - seen.connectedAt) } : {}),
        alone: { seconds: ALONE_MS / 1000, keyFramesEncoded: alone.keyFramesEncoded, keyframeKB: alone.keyFrames.map((k) => Math.round(k.bytes / 1024)), mbps: +aloneMbps.toFixed(2) },
        viewer: viewerSummary(seen),
        unanswered: answers.unanswered,
        keyFramesEncoded: after.keyFramesEncoded,
        keyframeKB: after.keyFrames.slice(1).map((k) => Math.round(k.bytes / 1024)),
        appFramesEncoded: after.framesEncoded,
        relay: relaySummary(session.relay),
      });

      // Alone, nobody asked and the app made its opening keyframe only: no scene cut, no period.
      expect(alone.keyFramesEncoded).toBe(1);
      expect(alone.keyFrames).toHaveLength(1);
      expect(alone.pliCount + alone.firCount).toBe(0);
      expect(alone.keyFrames[0]!.bytes, 'the opening keyframe, bytes').toBeGreaterThan(100 * 1024);
      expect(alone.frameWidth).toBe(SIZE.width);
      // libwebrtc's own offer, narrowed by the relay: H.264 42e01f, with the app's sound beside it.
      expect(alone.codec).toMatch(/^video\/H264 .*profile-level-id=42e01f/);
      expect(alone.audioPacketsSent, 'the app streams sound').toBeGreaterThan(0);
      expect(aloneMbps, 'the app alone, held at the start bitrate, Mbps').toBeGreaterThan(3);

      expectKeyframeAnswered(session, joinedAt, alone, after);
      expect(seen.firstFrameAt, 'the late viewer decodes a frame').toBeDefined();
      expect(seen.firstFrameAt! - seen.connectedAt!, 'first frame after the viewer connects, ms').toBeLessThanOrEqual(DECODE_BOUND_MS);
      expect(() => session.capture.parseAll()).not.toThrow();
    } finally {
      await session.close();
    }
  }, 90_000);

  it('a second viewer on a relay already streaming to a first: the relay asks, the app makes a keyframe, the second viewer decodes and the first plays on', async () => {
    const session = await openSession();
    try {
      const first = await connectedBeforeTheApp(session, 'first');
      await session.startApp();
      const playingBefore = await playing(first, 1_000);
      expect(playingBefore.firstFrameAt, 'the first viewer decodes').toBeDefined();
      const before = await session.sender.stats();

      const joinedAt = epochNow();
      const second = await session.addViewer('second');
      const seen = await firstFrame(second);
      const after = await session.sender.stats();
      const firstAfter = await first.stats();
      const answers = keyframeAnswers(session.capture.keyframeRequestTimes().filter((at) => at >= joinedAt), after.keyFrames.slice(before.keyFrames.length - 1));
      printMoment({
        moment: 'second viewer (720p30, relay)',
        requestToKeyframeMs: answers.latenciesMs.map(round),
        ...(seen.firstFrameAt !== undefined && seen.connectedAt !== undefined ? { pictureMs: round(seen.firstFrameAt - seen.connectedAt) } : {}),
        second: viewerSummary(seen),
        first: viewerSummary(firstAfter),
        keyframeKB: after.keyFrames.slice(before.keyFrames.length).map((k) => Math.round(k.bytes / 1024)),
        appTargetMbps: +(after.targetBitrate / 1e6).toFixed(2),
        relay: relaySummary(session.relay),
      });

      expectKeyframeAnswered(session, joinedAt, before, after);
      expect(seen.firstFrameAt, 'the second viewer decodes a frame').toBeDefined();
      expect(seen.firstFrameAt! - seen.connectedAt!, 'first frame after the second viewer connects, ms').toBeLessThanOrEqual(DECODE_BOUND_MS);
      expect(firstAfter.framesDecoded, 'the first viewer plays on').toBeGreaterThan(playingBefore.framesDecoded);
      expect(() => session.capture.parseAll()).not.toThrow();
    } finally {
      await session.close();
    }
  }, 90_000);

  it('loss on the ingest that NACK cannot repair: the relay gives the packets up and asks for a keyframe, the app makes one and the viewer decodes it', async () => {
    let drop: IngestPacketDrop | undefined;
    const session = await openSession();
    try {
      const viewer = await connectedBeforeTheApp(session, 'viewer');
      await session.startApp((offer) => {
        drop = dropAtIngest(appVideoSsrcs(offer));
      });
      const settled = await playing(viewer, 1_000);
      expect(settled.firstFrameAt, 'the viewer decodes').toBeDefined();
      const before = { sender: await session.sender.stats(), viewer: await viewer.stats(), relay: session.relay.stats() };

      const lossAt = epochNow();
      const run = await drop!.dropRun(DROPPED_PACKETS);
      const relayAfter = await poll(() => session.relay.stats(), (r) => r.ingestPacketsAbandoned > before.relay.ingestPacketsAbandoned, 5_000);
      const healed = await poll(() => viewer.stats(), (v) => v.keyFramesDecoded > before.viewer.keyFramesDecoded, 10_000);
      const healedAtMs = healed.at + healed.timeOrigin;
      const after = await session.sender.stats();
      const requests = session.capture.keyframeRequestTimes().filter((at) => at >= lossAt);
      printMoment({
        moment: 'unrepairable ingest loss (720p30, relay)',
        requestToKeyframeMs: keyframeAnswers(requests, after.keyFrames).latenciesMs.map(round),
        ...(requests[0] !== undefined && healed.keyFramesDecoded > before.viewer.keyFramesDecoded ? { pictureMs: round(healedAtMs - requests[0]) } : {}),
        dropped: run.sequenceNumbers.length,
        retransmissionsDropped: drop!.retransmissionsDropped,
        abandoned: relayAfter.ingestPacketsAbandoned - before.relay.ingestPacketsAbandoned,
        lossToRequestMs: requests[0] !== undefined ? round(requests[0] - run.endedAtMs) : 'none',
        viewer: viewerSummary(healed),
        relay: relaySummary(session.relay),
      });

      // The app did resend (NACK was tried) and the relay gave the packets up.
      expect(drop!.retransmissionsDropped, 'retransmissions of the dropped packets').toBeGreaterThan(0);
      expect(relayAfter.ingestPacketsAbandoned - before.relay.ingestPacketsAbandoned, 'packets the relay gave up').toBeGreaterThan(0);
      expectKeyframeAnswered(session, lossAt, before.sender, after);
      expect(healed.keyFramesDecoded, "the viewer decodes the app's new keyframe").toBeGreaterThan(before.viewer.keyFramesDecoded);
      expect(healedAtMs - requests[0]!, "the relay's request → the viewer's keyframe decoded, ms").toBeLessThanOrEqual(DECODE_BOUND_MS);
      expect(() => session.capture.parseAll()).not.toThrow();
    } finally {
      drop?.stop();
      await session.close();
    }
  }, 90_000);
});
