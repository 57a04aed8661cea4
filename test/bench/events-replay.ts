// Replay benchmark of `pixelfleet admin events --from-start` (`npm run bench:events`): a history of
// --events stored events (default 1,000,000) is seeded into a data dir, a compiled `pixelfleet
// serve` process serves it, and the admin CLI (in this process) replays it from the first event
// until it has every one. Prints the replay's time and rate, and the serve process's resident
// memory before and its peak (VmHWM) after, from /proc. Linux only. Not a test.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAdminCli } from '@pixelfleet/control-plane';
import { startTestControlPlane } from '../support/control-plane';
import { killAll, PROCESS_ADMIN_TOKEN, startServe } from '../support/fleet-processes';
import { arg, f, memoryMb } from './bench-support';

const EVENTS = Number(arg('--events', '1000000'));

const root = mkdtempSync(join(tmpdir(), 'pf-bench-events-'));
try {
  const dataDir = join(root, 'data');
  const seeding = performance.now();
  const seed = await startTestControlPlane({ dataDir, overrides: { geoip: { enabled: false } } });
  for (let done = 0; done < EVENTS; ) {
    const n = Math.min(50_000, EVENTS - done);
    seed.cp.db.transaction(() => {
      for (let i = 0; i < n; i += 1) seed.cp.events.record('bench.replay', { projectId: 'prj_bench', sessionId: `session_${done + i}` }, { i: done + i });
    })();
    done += n;
  }
  const total = await seed.cp.events.lastId();
  await seed.stop();
  console.log(`seeded ${total} events in ${f((performance.now() - seeding) / 1000)} s (database ${f(statSync(join(dataDir, 'pixelfleet.sqlite')).size / 2 ** 20)} MiB)`);

  const serve = await startServe({ dataDir, configDir: root, config: { geoip: { enabled: false }, logLevel: 'warn' } });
  const pid = serve.child.pid!;
  const before = memoryMb(pid);
  let received = 0;
  let stop!: () => void;
  const interrupted = new Promise<void>((r) => (stop = r));
  let sampledPeak = before.rssMb;
  const sampler = setInterval(() => (sampledPeak = Math.max(sampledPeak, memoryMb(pid).rssMb)), 100);
  const started = performance.now();
  let stderr = '';
  const code = await runAdminCli(['events', '--from-start', '--json'], {
    env: { PIXELFLEET_ADMIN_SERVER: serve.grpcAddress, PIXELFLEET_ADMIN_TOKEN: PROCESS_ADMIN_TOKEN },
    stdout: (text) => {
      for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) received += 1;
      if (received >= total) stop();
    },
    stderr: (s) => (stderr += s),
    interrupted,
  });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const after = memoryMb(pid);
  if (code !== 0 || received < total) throw new Error(`replay ended with ${code} after ${received} of ${total} events: ${stderr}`);
  console.log(`replayed ${received} events in ${f(seconds, 2)} s (${f(received / seconds / 1000)}k events/s)`);
  console.log(`serve RSS: ${f(before.rssMb)} MiB before, ${f(sampledPeak)} MiB peak sampled every 100 ms, VmHWM ${f(before.peakMb)} → ${f(after.peakMb)} MiB`);
  await killAll();
} finally {
  await killAll();
  rmSync(root, { recursive: true, force: true });
}
