// bench:retention — one retention sweep over a large backlog in a real control plane's SQLite file:
// a million telemetry rows and a million fleet events (most older than retention.sessionDays),
// 300,000 sessions with two snapshots each. How long the event loop is held at a stretch (the gap
// between two turns of a setImmediate ticker running beside the sweep: one batch), and the sweep's
// total time and rate. Figures only.
//
// npm run bench:retention -- [--telemetry 1000000] [--events 1000000] [--sessions 300000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createLogger, loadControlPlaneConfig } from '@pixelfleet/control-plane';
import { buildControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';
import { TEST_ADMIN_TOKEN, TEST_JOIN_TOKEN } from '../support/control-plane';
import { arg, f, median, percentile } from './bench-support';

const telemetryRows = Number(arg('--telemetry', '1000000'));
const eventRows = Number(arg('--events', '1000000'));
const sessionRows = Number(arg('--sessions', '300000'));
const DAYS = 100;
const DAY_MS = 24 * 60 * 60 * 1000;

const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-retention-'));
const config = loadControlPlaneConfig({
  overrides: { dataDir, adminToken: TEST_ADMIN_TOKEN, agentJoinToken: TEST_JOIN_TOKEN, retention: { sessionDays: DAYS }, logLevel: 'warn' },
});
const cp = buildControlPlaneWithDb(config, { logger: createLogger('warn', process.stderr) });
const db = cp.db;
const now = Date.now();
const cutoff = now - DAYS * DAY_MS;

try {
  // Seeding: 5 of 6 sessions ended before the window (the flood), 1 of 6 recent; telemetry on the
  // first sessions (20 rows each, up to 20,000 per session in real life); events half old, half new.
  const seedStart = performance.now();
  db.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_b', 'b@example.com', 0)").run();
  db.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_b', 'usr_b', 'B', 'europe', 0)").run();
  const insertSession = db.prepare("INSERT INTO sessions (id, project_id, region, status, created_at, updated_at) VALUES (?, 'prj_b', 'europe', 'Terminated', ?, ?)");
  const insertSnapshot = db.prepare("INSERT INTO session_snapshots (session_id, received_at, data) VALUES (?, ?, '{\"status\":\"Terminated\"}')");
  const insertTelemetry = db.prepare(
    "INSERT INTO telemetry_rows (session_id, project_id, log_type, timestamp, received_at, row) VALUES (?, 'prj_b', 'Stats', '2026-01-01T00:00:00.000Z', ?, '{\"FPS\":\"30\",\"bitrate\":\"2000000\",\"latency\":\"12\"}')",
  );
  const insertEvent = db.prepare("INSERT INTO events (type, occurred_at, session_id, project_id, data) VALUES ('session.ended', ?, ?, 'prj_b', '{\"reason\":\"viewer left\"}')");
  const sessionId = (i: number) => `session_${i}`;
  const endedAt = (i: number) => (i % 6 === 5 ? now - DAY_MS : cutoff - DAY_MS - (sessionRows - i) * 1000);
  db.transaction(() => {
    for (let i = 0; i < sessionRows; i++) {
      insertSession.run(sessionId(i), endedAt(i) - 60_000, endedAt(i));
      insertSnapshot.run(sessionId(i), endedAt(i) - 60_000);
      insertSnapshot.run(sessionId(i), endedAt(i));
    }
    for (let i = 0; i < telemetryRows; i++) {
      const s = Math.floor(i / 20) % sessionRows;
      insertTelemetry.run(sessionId(s), endedAt(s));
    }
    for (let i = 0; i < eventRows; i++) insertEvent.run(i < eventRows / 2 ? cutoff - DAY_MS - (eventRows - i) : now - 1000, sessionId(i % sessionRows));
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const count = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
  const tables = ['sessions', 'session_snapshots', 'telemetry_rows', 'events'];
  const before = Object.fromEntries(tables.map((t) => [t, count(t)]));
  console.log(`bench:retention — seeded in ${f((performance.now() - seedStart) / 1000, 1)} s: ${tables.map((t) => `${t} ${before[t]}`).join(', ')}\n`);

  // A ticker beside the sweep: the gap between two of its turns is how long the loop was held.
  const gaps: number[] = [];
  let ticking = true;
  const ticker = (async () => {
    let last = performance.now();
    while (ticking) {
      await nextTurn();
      const t = performance.now();
      gaps.push(t - last);
      last = t;
    }
  })();
  const t0 = performance.now();
  const result = await cp.retention.sweep();
  const seconds = (performance.now() - t0) / 1000;
  ticking = false;
  await ticker;

  const deleted = result.sessions + result.snapshots + result.telemetryRows + result.logFiles + result.events + result.commands;
  console.log(`deleted: ${JSON.stringify(result)}`);
  console.log(`kept: ${tables.map((t) => `${t} ${count(t)}`).join(', ')}`);
  console.log(`sweep: ${deleted} rows in ${f(seconds, 2)} s (${f(deleted / seconds / 1000, 0)}k rows/s), ${result.batches} statements`);
  console.log(`event loop held at a stretch: longest ${f(Math.max(...gaps), 2)} ms, p99 ${f(percentile(gaps, 99), 2)} ms, median ${f(median(gaps), 2)} ms (${gaps.length} turns)`);
} finally {
  await cp.close();
  rmSync(dataDir, { recursive: true, force: true });
}
