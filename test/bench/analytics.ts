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
import { arg, f, percentile } from './bench-support';

const sessionCount = Number(arg('--sessions', '1000000'));
const telemetryCount = Number(arg('--rows', '10000000'));
const ingestSeconds = Number(arg('--ingest-seconds', '8'));
const concurrency = Number(arg('--concurrency', '32'));
const ROWS_PER_LONG_SESSION = 2_000;
const DAY_MS = 24 * 60 * 60 * 1000;
const SPAN_DAYS = 90;

const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-analytics-'));
const config = loadControlPlaneConfig({
  overrides: { dataDir, adminToken: TEST_ADMIN_TOKEN, agentJoinToken: TEST_JOIN_TOKEN, geoip: { enabled: false }, logLevel: 'warn' },
});
const cp = buildControlPlaneWithDb(config, { logger: createLogger('warn', process.stderr) });
const db = cp.db;
const now = Date.now();
const start = now - SPAN_DAYS * DAY_MS;

/** Deterministic pseudo-random numbers (mulberry32), so two runs seed the same data. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = random(13);

/** Picks from values with Zipf weights (the first most often), as real audiences are spread. */
function zipf<T>(values: readonly T[]): () => T {
  const cumulative: number[] = [];
  let sum = 0;
  for (let i = 0; i < values.length; i++) cumulative.push((sum += 1 / (i + 1)));
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return values[lo]!;
  };
}

const BROWSERS = ['Chrome', 'Mobile Safari', 'Edge', 'Safari', 'Firefox', 'Samsung Browser', 'Chrome WebView', 'Opera', 'Yandex', 'Chrome Headless', 'UCBrowser', 'Silk'];
const OSES = ['Windows', 'Android', 'iOS', 'Mac OS', 'Linux', 'Chromium OS', 'Ubuntu', 'HarmonyOS'];
const DEVICES = ['desktop', 'mobile', 'tablet', 'smarttv'];
const CODES = 'US GB DE FR JP CA BR IN AU NL ES IT SE PL KR MX TR RU CH BE AT NO DK FI IE PT CZ RO HU GR IL AE SA SG HK TW TH VN ID MY PH NZ ZA EG NG KE AR CL CO PE UA BG RS HR SK SI LT LV EE IS'.split(' ');
const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });
// 5,000 cities, each in a country (the big countries have the most).
const pickCode = zipf(CODES);
const CITIES = Array.from({ length: 5_000 }, (_, i) => ({ city: `City ${i}`, code: pickCode() }));
const pickBrowser = zipf(BROWSERS);
const pickOs = zipf(OSES);
const pickDevice = zipf(DEVICES);
const pickCity = zipf(CITIES);

const count = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
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

const statsRow = (at: number, frames: number) => ({
  timestamp: new Date(at).toISOString(),
  FPS: '60',
  framesDecoded: String(frames),
  bitrate: '8000000',
  latency: '23',
  packetLoss: '0',
  framesDropped: '3',
  videoCodec: 'video/H264',
  videoResolution: '1920x1080',
});

