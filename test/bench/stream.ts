// Streaming benchmark (`npm run bench:stream`, inside a loopback-only network namespace): prints
// figures next to the targets of issues 3, 9 and 26; never fails on slowness. Five parts:
//  (a) cold first frame: Debian chromium opens the share URL of an in-process control plane +
//      agent whose launcher runs the mock Unreal app, and the control plane's part of it;
//  (b) relay cost: SessionRelay alone in a child process, one 720p30 H.264 stream at 4 Mbps,
//      1/2/4 werift viewers, against the same stream sent straight to the viewers (no relay);
//      app and viewers in child processes of their own on both paths;
//  (c) libwebrtc ramp: a headless chromium page streams a canvas into the relay's ingest the way
//      Unreal does (offer → relay answer, trickled ICE) with one viewer; its outgoing bitrate.
//  (d) a realistic Unreal sender (a game-like scene at 1080p30 and 720p30 from chromium's
//      libwebrtc, which makes keyframes only at the start and when asked) to a chromium viewer that
//      joins 3 s after the app's first frame, through the relay (in a child process) and direct,
//      alternating: first frame, keyframe request → keyframe, requests and keyframes, viewer
//      bitrate, loss, NACKs, malformed RTCP, relay CPU (stream-realistic.ts).
//  (e) warm pool: navigation → first decoded frame cold and warm (the mock app with a realistic
//      start), and the pool's refill after a claim (stream-warm-pool.ts).
// Options:
// --runs N (a), --app-start S (a and e: the mock app's start, -MockStartupSeconds; default 10, 0 = its own ~0.85 s),
// --warm-runs N (e, cold and warm runs each; default 20),
// --seconds S (b window), --warmup S (b, before each window), --only a,b,c,d,
// --realistic-runs N (d, runs per size and path; default 20), --realistic-sizes 1080,720 (d),
// --cpu-prof (b: a V8 CPU profile of the relay process), --split-fanout (b: also 4 viewers with the
// fan-out split over two relay processes, the best a two-way parallel fan-out could do here).
//
// One file per part: stream-first-frame.ts (a), stream-relay-cost.ts (b, and its child processes),
// stream-libwebrtc-ramp.ts (c), stream-realistic.ts (d), stream-warm-pool.ts (e); this file reads the options and prints the summary.
import { cpus } from 'node:os';
import { benchFirstFrame } from './stream-first-frame';
import { benchRelayCost } from './stream-relay-cost';
import { benchLibwebrtcRamp } from './stream-libwebrtc-ramp';
import { benchRealistic, REALISTIC_SIZES, type RealisticSize } from './stream-realistic';
import { benchWarmPool } from './stream-warm-pool';
import { arg, f } from './bench-support';

async function main(): Promise<void> {
  const runs = Number(arg('--runs', '10'));
  const windowMs = Number(arg('--seconds', '8')) * 1000;
  const warmupMs = Number(arg('--warmup', '6')) * 1000;
  const only = new Set(arg('--only', 'a,b,c,d,e').split(','));
  const realisticRuns = Number(arg('--realistic-runs', '20'));
  const realisticSizes = arg('--realistic-sizes', '1080,720').split(',').map(Number);
  if (!(Number.isInteger(realisticRuns) && realisticRuns > 0) || !realisticSizes.every((s): s is RealisticSize => s in REALISTIC_SIZES)) {
    throw new Error(`--realistic-runs takes a positive integer, --realistic-sizes a list of ${Object.keys(REALISTIC_SIZES).join(', ')}`);
  }
  const began = performance.now();
  const summary: string[] = [];
  console.log(`bench:stream — ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} CPUs, netns=${process.env.PIXELFLEET_NETNS === '1' ? 'loopback-only' : 'host (not isolated!)'}`);

  if (only.has('a')) summary.push(...(await benchFirstFrame(runs, Number(arg('--app-start', '10')))));
  if (only.has('b')) {
    const options = { windowMs, warmupMs, splitFanout: process.argv.includes('--split-fanout'), cpuProfile: process.argv.includes('--cpu-prof') };
    summary.push(...(await benchRelayCost(options)));
  }
  if (only.has('c')) summary.push(...(await benchLibwebrtcRamp()));
  if (only.has('d')) summary.push(...(await benchRealistic({ runs: realisticRuns, sizes: realisticSizes })));
  if (only.has('e')) summary.push(...(await benchWarmPool(Number(arg('--warm-runs', '20')), Number(arg('--app-start', '10')))));

  console.log(`\nSummary (figures, not pass/fail; whole run ${f((performance.now() - began) / 1000, 0)} s)`);
  console.log('| figure | measured | target | |');
  console.log('|---|---|---|---|');
  for (const row of summary) console.log(row);
}

try {
  await main();
} catch (err) {
  console.error('bench:stream failed:', err);
  process.exitCode = 1;
}
// gRPC, werift and playwright handles are all closed above; exit in case a stray timer remains.
setTimeout(() => process.exit(), 500).unref();
