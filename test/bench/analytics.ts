// bench:analytics — the analytics store at scale in a real control plane's SQLite file: a million
// sessions over 90 days in one project (the worst case for a breakdown), each with its client
// dimensions (their day and week rollups) and four status snapshots, and ten million telemetry rows (5,000 long sessions of
// 2,000 rows). Prints p50/p99 of each breakdown dimension over 92 days (windows that do not start
// or end on a UTC day), of a 1,000-row page of one session's telemetry newest first (all rows, and
// event rows only), of a session's snapshots, telemetry ingest rows/s through the real HTTP route
// (batches of 200, concurrent posts from a load thread) beside a bare fastify route taking the
// same bodies, the event loop's longest stall meanwhile, and the database's size per million rows.
// Targets: breakdown p50 <= 100 ms, log page p50 <= 20 ms, ingest >= 50,000 rows/s. Figures only.
//
// npm run bench:analytics -- [--sessions 1000000] [--rows 10000000] [--ingest-seconds 8] [--concurrency 32]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import Fastify from 'fastify';
import { createLogger, loadControlPlaneConfig } from '@pixelfleet/control-plane';
import { buildControlPlaneWithDb, SqliteSessionDimensionsRepository, SqliteTelemetryRepository } from '@pixelfleet/control-plane/test-support';
import { TEST_ADMIN_TOKEN, TEST_JOIN_TOKEN } from '../support/control-plane';
import { countRows, DAY_MS, ROWS_PER_LONG_SESSION, seedAnalyticsStore, statsRow, STORE_TABLES } from './analytics-store';
import { arg, f, percentile, seededRandom } from './bench-support';

const sessionCount = Number(arg('--sessions', '1000000'));
const telemetryCount = Number(arg('--rows', '10000000'));
const ingestSeconds = Number(arg('--ingest-seconds', '8'));
const concurrency = Number(arg('--concurrency', '32'));

const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-analytics-'));
const config = loadControlPlaneConfig({
  overrides: { dataDir, adminToken: TEST_ADMIN_TOKEN, agentJoinToken: TEST_JOIN_TOKEN, geoip: { enabled: false }, logLevel: 'warn' },
});
const cp = buildControlPlaneWithDb(config, { logger: createLogger('warn', process.stderr) });
const db = cp.db;
const now = Date.now();
const rand = seededRandom(13);

const count = (table: string) => countRows(db, table);
const timed = (fn: () => unknown): number => {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
};
const line = (label: string, samples: number[], target?: string) =>
  console.log(`${label.padEnd(44)} p50 ${f(percentile(samples, 50), 2).padStart(8)} ms   p99 ${f(percentile(samples, 99), 2).padStart(8)} ms${target ? `   (target ${target})` : ''}`);