try {
  const owner = cp.accounts.createUser('bench-analytics@example.com');
  const project = cp.accounts.createProject(owner.userId, 'Bench', 'europe');
  const projectId = project.projectId;

  // ---- Seeding: prepared statements in big transactions. ----
  const seedStart = performance.now();
  const insertSession = db.prepare(
    `INSERT INTO sessions (id, project_id, region, status, streaming_id, player_id, max_run_time, end_reason, placed_at, created_at, updated_at,
       browser, os, device_type, country, country_code, city, telemetry_count)
     VALUES (?, ?, 'europe', 'Terminated', ?, ?, 60, 'viewerLeft', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertSnapshot = db.prepare('INSERT INTO session_snapshots (session_id, received_at, data) VALUES (?, ?, ?)');
  const insertRow = db.prepare(
    'INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, ts, received_at, row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const longEvery = Math.max(1, Math.floor(sessionCount / Math.max(1, Math.ceil(telemetryCount / ROWS_PER_LONG_SESSION))));
  const longSessions: string[] = [];
  let rowsLeft = telemetryCount;
  const CHUNK = 20_000;
  for (let from = 0; from < sessionCount; from += CHUNK) {
    db.transaction(() => {
      for (let i = from; i < Math.min(sessionCount, from + CHUNK); i++) {
        // Sessions spread evenly over the 90 days, in creation order.
        const createdAt = start + Math.floor((i / sessionCount) * SPAN_DAYS * DAY_MS);
        const id = `session_${createdAt}_${i}`;
        const geo = rand() < 0.95 ? pickCity() : undefined; // 5% from addresses with no geo
        const ua = rand() < 0.98; // 2% bots and tools
        const rows = i % longEvery === 0 && rowsLeft > 0 ? Math.min(ROWS_PER_LONG_SESSION, rowsLeft) : 0;
        const endedAt = createdAt + 20 * 60_000 + rows * 5_000;
        insertSession.run(
          id,
          projectId,
          `streamer_${i}`,
          `player_${i}`,
          createdAt + 2_000,
          createdAt,
          endedAt,
          ua ? pickBrowser() : null,
          ua ? pickOs() : null,
          ua ? pickDevice() : null,
          geo ? regionNames.of(geo.code)! : null,
          geo?.code ?? null,
          geo?.city ?? null,
          rows,
        );
        const snap = (status: string, at: number, worker: boolean) =>
          insertSnapshot.run(id, at, JSON.stringify({ sessionId: id, projectId, status, region: 'Europe', ...(worker ? { assignedWorker: 'wrk_bench' } : {}), streamingId: `streamer_${i}`, playerId: `player_${i}`, maxRunTime: 60 }));
        snap('Enqueued', createdAt, false);
        snap('Starting', createdAt + 2_000, true);
        snap('Running', createdAt + 9_000, true);
        snap('Terminated', endedAt, true);
        if (rows > 0) {
          longSessions.push(id);
          rowsLeft -= rows;
          for (let r = 0; r < rows; r++) {
            const at = createdAt + 9_000 + r * 5_000;
            const iso = new Date(at).toISOString();
            if (r % 20 === 0) {
              const event = r === 0 ? 'connected' : 'visibilitychange';
              insertRow.run(id, projectId, 'Webrtc', event, iso, at, at + 100, JSON.stringify({ logType: 'Webrtc', event, timestamp: iso, sessionId: id, visibility: 'visible' }));
            } else {
              insertRow.run(id, projectId, null, null, iso, at, at + 100, JSON.stringify({ ...statsRow(at, r * 300), sessionId: id }));
            }
          }
        }
      }
    })();
  }
  // The rollups as session creation writes them (one row per project, dimension, day or week, and value).
  db.exec(`
    INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions)
      SELECT project_id, 'country', created_at / 86400000, country_code, country, country, COUNT(*) FROM sessions WHERE country IS NOT NULL GROUP BY 1, 3, 4, 5;
    INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions)
      SELECT project_id, 'city', created_at / 86400000, country_code, city, max(country), COUNT(*) FROM sessions WHERE city IS NOT NULL GROUP BY 1, 3, 4, 5;
    INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions)
      SELECT project_id, 'browser', created_at / 86400000, '', browser, '', COUNT(*) FROM sessions WHERE browser IS NOT NULL GROUP BY 1, 3, 5;
    INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions)
      SELECT project_id, 'os', created_at / 86400000, '', os, '', COUNT(*) FROM sessions WHERE os IS NOT NULL GROUP BY 1, 3, 5;
    INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions)
      SELECT project_id, 'device', created_at / 86400000, '', device_type, '', COUNT(*) FROM sessions WHERE device_type IS NOT NULL GROUP BY 1, 3, 5;
    INSERT INTO session_dimension_weeks (project_id, dimension, country_code, value, week, country, sessions)
      SELECT project_id, dimension, country_code, value, day / 7, max(country), SUM(sessions) FROM session_dimension_days GROUP BY 1, 2, 3, 4, 5;
  `);
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const tables = ['sessions', 'session_snapshots', 'telemetry_rows', 'session_dimension_days', 'session_dimension_weeks'];
  const counts = Object.fromEntries(tables.map((t) => [t, count(t)]));
  console.log(`bench:analytics — seeded in ${f((performance.now() - seedStart) / 1000, 1)} s: ${tables.map((t) => `${t} ${counts[t]}`).join(', ')}\n`);

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
  const ingestProject = cp.accounts.requireProject(cp.accounts.createProject(owner.userId, 'Ingest', 'europe').projectId);
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
