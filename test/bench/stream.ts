// Streaming benchmark (`npm run bench:stream`, inside a loopback-only network namespace): prints
// figures next to the targets of issues 3 and 9; never fails on slowness. Four parts:
//  (a) cold first frame: Debian chromium opens the share URL of an in-process control plane +
//      agent whose launcher runs the mock Unreal app, and the control plane's part of it;
//  (b) relay cost: SessionRelay alone in a child process, one 720p30 H.264 stream at 4 Mbps,
//      1/2/4 werift viewers, against the same stream sent straight to the viewers (no relay);
//      app and viewers in child processes of their own on both paths;
//  (c) libwebrtc ramp: a headless chromium page streams a canvas into the relay's ingest the way
//      Unreal does (offer → relay answer, trickled ICE) with one viewer; its outgoing bitrate.
//  (d) a realistic Unreal sender (high-entropy 1080p30 and 720p30 from chromium's libwebrtc) to a
//      chromium viewer, through the relay (in a child process) and direct, alternating: first
//      frame, viewer bitrate, loss, NACKs and keyframe requests, relay CPU (stream-realistic.ts).
// `--relay-process`, `--app-process`, `--viewers-process` are part (b)'s child modes. Options:
// --runs N (a), --seconds S (b window), --warmup S (b, before each window), --only a,b,c,d,
// --realistic-runs N (d, runs per size and path; default 20), --realistic-sizes 1080,720 (d),
// --cpu-prof (b: a V8 CPU profile of the relay process), --split-fanout (b: also 4 viewers with the
// fan-out split over two relay processes, the best a two-way parallel fan-out could do here).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { Page } from 'playwright-core';
import type { RtpPacket } from 'werift';
import { buildControlPlane, createLogger, loadControlPlaneConfig, type ControlPlane, type FleetEvent } from '@pixelfleet/control-plane';
import type { Agent } from '@pixelfleet/agent';
import type { AgentSessionEvent, DeliveredCommand } from '@pixelfleet/proto';
import { SessionRelay } from '../../agent/src/relay/session-relay';
import { FakeApp } from '../../agent/src/relay/test-support/fake-app';
import { FakeViewer } from '../../agent/src/relay/test-support/fake-viewer';
import { accessUnits, packetizeAccessUnit, type H264RtpPayload } from '../../agent/src/relay/test-support/h264-fixture';
import { TEST_ADMIN_TOKEN, TEST_JOIN_TOKEN } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { mockAppCommand } from '../support/mock-app';
import { launchChromium } from '../support/chromium';
import { benchRealistic, REALISTIC_SIZES, type RealisticSize } from './stream-realistic';
import { arg, BenchChild, f, mbps, median, percentile, serveParent, until, waitMs } from './bench-support';

const ROOT = resolve(import.meta.dirname, '../..');
/** The mock app's clip: 1280x720, 30 fps, IDR every 15 frames, ≈ 386 kbit/s. */
const CLIP_PATH = join(ROOT, 'test/mock-unreal/fixtures/testpattern.h264');

const TARGET_FIRST_FRAME_MS = 2_000;
const TARGET_CONTROL_PLANE_MS = 10;
const TARGET_ADDED_LATENCY_MS = 2;
const TARGET_CPU_PER_VIEWER = 5;
const TARGET_RAMP_FRACTION = 0.8;

const FIRST_FRAME_TIMEOUT_MS = 20_000;
const SESSION_END_TIMEOUT_MS = 20_000;
const STREAM_FPS = 30;
const STREAM_BPS = 4_000_000;
let relayWarmupMs = 6_000;
const RAMP = { startBps: 4_000_000, minBps: 1_000_000, maxBps: 8_000_000 };
const RAMP_SECONDS = 15;

// ---------------------------------------------------------------------------------------------
// Small helpers.

/** Wall-clock epoch ms with sub-ms resolution; comparable with a page's timeOrigin + now. */
const epochNow = (): number => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// (a) Cold first frame in chromium, and the control plane's part.

interface FirstFrameRun {
  sessionId: string;
  /** ms after navigation start (the page's performance.timeOrigin). */
  firstFrameRvfc: number | undefined;
  firstFramePoll: number | undefined;
  enqueued: number;
  /** Starting recorded: the scheduler placed it and StartSession was written to the agent's stream. */
  placed: number | undefined;
  startSessionAtAgent: number;
  appStarted: number | undefined;
  appIdentified: number | undefined;
  viewerConnected: number | undefined;
  running: number | undefined;
  /** In-process: the gateway's sessions.create() call → StartSession handed to the agent's command executor, ms. */
  controlPlaneMs: number;
  /** From the events table: Enqueued snapshot receivedAt (integer ms) → Date.now() at the agent. */
  controlPlaneTableMs: number;
}

interface PageMarks {
  timeOrigin: number;
  rvfc?: number;
  poll?: number;
}

