// Control plane restart benchmark (`npm run bench:restart`): a real `pixelfleet serve` process, a
// real `pixelfleet-agent run` process streaming a customer's Linux build (its binary is the mock
// Unreal app: real H.264) to N werift viewers, then the control plane is killed (SIGKILL: a crash)
// or stopped (SIGTERM: a deploy) and started again on the same data dir and ports. For N = 1, 10
// and 50 (`--sizes 1,10,50`) and each way, it prints: time until every viewer's signalling is
// reattached (the page's resume), the longest gap between video packets any viewer saw, video
// packets received during the outage against the rate before it, and sessions lost (target 0).
// There is no baseline to run beside it: the target is that the video never stops. Not a test.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAll, sessionStatuses } from '../support/fleet-processes';
import { restartServe, serveMockAppBuild, startStreamingFleet } from '../support/streaming-fleet';
import { WeriftViewer } from '../support/werift-viewer';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
const SIZES = arg('--sizes', '1,10,50').split(',').map(Number);
/** Video watched after every viewer resumed, before the counts are read. */
const AFTER_MS = 2_000;

interface Row {
  n: number;
  how: string;
  reattachMs: number;
  longestGapMs: number;
  continuity: number;
  lost: number;
}

async function runOne(n: number, how: 'SIGKILL' | 'SIGTERM', buildUrl: string): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-bench-restart-'));
  const viewers: WeriftViewer[] = [];
  try {
    // Every simulated viewer comes from 127.0.0.1: the per-address limits would see one crowd.
    const quiet = { logLevel: 'info', viewers: { maxPerAddress: 0, sessionsPerMinute: 0 } };
    const { cp, wsUrl } = await startStreamingFleet({ dir, buildUrl, config: quiet, slots: n });
    // Viewers join five at a time (apps start in parallel on the agent) until each receives video.
    for (let i = 0; i < n; i += 5) {
      const batch = await Promise.all(Array.from({ length: Math.min(5, n - i) }, () => WeriftViewer.join(wsUrl)));
      viewers.push(...batch);
      await Promise.all(batch.map((v) => v.until(() => v.rtpPackets > 30, 120_000)));
    }
    // The rate before the outage, over one second.
    const before = viewers.map((v) => v.rtpPackets);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const perSecond = viewers.map((v, i) => v.rtpPackets - before[i]!);
    for (const v of viewers) v.resetRtpGap();
    const atStop = viewers.map((v) => v.rtpPackets);
    const stoppedAt = performance.now();
    cp.child.kill(how);
    await cp.exited;
    const again = await restartServe(dir, cp, quiet);
    await Promise.all(viewers.map((v) => v.resume(wsUrl, { timeoutMs: 60_000 })));
    const reattachMs = performance.now() - stoppedAt;
    await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
    const windowS = (performance.now() - stoppedAt) / 1000;
    const continuity = Math.min(...viewers.map((v, i) => (v.rtpPackets - atStop[i]!) / (perSecond[i]! * windowS)));
    const now = await sessionStatuses(again.grpcAddress);
    const lost = viewers.filter((v) => now.get(v.sessionId) !== 'Running').length;
    return { n, how, reattachMs, longestGapMs: Math.max(...viewers.map((v) => v.longestRtpGapMs)), continuity, lost };
  } finally {
    await Promise.all(viewers.map((v) => v.pc.close().catch(() => undefined)));
    for (const v of viewers) v.signalling.socket.terminate();
    await killAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`bench:restart — ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} CPUs; sizes ${SIZES.join(', ')}`);
  const build = await serveMockAppBuild();
  const rows: Row[] = [];
  try {
    for (const n of SIZES) {
      for (const how of ['SIGKILL', 'SIGTERM'] as const) {
        const row = await runOne(n, how, build.buildUrl);
        rows.push(row);
        console.log(`  ${n} × ${how}: reattached in ${(row.reattachMs / 1000).toFixed(2)} s, longest video gap ${row.longestGapMs.toFixed(0)} ms, lost ${row.lost}`);
      }
    }
  } finally {
    await build.close();
  }
  console.log('');
  console.log('| Sessions | Restart | Every viewer reattached (signalling gap) | Longest video gap, any viewer | Video during the outage vs before (worst viewer) | Sessions lost | Target |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const met = r.lost === 0 && r.longestGapMs < 500 && r.reattachMs < 3_000;
    console.log(`| ${r.n} | ${r.how} | ${(r.reattachMs / 1000).toFixed(2)} s | ${r.longestGapMs.toFixed(0)} ms | ${(r.continuity * 100).toFixed(0)} % | ${r.lost} | 0 lost, no video gap, signalling < 3 s: ${met ? 'met' : 'MISSED'} |`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
