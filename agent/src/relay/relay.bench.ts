// Relay CPU and latency benchmark (not a test): the relay alone in a child process, a fake app
// (~2 Mbps H.264, 30 fps) and 0/1/2/4 fake viewers here; baseline app → viewer in the same run.
// Run: npx tsx agent/src/relay/relay.bench.ts [--seconds 10] [--viewers 0,1,2,4]
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { SessionRelay } from './session-relay';
import { FakeApp } from './test-support/fake-app';
import { FakeViewer } from './test-support/fake-viewer';
import type { H264RtpPayload } from './test-support/h264-fixture';
import { accessUnits, packetizeAccessUnit, TEST_PATTERN_H264 } from './test-support/h264-fixture';

type ToRelay =
  | { type: 'offer'; sdp: string }
  | { type: 'addViewer'; id: string }
  | { type: 'viewerAnswer'; id: string; sdp: string }
  | { type: 'cpuStart' }
  | { type: 'cpuStop' };
type FromRelay =
  | { type: 'answer'; sdp: string }
  | { type: 'viewerOffer'; id: string; sdp: string }
  | { type: 'viewerConnected'; id: string }
  | { type: 'cpu'; percentOfOneCore: number; packetsIn: number; packetsOut: number; seconds: number; rssMb: number };

const BITRATE_BPS = 2_000_000;
const FPS = 30;

function runRelayProcess(): void {
  const relay = new SessionRelay({
    iceServers: [],
    hostAddresses: ['127.0.0.1'],
    bitrate: { startBps: BITRATE_BPS, minBps: 500_000, maxBps: 20_000_000 },
    log: pino({ level: 'silent' }),
  });
  const send = (m: FromRelay): void => void process.send?.(m);
  relay.on('viewerConnected', (id) => send({ type: 'viewerConnected', id }));
  let mark = { cpu: process.cpuUsage(), at: performance.now(), packetsIn: 0, packetsOut: 0 };
  process.on('message', (raw) => {
    const m = raw as ToRelay;
    void (async () => {
      switch (m.type) {
        case 'offer':
          send({ type: 'answer', sdp: await relay.acceptStreamerOffer(m.sdp) });
          break;
        case 'addViewer':
          send({ type: 'viewerOffer', id: m.id, sdp: await relay.addViewer(m.id) });
          break;
        case 'viewerAnswer':
          await relay.acceptViewerAnswer(m.id, m.sdp);
          break;
        case 'cpuStart':
          mark = { cpu: process.cpuUsage(), at: performance.now(), packetsIn: relay.stats().packetsIn, packetsOut: relay.stats().packetsOut };
          break;
        case 'cpuStop': {
          const used = process.cpuUsage(mark.cpu);
          const seconds = (performance.now() - mark.at) / 1000;
          send({
            type: 'cpu',
            percentOfOneCore: ((used.user + used.system) / 1e6 / seconds) * 100,
            packetsIn: relay.stats().packetsIn - mark.packetsIn,
            packetsOut: relay.stats().packetsOut - mark.packetsOut,
            seconds,
            rssMb: process.memoryUsage().rss / 2 ** 20,
          });
          break;
        }
      }
    })();
  });
  process.on('disconnect', () => {
    relay.close();
    void relay.whenClosed().then(() => process.exit(0));
  });
}

/** The app's traffic: a real IDR every second, synthetic P slices sized for ~2 Mbps between. */
function frames(): H264RtpPayload[][] {
  const [idr] = accessUnits(TEST_PATTERN_H264);
  const perFrame = Math.round(BITRATE_BPS / 8 / FPS);
  const pSlice = (n: number): Buffer => {
    const nal = Buffer.alloc(perFrame, n & 0xff);
    nal[0] = 0x41;
    return nal;
  };
  return Array.from({ length: FPS }, (_, n) => packetizeAccessUnit(n === 0 && idr ? idr : [pSlice(n)]));
}

/** Sends the stream, tagging each packet's payload bytes 2..5 with an id to time it at the viewer. */
class Pacer {
  readonly sentAt = new Map<number, number>();
  private id = 0;
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly app: FakeApp) {}
  start(): void {
    const all = frames();
    let n = 0;
    this.timer = setInterval(() => {
      const frame = all[n++ % all.length] ?? [];
      const tagged = frame.map(({ payload, marker }) => {
        const copy = Buffer.from(payload);
        if (copy.length >= 6) copy.writeUInt32BE(++this.id, 2);
        this.sentAt.set(this.id, performance.now());
        return { payload: copy, marker };
      });
      this.app.writeFrame(tagged);
    }, 1000 / FPS);
  }
  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