/** Injected into every page before its scripts: notes the first frame of any <video>. */
function firstFrameProbe(): void {
  const marks: PageMarks = { timeOrigin: performance.timeOrigin };
  (window as unknown as { __pfBench: PageMarks }).__pfBench = marks;
  const seen = new WeakSet<HTMLVideoElement>();
  const timer = setInterval(() => {
    for (const video of Array.from(document.querySelectorAll('video'))) {
      if (!seen.has(video)) {
        seen.add(video);
        video.requestVideoFrameCallback((_now, meta) => {
          marks.rvfc ??= meta.presentationTime;
        });
      }
      if (marks.poll === undefined && video.getVideoPlaybackQuality().totalVideoFrames > 0) marks.poll = performance.now();
    }
    if (marks.poll !== undefined && marks.rvfc !== undefined) clearInterval(timer);
  }, 1);
}

interface ColdWorld {
  cp: ControlPlane;
  agent: Agent;
  shareUrl: string;
  projectId: string;
  /** Per session: performance-epoch times of what happened. */
  marks: Map<string, Partial<Record<'enqueued' | 'placed' | 'startSession' | 'running' | 'appStarted' | 'appIdentified' | 'viewerConnected' | 'terminated', number>> & { startSessionWall?: number }>;
  close(): Promise<void>;
}

