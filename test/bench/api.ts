// API benchmark (`npm run bench:api`): GET /projects/userStats/{projectId} with a valid key on
// the real control plane (SQLite, auth, access check, live counts, fair-use hook, info-level
// logging to /dev/null) against a bare fastify route returning the same JSON, in the same run.
// The load comes from autocannon in a child process. Prints req/s, p99 and ratios. Not a test.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import pino from 'pino';
import { buildControlPlane, createLogger, loadControlPlaneConfig } from '@pixelfleet/control-plane';

const require = createRequire(import.meta.url);
const AUTOCANNON = require.resolve('autocannon/autocannon.js');
const DURATION_S = Number(process.argv.find((a) => a.startsWith('--seconds='))?.slice('--seconds='.length) ?? 10);
const CONNECTIONS = 50;
const FIXED_RATE = 1000;
const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 10;

interface Result {
  reqPerSec: number;
  p99: number;
  p50: number;
  non2xx: number;
  errors: number;
}

function load(url: string, args: string[], seconds = DURATION_S): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [AUTOCANNON, '-j', '-c', String(CONNECTIONS), '-d', String(seconds), ...args, url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`));
      const r = JSON.parse(out) as { requests: { average: number }; latency: { p99: number; p50: number }; non2xx: number; errors: number };
      resolve({ reqPerSec: r.requests.average, p99: r.latency.p99, p50: r.latency.p50, non2xx: r.non2xx, errors: r.errors });
    });
  });
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-api-'));
  const config = loadControlPlaneConfig({
    overrides: {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: 0 },
      dataDir,
      adminToken: 'bench-admin-token-0123456789abcdef',
      agentJoinToken: 'bench-join-token-0123456789abcdef',
      // The fair-use hook still runs on every request; its bucket is big enough for the load.
      limits: { fairUseBurst: 10_000_000, fairUsePerSecond: 10_000_000 },
      logLevel: 'info',
    },
  });
  const cp = buildControlPlane(config, { logger: createLogger('info', pino.destination('/dev/null')) });
  const started = await cp.start();
  const user = cp.accounts.createUser('bench@example.com');
  const apiKey = cp.accounts.issueKey(user.userId);
  const project = cp.accounts.createProject(user.userId, 'Bench', 'europe');
  const body = cp.sessions.counts(project.projectId);

  const bare = Fastify();
  bare.get('/api/projects/userStats/:projectId', () => body);
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const bareAddress = bare.server.address();
  const barePort = typeof bareAddress === 'object' && bareAddress !== null ? bareAddress.port : 0;

  const path = `/api/projects/userStats/${project.projectId}?userId=${user.userId}&apikey=${encodeURIComponent(apiKey)}`;
  const apiUrl = `${started.httpOrigin}${path}`;
  const bareUrl = `http://127.0.0.1:${barePort}${path}`;
  const check = await fetch(apiUrl);
  if (check.status !== 200) throw new Error(`userStats answered ${check.status}: ${await check.text()}`);

  console.log(`bench:api — ${os.cpus().length} cores, Node ${process.version}, ${DURATION_S} s per run, ${CONNECTIONS} connections (autocannon in a child process)`);
  await load(bareUrl, [], 2); // warm-up
  await load(apiUrl, [], 2);
  const bareMax = await load(bareUrl, []);
  const apiMax = await load(apiUrl, []);
  // The same app's /healthz: the control plane's per-request cost (logger, metrics) without the API.
  const healthMax = await load(`${started.httpOrigin}/healthz`, []);
  const bareFixed = await load(bareUrl, ['-R', String(FIXED_RATE)]);
  const apiFixed = await load(apiUrl, ['-R', String(FIXED_RATE)]);

  const row = (name: string, r: Result) => `${name.padEnd(34)} ${r.reqPerSec.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(3)} ms   p99 ${String(r.p99).padStart(3)} ms   non-2xx ${r.non2xx}, errors ${r.errors}`;
  console.log('\nThroughput (as fast as it goes)');
  console.log(row('bare fastify route', bareMax));
  console.log(row('userStats (auth + SQLite + counts)', apiMax));
  console.log(row('control plane /healthz (same app)', healthMax));
  const ratio = apiMax.reqPerSec / bareMax.reqPerSec;
  console.log(`ratio userStats / bare: ${(ratio * 100).toFixed(1)} %   (target ≥ ${TARGET_RATIO * 100} %: ${ratio >= TARGET_RATIO ? 'met' : 'MISSED'})`);
  console.log(`ratio userStats / control plane /healthz: ${((apiMax.reqPerSec / healthMax.reqPerSec) * 100).toFixed(1)} %`);
  console.log(`\nFixed rate ${FIXED_RATE} req/s`);
  console.log(row('bare fastify route', bareFixed));
  console.log(row('userStats (auth + SQLite + counts)', apiFixed));
  console.log(`userStats p99 at ${FIXED_RATE} req/s: ${apiFixed.p99} ms   (target ≤ ${TARGET_P99_MS} ms: ${apiFixed.p99 <= TARGET_P99_MS ? 'met' : 'MISSED'})`);

  await bare.close();
  await cp.close();
  rmSync(dataDir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