function latencyProbe(viewer: FakeViewer, pacer: Pacer): { samples: number[] } {
  const probe = { samples: [] as number[] };
  viewer.pc.onTrack.subscribe((track) => {
    track.onReceiveRtp.subscribe((rtp) => {
      if (rtp.payload.length < 6) return;
      const sent = pacer.sentAt.get(rtp.payload.readUInt32BE(2));
      if (sent !== undefined) probe.samples.push(performance.now() - sent);
    });
  });
  return probe;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

function waitMs(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function runDriver(): Promise<void> {
  const arg = (name: string, fallback: string): string => {
    const at = process.argv.indexOf(name);
    return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
  };
  const seconds = Number(arg('--seconds', '10'));
  const counts = arg('--viewers', '0,1,2,4').split(',').map(Number);

  // Baseline: the app straight to one viewer, same traffic, same process.
  const baseApp = new FakeApp({ sendStartupMessages: false });
  const baseViewer = new FakeViewer({ recordRtp: false });
  const basePacer = new Pacer(baseApp);
  const baseProbe = latencyProbe(baseViewer, basePacer);
  await baseApp.acceptAnswer(await baseViewer.answer(await baseApp.offer()));
  basePacer.start();
  await waitMs(seconds * 1000);
  basePacer.stop();
  await Promise.all([baseApp.close(), baseViewer.close()]);

  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--relay-process'], { execArgv: ['--import', 'tsx'] });
  const waiting = new Map<string, (m: FromRelay) => void>();
  child.on('message', (raw) => {
    const m = raw as FromRelay;
    const key = 'id' in m ? `${m.type}:${m.id}` : m.type;
    waiting.get(key)?.(m);
    waiting.delete(key);
  });
  const ask = <T extends FromRelay>(request: ToRelay | undefined, key: string): Promise<T> =>
    new Promise((resolve) => {
      waiting.set(key, (m) => resolve(m as T));
      if (request) child.send(request);
    });

  const app = new FakeApp({ sendStartupMessages: false });
  const pacer = new Pacer(app);
  const { sdp: answer } = await ask<{ type: 'answer'; sdp: string }>({ type: 'offer', sdp: await app.offer() }, 'answer');
  await app.acceptAnswer(answer);
  pacer.start();

  const viewers: FakeViewer[] = [];
  const probes: { samples: number[] }[] = [];
  const rows: string[] = [];
  for (const count of counts) {
    while (viewers.length < count) {
      const id = `bench-${viewers.length}`;
      const viewer = new FakeViewer({ recordRtp: false });
      probes.push(latencyProbe(viewer, pacer));
      viewers.push(viewer);
      const connected = ask(undefined, `viewerConnected:${id}`);
      const { sdp } = await ask<{ type: 'viewerOffer'; id: string; sdp: string }>({ type: 'addViewer', id }, `viewerOffer:${id}`);
      child.send({ type: 'viewerAnswer', id, sdp: await viewer.answer(sdp) } satisfies ToRelay);
      await connected;
    }
    await waitMs(5_000); // warm-up: JIT, DTLS/SCTP start-up of the newest viewer
    for (const p of probes) p.samples.length = 0;
    child.send({ type: 'cpuStart' } satisfies ToRelay);
    await waitMs(seconds * 1000);
    const cpu = await ask<Extract<FromRelay, { type: 'cpu' }>>({ type: 'cpuStop' }, 'cpu');
    const samples = probes.flatMap((p) => p.samples);
    const latency = samples.length === 0 ? 'n/a' : `${percentile(samples, 50).toFixed(2)} / ${percentile(samples, 95).toFixed(2)} / ${percentile(samples, 99).toFixed(2)} ms`;
    rows.push(
      `| ${count} | ${(cpu.packetsIn / cpu.seconds).toFixed(0)} → ${(cpu.packetsOut / cpu.seconds).toFixed(0)} | ${cpu.percentOfOneCore.toFixed(1)} % | ${cpu.rssMb.toFixed(0)} MB | ${latency} |`,
    );
  }
  pacer.stop();
  await Promise.all([app.close(), ...viewers.map((v) => v.close())]);
  child.disconnect();

  const b = baseProbe.samples;
  console.log(`H.264 ~${BITRATE_BPS / 1e6} Mbps at ${FPS} fps, ${seconds} s windows, ${process.version}`);
  console.log(`baseline app → viewer (no relay): latency p50 / p95 / p99 ${percentile(b, 50).toFixed(2)} / ${percentile(b, 95).toFixed(2)} / ${percentile(b, 99).toFixed(2)} ms`);
  console.log('| viewers | relay pkt/s in → out | relay CPU (one core) | relay RSS | app → viewer via relay p50 / p95 / p99 |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

if (process.argv.includes('--relay-process')) runRelayProcess();
else await runDriver();