async function coldWorld(): Promise<ColdWorld> {
  const dirs: string[] = [];
  const cpDir = mkdtempSync(join(tmpdir(), 'pf-bench-cp-'));
  dirs.push(cpDir);
  const config = loadControlPlaneConfig({
    overrides: {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: 0 },
      dataDir: cpDir,
      adminToken: TEST_ADMIN_TOKEN,
      agentJoinToken: TEST_JOIN_TOKEN,
      network: { allowPrivateUrls: true },
      logLevel: 'error',
    },
  });
  const cp = buildControlPlane(config, { logger: createLogger('error', process.stderr) });
  const started = await cp.start();
  const owner = cp.accounts.createUser('bench@example.com');
  const projectId = cp.accounts.createProject(owner.userId, 'Bench', 'europe').projectId;
  cp.registerLocalBuild(projectId);
  cp.db
    .prepare('UPDATE projects SET settings = ? WHERE id = ?')
    .run(JSON.stringify({ resX: 1280, resY: 720, fps: 30, minBitrate: 1_000_000, maxBitrate: 8_000_000 }), projectId);

  const { agent, dataDir } = await startTestAgent({ grpcAddress: started.grpcAddress, launcherCommand: mockAppCommand() });
  dirs.push(dataDir);
  await linkReaches(agent, 'connected');

  const marks: ColdWorld['marks'] = new Map();
  const mark = (sessionId: string) => {
    let m = marks.get(sessionId);
    if (!m) marks.set(sessionId, (m = {}));
    return m;
  };
  // Control plane side: the events are recorded synchronously inside the status change.
  const stopFollowing = cp.events.follow(0, (e: FleetEvent) => {
    if (e.type !== 'session.status' || e.sessionId === undefined) return;
    const status = (e.data as { status?: string }).status;
    if (status === 'Starting') mark(e.sessionId).placed = epochNow();
    else if (status === 'Running') mark(e.sessionId).running = epochNow();
    else if (status === 'Terminated') mark(e.sessionId).terminated = epochNow();
  });
  // The viewer gateway creates the session (snapshot and event rows, Enqueued) in one call; its
  // start is the honest "enqueue" instant. A method lookup at call time, so wrapping works.
  const sessions = cp.sessions;
  const create = sessions.create.bind(sessions);
  sessions.create = (...args: Parameters<typeof create>) => {
    const at = epochNow();
    const created = create(...args);
    mark(created.session.sessionId).enqueued = at;
    return created;
  };
  // Agent side: the moment the gRPC stream hands StartSession to the command executor, and the
  // session reports the agent sends up. Both are method lookups at call time, so wrapping works.
  const executor = agent.executor;
  const handle = executor.handle.bind(executor);
  executor.handle = (d: DeliveredCommand) => {
    if (d.command.kind === 'startSession') {
      const m = mark(d.command.sessionId);
      m.startSession = epochNow();
      m.startSessionWall = Date.now();
    }
    handle(d);
  };
  const link = agent.link;
  const sendSessionEvent = link.sendSessionEvent.bind(link);
  link.sendSessionEvent = (event: AgentSessionEvent) => {
    const m = mark(event.sessionId);
    if (event.kind === 'appStarted') m.appStarted = epochNow();
    else if (event.kind === 'appIdentified') m.appIdentified = epochNow();
    else if (event.kind === 'viewerConnected') m.viewerConnected ??= epochNow();
    return sendSessionEvent(event);
  };

  return {
    cp,
    agent,
    shareUrl: `${started.publicUrls.share}/${projectId}`,
    projectId,
    marks,
    async close() {
      stopFollowing();
      await agent.close();
      await cp.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

async function benchFirstFrame(runs: number): Promise<{ warmup: FirstFrameRun | undefined; runs: FirstFrameRun[]; failures: string[] }> {
  const world = await coldWorld();
  const browser = await launchChromium();
  const out: FirstFrameRun[] = [];
  const failures: string[] = [];
  let warmup: FirstFrameRun | undefined;
  try {
    await browser.context.addInitScript(firstFrameProbe);
    for (let run = 0; run <= runs; run++) {
      const known = new Set(world.marks.keys());
      const page = await browser.context.newPage();
      // A first-time visitor: no HTTP cache for the player's page and bundle.
      const cdp = await browser.context.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      let sessionId: string | undefined;
      try {
        await page.goto(world.shareUrl, { waitUntil: 'commit' });
        const marks = await until(
          () => page.evaluate(() => {
            const m = (window as unknown as { __pfBench?: PageMarks }).__pfBench;
            return m && m.rvfc !== undefined && m.poll !== undefined ? m : undefined;
          }),
          'the first decoded frame',
          FIRST_FRAME_TIMEOUT_MS,
          25,
        ).catch(async (err: unknown) => {
          const partial = await page.evaluate(() => (window as unknown as { __pfBench?: PageMarks }).__pfBench);
          if (partial && (partial.rvfc !== undefined || partial.poll !== undefined)) return partial;
          throw err;
        });
        sessionId = [...world.marks.keys()].find((id) => !known.has(id));
        const m = sessionId ? world.marks.get(sessionId) : undefined;
        if (!sessionId || !m || m.enqueued === undefined || m.startSession === undefined || m.startSessionWall === undefined) throw new Error('no session marks');
        const rel = (t: number | undefined) => (t === undefined ? undefined : t - marks.timeOrigin);
        const snapshot = world.cp.db
          .prepare("SELECT received_at FROM session_snapshots WHERE session_id = ? AND json_extract(data, '$.status') = 'Enqueued'")
          .get(sessionId) as { received_at: number } | undefined;
        const result: FirstFrameRun = {
          sessionId,
          firstFrameRvfc: marks.rvfc,
          firstFramePoll: marks.poll,
          enqueued: m.enqueued - marks.timeOrigin,
          placed: rel(m.placed),
          startSessionAtAgent: m.startSession - marks.timeOrigin,
          appStarted: rel(m.appStarted),
          appIdentified: rel(m.appIdentified),
          viewerConnected: rel(m.viewerConnected),
          running: rel(m.running),
          controlPlaneMs: m.startSession - m.enqueued,
          controlPlaneTableMs: snapshot ? m.startSessionWall - snapshot.received_at : NaN,
        };
        if (run === 0) warmup = result;
        else out.push(result);
      } catch (err) {
        failures.push(`run ${run}: ${(err as Error).message}`);
      } finally {
        await page.close();
      }
      // Wait until the session is over and the slot is free, so the next run is cold, not queued.
      sessionId ??= [...world.marks.keys()].find((id) => !known.has(id));
      if (sessionId) {
        const id = sessionId;
        await until(() => (world.marks.get(id)?.terminated !== undefined ? true : undefined), `session ${id} to end`, SESSION_END_TIMEOUT_MS).catch((err: unknown) => {
          failures.push((err as Error).message);
        });
        await waitMs(500); // the previous app's log upload and process teardown
      }
    }
  } finally {
    await browser.close();
    await world.close();
  }
  return { warmup, runs: out, failures };
}

// ---------------------------------------------------------------------------------------------
// (b) Relay cost. The app (FakeApp peers + pacer), the viewers (FakeViewer peers + latency probe)
// and the relay (SessionRelay alone) each run in their own child process, for the direct and the
// relayed path alike: no measured packet waits for work this process or the other side does in a
// shared event loop (with app and viewers in one loop, relayed packets that came back while the app
// was still writing a frame waited for it; direct packets never could). Latency is measured the
// same way on both paths: a CLOCK_MONOTONIC stamp (process.hrtime, one clock for every process on
// the machine) written into each packet just before the app hands it to werift, read when the
// viewer's werift delivers it.

type ToApp = { type: 'offer' } | { type: 'answer'; index: number; sdp: string } | { type: 'connected' } | { type: 'start' } | { type: 'stop' };
type ToViewers = { type: 'answer'; sdp: string } | { type: 'connected' } | { type: 'reset' } | { type: 'samples' };
type ToRelay =
  | { type: 'offer'; sdp: string }
  | { type: 'addViewer'; id: string }
  | { type: 'viewerAnswer'; id: string; sdp: string }
  | { type: 'cpuStart' }
  | { type: 'cpuStop' };
interface RelayCpu {
  percentOfOneCore: number;
  packetsIn: number;
  packetsOut: number;
  bytesIn: number;
  seconds: number;
  rssMb: number;
}

const CHILD_MODES = { app: '--app-process', viewers: '--viewers-process', relay: '--relay-process' } as const;
/** `--cpu-prof`: the relay child writes a V8 CPU profile here (printed at the end of part (b)). */
let relayCpuProfDir: string | undefined;
/** Byte offset of the send stamp in each RTP payload (after the FU-A indicator and header). */
const STAMP_OFFSET = 2;

/** A child of this script in one of part (b)'s modes. */
function benchChild<Request extends { type: string }>(mode: keyof typeof CHILD_MODES): BenchChild<Request> {
  const profile = mode === 'relay' && relayCpuProfDir !== undefined ? ['--cpu-prof', '--cpu-prof-dir', relayCpuProfDir] : [];
  return new BenchChild<Request>({ script: fileURLToPath(import.meta.url), args: [CHILD_MODES[mode]], execArgv: profile, label: mode });
}

function runAppProcess(): void {
  const apps: FakeApp[] = [];
  const { frames } = streamFrames();
  let timer: NodeJS.Timeout | undefined;
  const stamp = (payload: Buffer): Buffer => {
    const copy = Buffer.from(payload);
    if (copy.length >= STAMP_OFFSET + 8) copy.writeBigUInt64BE(process.hrtime.bigint(), STAMP_OFFSET);
    return copy;
  };
  const stop = (): void => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  // Each packet goes out before the next is stamped: werift encrypts inside sendRtp, but dgram
  // sends in a nextTick (it "resolves" the address), so a plain loop would encrypt the whole frame
  // for every peer first, and each stamp would also count the app's later packets — N times more
  // of them on the direct path (N peers) than toward the relay (one).
  const sent = (): Promise<void> => new Promise((r) => process.nextTick(r));
  const writeFrame = async (frame: H264RtpPayload[]): Promise<void> => {
    for (const app of apps) app.nextFrame();
    for (const { payload, marker } of frame) {
      // Packet by packet to every peer, as the relay fans each packet out to its viewers.
      for (const app of apps) {
        app.writeVideo(stamp(payload), marker);
        await sent();
      }
    }
  };
  serveParent<ToApp>(
    async (m) => {
      switch (m.type) {
        case 'offer': {
          // One peer per viewer on the direct path, as Unreal serves several players; one toward the relay.
          const app = new FakeApp({ sendStartupMessages: false });
          apps.push(app);
          return { index: apps.length - 1, sdp: await app.offer() };
        }
        case 'answer':
          return apps[m.index]?.acceptAnswer(m.sdp);
        case 'connected':
          return until(() => (apps.every((a) => a.pc.connectionState === 'connected') ? true : undefined), 'the app peers to connect', 15_000);
        case 'start': {
          let n = 0;
          timer = setInterval(() => {
            writeFrame(frames[n++ % frames.length] ?? []).catch((err: unknown) => console.error('app process:', err));
          }, 1000 / STREAM_FPS);
          return;
        }
        case 'stop':
          stop();
          return;
      }
    },
    async () => {
      stop();
      await Promise.all(apps.map((a) => a.close()));
    },
  );
}

function runViewersProcess(): void {
  const viewers: FakeViewer[] = [];
  let samples: number[] = [];
  serveParent<ToViewers>(
    async (m) => {
      switch (m.type) {
        case 'answer': {
          const viewer = new FakeViewer({ recordRtp: false });
          viewer.pc.onTrack.subscribe((track) => {
            track.onReceiveRtp.subscribe((rtp: RtpPacket) => {
              if (rtp.payload.length < STAMP_OFFSET + 8) return;
              samples.push(Number(process.hrtime.bigint() - rtp.payload.readBigUInt64BE(STAMP_OFFSET)) / 1e6);
            });
          });
          viewers.push(viewer);
          return { sdp: await viewer.answer(m.sdp) };
        }
        case 'connected':
          return until(() => (viewers.every((v) => v.pc.connectionState === 'connected') ? true : undefined), 'the viewers to connect', 15_000);
        case 'reset':
          samples = [];
          return;
        case 'samples':
          return samples;
      }
    },
    async () => {
      await Promise.all(viewers.map((v) => v.close()));
    },
  );
}

function runRelayProcess(): void {
  const relay = new SessionRelay({
    iceServers: [],
    hostAddresses: ['127.0.0.1'],
    bitrate: { startBps: STREAM_BPS, minBps: 1_000_000, maxBps: 8_000_000 },
    log: pino({ level: 'silent' }),
  });
  const snap = () => ({ cpu: process.cpuUsage(), at: performance.now(), ...relay.stats() });
  let mark = snap();
  const parent = serveParent<ToRelay>(
    async (m) => {
      switch (m.type) {
        case 'offer':
          return { sdp: await relay.acceptStreamerOffer(m.sdp) };
        case 'addViewer':
          return { sdp: await relay.addViewer(m.id) };
        case 'viewerAnswer':
          return relay.acceptViewerAnswer(m.id, m.sdp);
        case 'cpuStart':
          mark = snap();
          return;
        case 'cpuStop': {
          const used = process.cpuUsage(mark.cpu);
          const seconds = (performance.now() - mark.at) / 1000;
          const now = relay.stats();
          return {
            percentOfOneCore: ((used.user + used.system) / 1e6 / seconds) * 100,
            packetsIn: now.packetsIn - mark.packetsIn,
            packetsOut: now.packetsOut - mark.packetsOut,
            bytesIn: now.bytesIn - mark.bytesIn,
            seconds,
            rssMb: process.memoryUsage().rss / 2 ** 20,
          } satisfies RelayCpu;
        }
      }
    },
    async () => {
      relay.close();
      await relay.whenClosed();
    },
  );
  relay.on('viewerConnected', (id) => parent.emit(`viewerConnected:${id}`));
}

/**
 * The mock app's real 720p30 clip, each access unit topped up with a filler-data NAL unit
 * (type 12, which decoders skip) so the stream averages STREAM_BPS, like an Unreal encoder at
 * its start bitrate. Packetized once; looped.
 */
function streamFrames(): { frames: H264RtpPayload[][]; bytesPerSecond: number } {
  const units = accessUnits(readFileSync(CLIP_PATH));
  const perFrame = Math.round(STREAM_BPS / 8 / STREAM_FPS);
  let total = 0;
  const frames = units.map((nals) => {
    const size = nals.reduce((sum, n) => sum + n.length + 4, 0);
    const pad = perFrame - size;
    const filler = pad > 16 ? [Buffer.concat([Buffer.from([0x0c]), Buffer.alloc(pad - 6, 0xff), Buffer.from([0x80])])] : [];
    total += Math.max(size, perFrame);
    // Filler data may follow the primary coded picture within its access unit (H.264 §7.4.1.2.3).
    return packetizeAccessUnit([...nals, ...filler], 1_100);
  });
  return { frames, bytesPerSecond: (total / units.length) * STREAM_FPS };
}

interface LatencyRow {
  viewers: number;
  p50: number;
  p95: number;
  samples: number;
}
interface RelayRow extends LatencyRow {
  cpu: number;
  pktIn: number;
  pktOut: number;
  bpsIn: number;
  rssMb: number;
}

/** Latency percentiles of the viewers' samples over one window (after the warm-up). */
async function measureWindow(viewers: BenchChild<ToViewers>[], windowMs: number, during?: () => Promise<void>): Promise<LatencyRow> {
  await waitMs(relayWarmupMs); // JIT, DTLS/SCTP start-up of the newest viewer, its keyframe
  await Promise.all(viewers.map((v) => v.request({ type: 'reset' })));
  await (during ? during() : waitMs(windowMs));
  const samples = (await Promise.all(viewers.map((v) => v.request<number[]>({ type: 'samples' })))).flat();
  return { viewers: viewers.length, p50: percentile(samples, 50), p95: percentile(samples, 95), samples: samples.length };
}

/** A viewer in a process of its own, like a browser on its own machine: no viewer waits for another's packets. */
async function addViewerProcess(viewers: BenchChild<ToViewers>[], offerSdp: string): Promise<string> {
  const viewer = benchChild<ToViewers>('viewers');
  viewers.push(viewer);
  const { sdp } = await viewer.request<{ sdp: string }>({ type: 'answer', sdp: offerSdp });
  return sdp;
}

async function directLatency(counts: number[], windowMs: number): Promise<LatencyRow[]> {
  const rows: LatencyRow[] = [];
  for (const count of counts) {
    const app = benchChild<ToApp>('app');
    const viewers: BenchChild<ToViewers>[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const offer = await app.request<{ index: number; sdp: string }>({ type: 'offer' });
        await app.request({ type: 'answer', index: offer.index, sdp: await addViewerProcess(viewers, offer.sdp) });
      }
      await Promise.all([app.request({ type: 'connected' }), ...viewers.map((v) => v.request({ type: 'connected' }))]);
      await app.request({ type: 'start' });
      rows.push(await measureWindow(viewers, windowMs));
      await app.request({ type: 'stop' });
    } finally {
      await Promise.all([app.close(), ...viewers.map((v) => v.close())]);
    }
  }
  return rows;
}

/** One app peer → the relay's ingest (the app's offer, the relay's answer). */
async function connectIngest(app: BenchChild<ToApp>, relay: BenchChild<ToRelay>): Promise<void> {
  const offer = await app.request<{ index: number; sdp: string }>({ type: 'offer' });
  const { sdp: answer } = await relay.request<{ sdp: string }>({ type: 'offer', sdp: offer.sdp });
  await app.request({ type: 'answer', index: offer.index, sdp: answer });
}

/** A viewer process on the relay, resolved once the relay reports it connected. */
async function addRelayViewer(relay: BenchChild<ToRelay>, viewers: BenchChild<ToViewers>[], id: string): Promise<void> {
  const connected = relay.event(`viewerConnected:${id}`);
  const { sdp } = await relay.request<{ sdp: string }>({ type: 'addViewer', id });
  await relay.request({ type: 'viewerAnswer', id, sdp: await addViewerProcess(viewers, sdp) });
  await connected;
}

async function relayCost(counts: number[], windowMs: number): Promise<RelayRow[]> {
  const relay = benchChild<ToRelay>('relay');
  const app = benchChild<ToApp>('app');
  const viewers: BenchChild<ToViewers>[] = [];
  const rows: RelayRow[] = [];
  try {
    await connectIngest(app, relay);
    await app.request({ type: 'connected' });
    await app.request({ type: 'start' });
    for (const count of counts) {
      while (viewers.length < count) {
        await addRelayViewer(relay, viewers, `bench-${viewers.length}`);
      }
      let cpu: RelayCpu | undefined;
      const latency = await measureWindow(viewers, windowMs, async () => {
        await relay.request({ type: 'cpuStart' });
        await waitMs(windowMs);
        cpu = await relay.request<RelayCpu>({ type: 'cpuStop' });
      });
      if (cpu === undefined) throw new Error('no CPU figures from the relay process');
      rows.push({
        ...latency,
        cpu: cpu.percentOfOneCore,
        pktIn: cpu.packetsIn / cpu.seconds,
        pktOut: cpu.packetsOut / cpu.seconds,
        bpsIn: (cpu.bytesIn * 8) / cpu.seconds,
        rssMb: cpu.rssMb,
      });
    }
    await app.request({ type: 'stop' });
  } finally {
    await Promise.all([app.close(), relay.close(), ...viewers.map((v) => v.close())]);
  }
  return rows;
}

/**
 * `--split-fanout`: 4 viewers, their fan-out split over two relay processes (2 viewers each, each
 * relay with its own ingest peer from the app). No hand-off between threads and no shared event
 * loop: an upper bound for what a two-way parallel fan-out (viewer legs on worker threads) could
 * do on this machine. The app pays one more send per packet, as it would not with workers.
 */
async function splitFanoutLatency(windowMs: number): Promise<LatencyRow> {
  const relays = [benchChild<ToRelay>('relay'), benchChild<ToRelay>('relay')];
  const app = benchChild<ToApp>('app');
  const viewers: BenchChild<ToViewers>[] = [];
  try {
    for (const relay of relays) await connectIngest(app, relay);
    await app.request({ type: 'connected' });
    await app.request({ type: 'start' });
    for (let i = 0; i < 4; i++) await addRelayViewer(relays[i % relays.length]!, viewers, `bench-split-${i}`);
    const row = await measureWindow(viewers, windowMs);
    await app.request({ type: 'stop' });
    return row;
  } finally {
    await Promise.all([app.close(), ...relays.map((r) => r.close()), ...viewers.map((v) => v.close())]);
  }
}

// ---------------------------------------------------------------------------------------------
// (c) A libwebrtc sender (chromium) into the relay's ingest, as Unreal would be.

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

async function libwebrtcRamp(): Promise<RampResult> {
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
    // One viewer, attached as a browser would be.
    const viewerConnected = new Promise<void>((r) => relay.on('viewerConnected', () => r()));
    await relay.acceptViewerAnswer('viewer-1', await viewer.answer(await relay.addViewer('viewer-1')));
    await until(() => page.evaluate(() => ((window as unknown as PageApi).pc.connectionState === 'connected' ? true : undefined)), 'the streamer page to connect', 15_000, 10);
    const connectMs = performance.now() - began;
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

// ---------------------------------------------------------------------------------------------
// The driver.

async function main(): Promise<void> {
  const runs = Number(arg('--runs', '10'));
  const windowMs = Number(arg('--seconds', '8')) * 1000;
  relayWarmupMs = Number(arg('--warmup', '6')) * 1000;
  if (process.argv.includes('--cpu-prof')) relayCpuProfDir = mkdtempSync(join(tmpdir(), 'pf-bench-relay-prof-'));
  const only = new Set(arg('--only', 'a,b,c,d').split(','));
  const realisticRuns = Number(arg('--realistic-runs', '20'));
  const realisticSizes = arg('--realistic-sizes', '1080,720').split(',').map(Number);
  if (!(Number.isInteger(realisticRuns) && realisticRuns > 0) || !realisticSizes.every((s): s is RealisticSize => s in REALISTIC_SIZES)) {
    throw new Error(`--realistic-runs takes a positive integer, --realistic-sizes a list of ${Object.keys(REALISTIC_SIZES).join(', ')}`);
  }
  const began = performance.now();
  const summary: string[] = [];
  console.log(`bench:stream — ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} CPUs, netns=${process.env.PIXELFLEET_NETNS === '1' ? 'loopback-only' : 'host (not isolated!)'}`);

  if (only.has('a')) {
    console.log(`\n(a) cold first frame: chromium → share URL → queue → agent launches the mock app → relay → <video>; ${runs} runs + 1 warm-up`);
    const a = await benchFirstFrame(runs);
    const ff = a.runs.map((r) => r.firstFrameRvfc ?? r.firstFramePoll ?? NaN).filter(Number.isFinite);
    const polled = a.runs.map((r) => r.firstFramePoll ?? NaN).filter(Number.isFinite);
    const cpMs = a.runs.map((r) => r.controlPlaneMs);
    const cpTable = a.runs.map((r) => r.controlPlaneTableMs).filter(Number.isFinite);
    const col = (pick: (r: FirstFrameRun) => number | undefined) => f(median(a.runs.map(pick).filter((v): v is number => v !== undefined)), 0);
    console.log('  ms after navigation start (page performance.timeOrigin; Node times converted through the shared wall clock, ±1 ms):');
    console.log('  | run | enqueue (sessions.create) | placed (Starting) | StartSession at agent | app spawned | app identified | viewer connected (agent) | Running | first frame rVFC | first frame poll | CP part (in-process) | CP part (table) |');
    console.log('  |---|---|---|---|---|---|---|---|---|---|---|---|');
    const line = (label: string, r: FirstFrameRun) =>
      console.log(
        `  | ${label} | ${f(r.enqueued, 0)} | ${f(r.placed ?? NaN, 0)} | ${f(r.startSessionAtAgent, 0)} | ${f(r.appStarted ?? NaN, 0)} | ${f(r.appIdentified ?? NaN, 0)} | ${f(r.viewerConnected ?? NaN, 0)} | ${f(r.running ?? NaN, 0)} | ${f(r.firstFrameRvfc ?? NaN, 0)} | ${f(r.firstFramePoll ?? NaN, 0)} | ${f(r.controlPlaneMs, 2)} | ${f(r.controlPlaneTableMs, 0)} |`,
      );
    if (a.warmup) line('warm-up (not counted)', a.warmup);
    a.runs.forEach((r, i) => line(String(i + 1), r));
    console.log(
      `  | median | ${col((r) => r.enqueued)} | ${col((r) => r.placed)} | ${col((r) => r.startSessionAtAgent)} | ${col((r) => r.appStarted)} | ${col((r) => r.appIdentified)} | ${col((r) => r.viewerConnected)} | ${col((r) => r.running)} | ${col((r) => r.firstFrameRvfc)} | ${col((r) => r.firstFramePoll)} | ${f(median(cpMs), 2)} | ${f(median(cpTable), 0)} |`,
    );
    for (const failure of a.failures) console.log(`  !! ${failure}`);
    console.log('  first frame: requestVideoFrameCallback presentationTime of the first frame (poll: getVideoPlaybackQuality().totalVideoFrames > 0, 1 ms timer, clamped to ~4 ms);');
    console.log('  HTTP cache disabled per page (a first-time visitor). CP part (in-process): control plane and agent run in this process; from the');
    console.log('  gateway\'s call to sessions.create() (when the share WebSocket opens; it writes the Enqueued rows) to the agent\'s executor');
    console.log('  receiving StartSession over gRPC on loopback (SQLite writes + scheduler turn + placement + gRPC stream). CP part (table): from the');
    console.log('  Enqueued snapshot row\'s received_at (integer ms) to Date.now() at the agent, so ±1 ms.');
    summary.push(
      `| (a) first frame, cold, median of ${ff.length} | ${f(median(ff), 0)} ms (p90 ${f(percentile(ff, 90), 0)} ms; poll median ${f(median(polled), 0)} ms) | ≤ ${TARGET_FIRST_FRAME_MS} ms | ${median(ff) <= TARGET_FIRST_FRAME_MS ? 'met' : 'MISSED'} |`,
      `| (a) control plane part (enqueue → StartSession at agent), median of ${cpMs.length} | ${f(median(cpMs), 2)} ms (p90 ${f(percentile(cpMs, 90), 2)}; table ${f(median(cpTable), 0)} ms) | ≤ ${TARGET_CONTROL_PLANE_MS} ms | ${median(cpMs) <= TARGET_CONTROL_PLANE_MS ? 'met' : 'MISSED'} |`,
    );
  }

  if (only.has('b')) {
    const { bytesPerSecond } = streamFrames();
    console.log(`\n(b) relay cost: mock app's 1280x720 30 fps clip + filler NALs ≈ ${mbps(bytesPerSecond * 8)}; ${windowMs / 1000} s windows after ${relayWarmupMs / 1000} s warm-up`);
    console.log('  peers: werift everywhere (app = FakeApp, viewers = FakeViewer from agent/src/relay/test-support), no browser. The app, each viewer');
    console.log('  and the relay run in child processes of their own on both paths (relay CPU from its process.cpuUsage(): relay + Node idle).');
    console.log('  Latency: a monotonic-clock stamp written into each packet as the app hands it to werift → the viewer\'s onReceiveRtp;');
    console.log('  direct = the app with one peer per viewer, each packet sent before the next is stamped.');
    const direct = await directLatency([1, 2, 4], windowMs);
    const relayed = await relayCost([0, 1, 2, 4], windowMs);
    const base = relayed.find((r) => r.viewers === 0);
    console.log('  | viewers | path | relay pkt/s in → out | relay in | relay CPU (one core) | per viewer over 0 viewers | relay RSS | latency p50 / p95 | added p50 vs direct |');
    console.log('  |---|---|---|---|---|---|---|---|---|');
    for (const d of direct) console.log(`  | ${d.viewers} | direct (no relay) | – | – | – | – | – | ${f(d.p50, 2)} / ${f(d.p95, 2)} ms (${d.samples} pkts) | – |`);
    for (const r of relayed) {
      const d = direct.find((x) => x.viewers === r.viewers);
      const perViewer = r.viewers > 0 && base ? (r.cpu - base.cpu) / r.viewers : NaN;
      console.log(
        `  | ${r.viewers} | via relay | ${f(r.pktIn, 0)} → ${f(r.pktOut, 0)} | ${mbps(r.bpsIn)} | ${f(r.cpu)} % | ${r.viewers > 0 ? `${f(perViewer, 2)} %` : '–'} | ${f(r.rssMb, 0)} MB | ${r.viewers > 0 ? `${f(r.p50, 2)} / ${f(r.p95, 2)} ms (${r.samples} pkts)` : '–'} | ${d ? `${f(r.p50 - d.p50, 2)} ms` : '–'} |`,
      );
    }
    if (process.argv.includes('--split-fanout')) {
      const split = await splitFanoutLatency(windowMs);
      const d = direct.find((x) => x.viewers === 4);
      console.log(
        `  | 4 | via 2 relays, 2 viewers each (--split-fanout) | – | – | – | – | – | ${f(split.p50, 2)} / ${f(split.p95, 2)} ms (${split.samples} pkts) | ${d ? `${f(split.p50 - d.p50, 2)} ms` : '–'} |`,
      );
    }
    if (relayCpuProfDir !== undefined) console.log(`  relay CPU profile (whole run, 0 → 1 → 2 → 4 viewers): ${relayCpuProfDir}`);
    for (const r of relayed.filter((x) => x.viewers > 0)) {
      const d = direct.find((x) => x.viewers === r.viewers);
      const perViewer = base ? (r.cpu - base.cpu) / r.viewers : NaN;
      const added = d ? r.p50 - d.p50 : NaN;
      summary.push(
        `| (b) relay, ${r.viewers} viewer${r.viewers > 1 ? 's' : ''}: added latency p50 | ${f(added, 2)} ms (p95 ${f(r.p95, 2)} vs ${f(d?.p95 ?? NaN, 2)} ms) | ≤ ${TARGET_ADDED_LATENCY_MS} ms | ${added <= TARGET_ADDED_LATENCY_MS ? 'met' : 'MISSED'} |`,
        `| (b) relay, ${r.viewers} viewer${r.viewers > 1 ? 's' : ''}: CPU per viewer (over ingest-only ${f(base?.cpu ?? NaN)} %) | ${f(perViewer, 2)} % of a core (total ${f(r.cpu)} %) | ≤ ${TARGET_CPU_PER_VIEWER} % | ${perViewer <= TARGET_CPU_PER_VIEWER ? 'met' : 'MISSED'} |`,
      );
    }
  }

  if (only.has('c')) {
    console.log(`\n(c) libwebrtc sender ramp: chromium page (canvas.captureStream(30) 1280x720, panning texture + noise patch, H.264 42e01f preferred) → relay ingest`);
    console.log(`  (SessionRelay in this process, offer → answer, trickled ICE; bitrate start ${mbps(RAMP.startBps)}, min ${mbps(RAMP.minBps)}, max ${mbps(RAMP.maxBps)}) → one werift viewer`);
    const c = await libwebrtcRamp();
    console.log(`  connected in ${f(c.connectMs, 0)} ms; codec ${c.codec}${c.encoder ? `; encoder ${c.encoder}` : ''}; relay REMB ${mbps(c.rembBps)}; viewer received ${mbps(c.viewerBps)} (payload, 15 s average)`);
    console.log('  | s after connected | sent (outbound-rtp bytesSent Δ over 1 s) | of which retransmitted | targetBitrate | availableOutgoingBitrate | frame | fps | limited by |');
    console.log('  |---|---|---|---|---|---|---|---|');
    for (const s of c.series)
      console.log(`  | ${s.second} | ${mbps(s.bps)} | ${mbps(s.rtxBps)} | ${s.target !== undefined ? mbps(s.target) : '–'} | ${s.available !== undefined ? mbps(s.available) : '–'} | ${s.size} | ${f(s.fps ?? NaN, 0)} | ${s.limit ?? '–'} |`);
    const firstFive = c.series.filter((x) => x.second <= 5);
    const meanFive = firstFive.reduce((sum, x) => sum + x.bps, 0) / firstFive.length;
    console.log(`  mean over the first 5 s: ${mbps(meanFive)} (the first second includes the keyframes the relay asks for as the viewer joins)`);
    for (const at of [5, 15]) {
      const s = c.series.find((x) => x.second === at);
      const fraction = s ? s.bps / RAMP.startBps : NaN;
      summary.push(
        `| (c) libwebrtc sender bitrate ${at} s after connecting | ${s ? mbps(s.bps) : 'n/a'} = ${f(fraction * 100, 0)} % of start ${mbps(RAMP.startBps)} | ≥ ${TARGET_RAMP_FRACTION * 100} % ${at === 5 ? 'within 5 s' : '(reference)'} | ${fraction >= TARGET_RAMP_FRACTION ? 'met' : 'MISSED'} |`,
      );
    }
  }

  if (only.has('d')) summary.push(...(await benchRealistic({ runs: realisticRuns, sizes: realisticSizes })));

  console.log(`\nSummary (figures, not pass/fail; whole run ${f((performance.now() - began) / 1000, 0)} s)`);
  console.log('| figure | measured | target | |');
  console.log('|---|---|---|---|');
  for (const row of summary) console.log(row);
}

if (process.argv.includes(CHILD_MODES.relay)) runRelayProcess();
else if (process.argv.includes(CHILD_MODES.app)) runAppProcess();
else if (process.argv.includes(CHILD_MODES.viewers)) runViewersProcess();
else {
  try {
    await main();
  } catch (err) {
    console.error('bench:stream failed:', err);
    process.exitCode = 1;
  }
  // gRPC, werift and playwright handles are all closed above; exit in case a stray timer remains.
  setTimeout(() => process.exit(), 500).unref();
}
