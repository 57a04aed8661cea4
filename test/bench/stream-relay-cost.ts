// bench:stream part (b), relay cost: SessionRelay alone in a child process, one 720p30 H.264
// stream at 4 Mbps, 1/2/4 werift viewers, against the same stream sent straight to the viewers (no
// relay); app and viewers in child processes of their own on both paths. This file is also each
// child (`--relay-process`, `--app-process`, `--viewers-process`). Figures only.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { RtpPacket } from 'werift';
import { SessionRelay } from '@pixelfleet/agent/test-support';
import { FakeApp } from '../support/relay/fake-app';
import { FakeViewer } from '../support/relay/fake-viewer';
import { accessUnits, packetizeAccessUnit, type H264RtpPayload } from '../support/relay/h264-fixture';
import { BenchChild, f, mbps, percentile, serveParent, until, waitMs } from './bench-support';

const ROOT = resolve(import.meta.dirname, '../..');
/** The mock app's clip: 1280x720, 30 fps, IDR every 15 frames, ≈ 386 kbit/s. */
const CLIP_PATH = join(ROOT, 'test/mock-unreal/fixtures/testpattern.h264');

const TARGET_ADDED_LATENCY_MS = 2;
const TARGET_CPU_PER_VIEWER = 5;
const STREAM_FPS = 30;
const STREAM_BPS = 4_000_000;
let relayWarmupMs = 6_000;

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

export interface RelayCostOptions {
  /** Length of each measured window, ms. */
  windowMs: number;
  /** Warm-up before each window, ms (default 6000). */
  warmupMs: number;
  /** Also 4 viewers with the fan-out split over two relay processes. */
  splitFanout: boolean;
  /** Write a V8 CPU profile of the relay process. */
  cpuProfile: boolean;
}

/** Part (b): direct and relayed latency and relay CPU at 0/1/2/4 viewers; prints a table and returns the summary rows. */
export async function benchRelayCost(options: RelayCostOptions): Promise<string[]> {
  const { windowMs } = options;
  relayWarmupMs = options.warmupMs;
  if (options.cpuProfile) relayCpuProfDir = mkdtempSync(join(tmpdir(), 'pf-bench-relay-prof-'));
  const summary: string[] = [];
  const { bytesPerSecond } = streamFrames();
  console.log(`\n(b) relay cost: mock app's 1280x720 30 fps clip + filler NALs ≈ ${mbps(bytesPerSecond * 8)}; ${windowMs / 1000} s windows after ${relayWarmupMs / 1000} s warm-up`);
  console.log('  peers: werift everywhere (app = FakeApp, viewers = FakeViewer from test/support/relay), no browser. The app, each viewer');
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
  if (options.splitFanout) {
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
  return summary;
}

if (process.argv.includes(CHILD_MODES.relay)) runRelayProcess();
else if (process.argv.includes(CHILD_MODES.app)) runAppProcess();
else if (process.argv.includes(CHILD_MODES.viewers)) runViewersProcess();