/** The load thread: keep-alive POSTs of prepared bodies, `concurrency` in flight, for `seconds`. */
const LOAD_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { url, bodies, concurrency, seconds, headerName } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const target = new URL(url);
let done = 0, failed = 0, next = 0, statuses = {};
const deadline = Date.now() + seconds * 1000;
const one = (b) => new Promise((resolve) => {
  const req = http.request({ agent, host: target.hostname, port: target.port, path: target.pathname, method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b.body), [headerName]: b.token } }, (res) => {
    res.resume();
    res.on('end', () => { if (res.statusCode === 204) done += 1; else { failed += 1; statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1; } resolve(); });
  });
  req.on('error', () => { failed += 1; resolve(); });
  req.end(b.body);
});
const lane = async () => { while (Date.now() < deadline && next < bodies.length) await one(bodies[next++]); };
const t0 = performance.now();
Promise.all(Array.from({ length: concurrency }, lane)).then(() => {
  parentPort.postMessage({ done, failed, statuses, seconds: (performance.now() - t0) / 1000 });
  agent.destroy();
});
`;

interface LoadResult {
  done: number;
  failed: number;
  statuses: Record<string, number>;
  seconds: number;
}

function load(url: string, bodies: { body: string; token: string }[], inFlight = concurrency, seconds = ingestSeconds): Promise<LoadResult> {
  const worker = new Worker(LOAD_THREAD, { eval: true, workerData: { url, bodies, concurrency: inFlight, seconds, headerName: 'x-viewer-token' } });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: LoadResult) => {
      void worker.terminate();
      resolve(m);
    });
    worker.once('error', reject);
  });
}

try {
  const owner = await cp.accounts.createUser('bench-analytics@example.com');
  const project = await cp.accounts.createProject(owner.userId, 'Bench', 'europe');
  const projectId = project.projectId;

  // ---- Seeding (analytics-store.ts): prepared statements in big transactions. ----
  const seedStart = performance.now();
  const { longSessions, spanStartMs: start, tableCounts } = seedAnalyticsStore(db, { projectId, sessionCount, telemetryCount, now, rand });
  console.log(`bench:analytics — seeded in ${f((performance.now() - seedStart) / 1000, 1)} s: ${STORE_TABLES.map((t) => `${t} ${tableCounts[t]}`).join(', ')}\n`);

  // ---- Breakdown over 92 days, windows off the day boundaries. ----
  const dimensions = new SqliteSessionDimensionsRepository(db);
  const RUNS = 30;
  for (const dimension of ['country', 'city', 'browser', 'os', 'device'] as const) {
    const samples: number[] = [];
    let total = 0;
    let entries = 0;
    for (let run = -2; run < RUNS; run++) {
      const to = now - Math.floor(rand() * DAY_MS);
      const ms = timed(() => {
        const b = dimensions.breakdown({ projectId, dimension, from: to - 92 * DAY_MS, to });
        total = b.total;
        entries = b.entries.length;
      });
      if (run >= 0) samples.push(ms);
    }
    line(`breakdown ${dimension} over 92 days (${entries} values, ${total} sessions)`, samples, '<= 100 ms');
  }
  {
    const samples: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const to = now - Math.floor(rand() * DAY_MS);
      samples.push(timed(() => dimensions.breakdown({ projectId, dimension: 'city', from: to - 92 * DAY_MS, to, countryCode: 'DE' })));
    }
    line('breakdown city, countryCode=DE, 92 days', samples, '<= 100 ms');
  }

  // ---- One session's telemetry, a 1,000-row page newest first; its snapshots. ----
  const telemetry = new SqliteTelemetryRepository(db);
  const pick = () => longSessions[Math.floor(rand() * longSessions.length)]!;
  const page = (extra: object) => {
    const samples: number[] = [];
    for (let run = 0; run < 200; run++) {
      const sessionId = pick();
      samples.push(timed(() => telemetry.pageBySession({ sessionId, limit: 1_000, skip: 0, ...extra })));
    }
    return samples;
  };
  line(`log page: 1,000 of ${ROWS_PER_LONG_SESSION} rows newest first, + total`, page({}), '<= 20 ms');
  line('log page: same, skip 1,000', page({ skip: 1_000 }), '<= 20 ms');
  line('log page: logType=Webrtc, + total', page({ logType: 'Webrtc' }), '<= 20 ms');
  line('log page: a 6-hour date window', page({ from: start, to: start + 6 * 3_600_000 }));
  const snapshotsOf = db.prepare('SELECT id, received_at, data FROM session_snapshots WHERE session_id = ? ORDER BY id');
  {
    const samples: number[] = [];
    for (let run = 0; run < 200; run++) {
      const i = Math.floor(rand() * sessionCount);
      const id = (db.prepare('SELECT id FROM sessions WHERE rowid = ?').get(i + 1) as { id: string } | undefined)?.id ?? pick();
      samples.push(timed(() => snapshotsOf.all(id)));
    }
    line("a session's snapshots (4), oldest first", samples);
  }

  // ---- Ingest through the real HTTP route, beside a bare fastify route. ----
  await cp.http.listen({ host: '127.0.0.1', port: 0 });
  const address = cp.http.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const ingestProject = cp.accounts.requireProject((await cp.accounts.createProject(owner.userId, 'Ingest', 'europe')).projectId);
  /** Bodies of 200 rows for enough new sessions (each takes up to 20,000 rows: 100 batches), interleaved as concurrent viewers post. */
  const batchesFor = (batches: number) => {
    const perSession: { body: string; token: string }[][] = [];
    for (let s = 0; s * 100 < batches; s++) {
      const { session, viewerToken } = cp.sessions.create(ingestProject);
      perSession.push(
        Array.from({ length: 100 }, (_, b) => {
          const rows = Array.from({ length: 200 }, (_, r) =>
            r % 20 === 0 ? { logType: 'Webrtc', event: 'visibilitychange', visibility: 'visible', timestamp: new Date(now + b * 1000 + r).toISOString() } : statsRow(now + b * 1000 + r, r),
          );
          return { body: JSON.stringify({ sessionId: session.sessionId, rows }), token: viewerToken };
        }),
      );
    }
    const interleaved: { body: string; token: string }[] = [];
    for (let b = 0; b < 100; b++) for (const batches of perSession) interleaved.push(batches[b]!);
    return interleaved;
  };
  const interleaved = batchesFor(Math.ceil((ingestSeconds * 150_000) / 200));
  const rowsBefore = count('telemetry_rows');
  const ingest = await load(`http://127.0.0.1:${port}/api/v1/telemetry`, interleaved);
  const stored = count('telemetry_rows') - rowsBefore;
  console.log(
    `\ningest through POST /api/v1/telemetry: ${f(stored / ingest.seconds, 0)} rows/s (${ingest.done} batches of 200 in ${f(ingest.seconds, 1)} s, ${concurrency} in flight, ${ingest.failed} failed ${JSON.stringify(ingest.statuses)}; target >= 50,000)`,
  );
  // How long one batch holds the event loop: with one post in flight the loop waits for the next
  // between two, so its delay is the longest single stretch of work (a batch, a GC), not a queue.
  const paced = batchesFor(1_000);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const quiet = await load(`http://127.0.0.1:${port}/api/v1/telemetry`, paced, 1, 3);
  delay.disable();
  console.log(
    `  event loop, one post in flight (${f((quiet.done * 200) / quiet.seconds, 0)} rows/s): delay p50 ${f(delay.percentile(50) / 1e6, 1)} ms, p99 ${f(delay.percentile(99) / 1e6, 1)} ms, max ${f(delay.max / 1e6, 1)} ms`,
  );

  const bare = Fastify({ bodyLimit: 1024 * 1024 });
  bare.post('/bare', (_req, reply) => reply.status(204).send());
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const bareAddress = bare.server.address();
  const barePort = typeof bareAddress === 'object' && bareAddress !== null ? bareAddress.port : 0;
  const baseline = await load(`http://127.0.0.1:${barePort}/bare`, interleaved);
  console.log(`baseline, a bare fastify route parsing the same bodies: ${f((baseline.done * 200) / baseline.seconds, 0)} rows/s (${baseline.done} batches)`);
  await bare.close();

  // ---- Size on disk. ----
  db.pragma('wal_checkpoint(TRUNCATE)');
  const fileBytes = statSync(db.name).size;
  const MB = 1024 * 1024;
  console.log(`\ndatabase file: ${f(fileBytes / MB, 0)} MiB`);
  try {
    const sizes = db.prepare('SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as { name: string; bytes: number }[];
    const bytesOf = (prefix: string[]) => sizes.filter((s) => prefix.some((p) => s.name === p || s.name.startsWith(`${p}_`) || s.name.startsWith(`sqlite_autoindex_${p}`))).reduce((a, s) => a + s.bytes, 0);
    const rows = count('telemetry_rows');
    const sessions = count('sessions');
    console.log(`  telemetry_rows + index: ${f(bytesOf(['telemetry_rows']) / MB / (rows / 1e6), 0)} MiB per million rows (${rows} rows)`);
    console.log(`  sessions + indexes: ${f(bytesOf(['sessions']) / MB / (sessions / 1e6), 0)} MiB per million sessions`);
    console.log(`  session_snapshots + index: ${f(bytesOf(['session_snapshots']) / MB / (count('session_snapshots') / 1e6), 0)} MiB per million snapshots`);
    console.log(`  session_dimension_days: ${f(bytesOf(['session_dimension_days']) / MB, 1)} MiB (${count('session_dimension_days')} rows)`);
    console.log(`  session_dimension_weeks: ${f(bytesOf(['session_dimension_weeks']) / MB, 1)} MiB (${count('session_dimension_weeks')} rows)`);
  } catch (err) {
    console.log(`  (no dbstat: ${(err as Error).message})`);
  }
} finally {
  await cp.close();
  rmSync(dataDir, { recursive: true, force: true });
}
