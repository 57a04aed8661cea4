// `npm run bench:moments` (inside a loopback-only network namespace): the moments a real app meets
// (issue 21), each run many times, with figures next to the targets: the app's keyframe within
// ~200 ms of the relay's request, and the viewer's picture within 1 s, every time. Never fails on
// slowness.
//
// The moments are the tests' own (one scenario, not a copy that could drift): each run is one
// `vitest run` of a moment test file, one file at a time so that no two moments share the 2 cores,
// and the figures are the `MOMENT {json}` lines the tests print (test/support/moment-figures.ts):
//  - relay-keyframe-moments.test.ts: a libwebrtc sender at 720p30 (game scene, keyframes only at
//    the start and when asked) → SessionRelay → chromium viewers: a viewer 10 s late, a second
//    viewer, 100 ingest packets lost with their retransmissions;
//  - chromium-app-viewer.test.ts: the whole stack (serve, the agent, a chromium app the agent
//    launches as the build's binary, the share page) at 320x180: a late viewer, a resume after a
//    signalling drop, a resume after a control plane killed and started again.
// A run whose test failed prints what it has and counts as failed.
//
// Options: --runs N (runs of each file; default 10), --only relay,stack.
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { readMoments, type MomentFigures } from '../support/moment-figures';
import { arg, f, median, percentile } from './bench-support';

const FILES = {
  relay: 'test/e2e/relay-keyframe-moments.test.ts',
  stack: 'test/e2e/chromium-app-viewer.test.ts',
} as const;
type Part = keyof typeof FILES;

/** The targets of issue 21. */
const TARGET_KEYFRAME_MS = 200;
const TARGET_PICTURE_MS = 1_000;

interface FileRun {
  readonly passed: boolean;
  readonly moments: MomentFigures[];
  readonly seconds: number;
}

function runFile(file: string): Promise<FileRun> {
  const began = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['vitest', 'run', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' } });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ passed: code === 0, moments: readMoments(output), seconds: (performance.now() - began) / 1000 }));
  });
}

const spread = (values: readonly number[]): string =>
  values.length === 0 ? '–' : `${f(median(values), 0)} / ${f(percentile(values, 95), 0)} / ${f(Math.max(...values), 0)} (${values.length})`;

async function main(): Promise<void> {
  const runs = Number(arg('--runs', '10'));
  const parts = arg('--only', 'relay,stack').split(',') as Part[];
  if (!(Number.isInteger(runs) && runs > 0) || !parts.every((p) => p in FILES)) throw new Error(`--runs takes a positive integer, --only a list of ${Object.keys(FILES).join(', ')}`);
  const began = performance.now();
  console.log(`bench:moments — ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} CPUs, netns=${process.env.PIXELFLEET_NETNS === '1' ? 'loopback-only' : 'host (not isolated!)'}, ${runs} runs of ${parts.join(', ')}`);

  const byMoment = new Map<string, MomentFigures[]>();
  const failed = new Map<Part, number>();
  for (let run = 1; run <= runs; run++) {
    for (const part of parts) {
      const result = await runFile(FILES[part]);
      if (!result.passed) failed.set(part, (failed.get(part) ?? 0) + 1);
      console.log(`run ${run} ${part}: ${result.passed ? 'passed' : 'FAILED'} in ${f(result.seconds, 0)} s`);
      for (const m of result.moments) {
        console.log(`  ${m.moment}: request → keyframe ${JSON.stringify(m.requestToKeyframeMs ?? [])} ms, connect → keyframe ${m.connectToKeyframeMs ?? '–'} ms, picture ${m.pictureMs ?? 'none'} ms`);
        byMoment.set(m.moment, [...(byMoment.get(m.moment) ?? []), m]);
      }
    }
  }

  console.log(`\nSummary (figures, not pass/fail; whole run ${f((performance.now() - began) / 1000, 0)} s; ms as median / p95 / max (count))`);
  console.log('| moment | request → app keyframe | peer connected → app keyframe | without a picture | runs over 1 s | target |');
  console.log('|---|---|---|---|---|---|');
  for (const [moment, figures] of byMoment) {
    const latencies = figures.flatMap((m) => m.requestToKeyframeMs ?? []);
    const connect = figures.flatMap((m) => (m.connectToKeyframeMs === undefined ? [] : [m.connectToKeyframeMs]));
    const pictures = figures.flatMap((m) => (m.pictureMs === undefined ? [] : [m.pictureMs]));
    const over = figures.filter((m) => m.pictureMs === undefined || m.pictureMs > TARGET_PICTURE_MS).length;
    console.log(`| ${moment} | ${spread(latencies)} | ${spread(connect)} | ${spread(pictures)} | ${over} of ${figures.length} | keyframe ~${TARGET_KEYFRAME_MS} ms, picture ≤ ${TARGET_PICTURE_MS} ms every run |`);
  }
  for (const part of parts) console.log(`${FILES[part]}: ${failed.get(part) ?? 0} of ${runs} runs failed`);
}

try {
  await main();
} catch (err) {
  console.error('bench:moments failed:', err);
  process.exitCode = 1;
}
