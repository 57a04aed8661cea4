// bench:dashboard — the customer dashboard over the analytics store at scale (analytics-store.ts: a
// million sessions over 90 days in one project, ten million telemetry rows in 5,000 long sessions)
// in a real control plane on 127.0.0.1, signed in as the project's owner. Prints p50/p95 over real
// HTTP of each dashboard data route beside the REST analytics route(s) reading the same data (the
// two alternate request by request, so load on the machine falls on both alike), the first page's
// script and style gzipped, and how long Chromium takes from navigation to the projects page drawn.
// Targets: every dashboard data route p95 <= 100 ms, first page <= 150 KB gzipped, rendered <= 1 s
// on loopback. Figures only.
//
// npm run bench:dashboard -- [--sessions 1000000] [--rows 10000000] [--requests 50]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get } from 'node:http';
import { bundleDashboard } from '@pixelfleet/dashboard';
import { createLogger, loadControlPlaneConfig } from '@pixelfleet/control-plane';
import { buildControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';
import { launchChromium } from '../support/chromium';
import { LogCapture, TEST_ADMIN_TOKEN, TEST_JOIN_TOKEN, TEST_METRICS_TOKEN, type TestControlPlane } from '../support/control-plane';
import { DashboardClient, invitedWithPassword } from '../support/dashboard-client';
import { DAY_MS, seedAnalyticsStore, STORE_TABLES } from './analytics-store';
import { arg, f, median, percentile, seededRandom } from './bench-support';

const sessionCount = Number(arg('--sessions', '1000000'));
const telemetryCount = Number(arg('--rows', '10000000'));
/** Timed requests per measure, after WARM_UP untimed ones. */
const requests = Number(arg('--requests', '50'));
const WARM_UP = 5;
const PAGE_LOADS = 5;
const EMAIL = 'bench-dashboard@example.com';
const PASSWORD = 'bench-dashboard-password';
/** The dashboard's session list page size (its default). The REST calls ask for the same page. */
const PAGE_SIZE = 25;
const ROUTE_P95_TARGET_MS = 100;
const FIRST_PAGE_TARGET_BYTES = 150_000;
const RENDERED_TARGET_MS = 1_000;
// The bench sends hundreds of requests a second from one address, which fair use and the
// analytics read limit are there to refuse: raised so that no 429 is measured.
const UNLIMITED = 1_000_000_000;

const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-dashboard-'));
const logs = new LogCapture();
const config = loadControlPlaneConfig({
  overrides: {
    http: { host: '127.0.0.1', port: 0 },
    grpc: { host: '127.0.0.1', port: 0 },
    dataDir,
    adminToken: TEST_ADMIN_TOKEN,
    agentJoinToken: TEST_JOIN_TOKEN,
    geoip: { enabled: false },
    metrics: { bearerToken: TEST_METRICS_TOKEN },
    logLevel: 'info',
    limits: { fairUseBurst: UNLIMITED, fairUsePerSecond: UNLIMITED, fairUseAddressBurst: UNLIMITED, fairUseAddressPerSecond: UNLIMITED, analyticsReadsPerMinute: UNLIMITED },
  },
});
// Info, as production logs by default: the request lines the dashboard routes write are part of their cost.
const cp = buildControlPlaneWithDb(config, { logger: createLogger('info', logs.stream) });
const destroy = async () => {
  await cp.close();
  rmSync(dataDir, { recursive: true, force: true });
};

type Read = { url: string; headers: Record<string, string> };
interface Figures {
  samples: number[];
  /** Characters of the last answer(s), summed over the reads of one sample. */
  answerChars: number;
}
interface TableRow {
  measure: string;
  figures: string;
  target: string;
}
const table: TableRow[] = [];

/** GETs each read in turn; throws unless every answer is 200. Returns the wall time in ms and the answers' characters. */
async function timedReads(reads: readonly Read[]): Promise<{ ms: number; chars: number }> {
  const t0 = performance.now();
  let chars = 0;
  for (const { url, headers } of reads) {
    const res = await fetch(url, { headers });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${body.slice(0, 300)}`);
    chars += body.length;
  }
  return { ms: performance.now() - t0, chars };
}

/**
 * Times the dashboard's read of request i and the REST reads of the same data, alternating, each
 * WARM_UP + requests times; the first WARM_UP of each are not counted.
 */
async function compare(dashboard: (i: number) => Read[], rest: (i: number) => Read[]): Promise<{ dashboard: Figures; rest: Figures }> {
  const out = { dashboard: { samples: [] as number[], answerChars: 0 }, rest: { samples: [] as number[], answerChars: 0 } };
  for (let i = 0; i < WARM_UP + requests; i++) {
    for (const [side, reads] of [
      ['dashboard', dashboard(i)],
      ['rest', rest(i)],
    ] as const) {
      const { ms, chars } = await timedReads(reads);
      out[side].answerChars = chars;
      if (i >= WARM_UP) out[side].samples.push(ms);
    }
  }
  return out;
}

/** The bytes a GET with Accept-Encoding: gzip receives (fetch would hide them, decoding), and how they were encoded. */
function wireBytes(url: string): Promise<{ name: string; bytes: number; encoding: string }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ name: new URL(url).pathname.split('/').pop()!, bytes, encoding: res.headers['content-encoding'] ?? 'identity' }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

const kb = (chars: number) => `${f(chars / 1000, 1)} KB`;
const latency = (x: Figures) => `p50 ${f(percentile(x.samples, 50), 1)} ms, p95 ${f(percentile(x.samples, 95), 1)} ms (answer ${kb(x.answerChars)})`;
const verdict = (met: boolean) => (met ? 'met' : 'MISSED');

/** restMeasure undefined: the REST API has no twin of the read (its figures are not shown). */
function record(measure: string, restMeasure: string | undefined, figures: { dashboard: Figures; rest: Figures }): void {
  const p95 = percentile(figures.dashboard.samples, 95);
  table.push({ measure, figures: latency(figures.dashboard), target: `p95 <= ${ROUTE_P95_TARGET_MS} ms: ${verdict(p95 <= ROUTE_P95_TARGET_MS)}` });
  if (restMeasure !== undefined) table.push({ measure: `  REST: ${restMeasure}`, figures: latency(figures.rest), target: '' });
  console.log(`${measure}: ${latency(figures.dashboard)}${restMeasure === undefined ? '' : ` | REST ${latency(figures.rest)}`}`);
}

let closeBrowser: (() => Promise<void>) | undefined;
try {
  // ---- The store, the owner who signs in, and the server. ----
  const owner = await cp.accounts.createUser(EMAIL);
  const projectId = (await cp.accounts.createProject(owner.userId, 'Bench', 'europe')).projectId;
  const seedStart = performance.now();
  const { longSessions, tableCounts } = seedAnalyticsStore(cp.db, { projectId, sessionCount, telemetryCount, now: Date.now(), rand: seededRandom(13) });
  console.log(`bench:dashboard — seeded in ${f((performance.now() - seedStart) / 1000, 1)} s: ${STORE_TABLES.map((t) => `${t} ${tableCounts[t]}`).join(', ')}`);
  const startAt = performance.now();
  const started = await cp.start();
  console.log(`control plane started in ${f(performance.now() - startAt, 0)} ms at ${started.httpOrigin}\n`);
  const dashboardUrl = started.publicUrls.dashboard;
  const dashboardApi = `${dashboardUrl}/api/projects/${projectId}`;
  const restApi = `${started.httpOrigin}/api/v1/analytics`;

  // invitedWithPassword reads the invitation from the handle tests get; this is that handle over the bench's app.
  const handle: TestControlPlane = { cp, started, dataDir, logs, stop: () => cp.close(), destroy };
  await invitedWithPassword(handle, EMAIL, PASSWORD);
  const client = new DashboardClient(new URL(dashboardUrl).origin);
  await client.fetchCsrf();
  const signIn = await client.post(`${new URL(dashboardUrl).pathname}/api/sign-in`, { email: EMAIL, password: PASSWORD });
  if (signIn.status !== 200) throw new Error(`sign-in answered ${signIn.status}: ${JSON.stringify(signIn.json)}`);
  const signedIn = { cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ') };
  const apiKey = { 'x-api-key': await cp.accounts.issueKey(owner.userId) };
  const dashboardRead = (path: string): Read[] => [{ url: `${dashboardApi}${path}`, headers: signedIn }];
  const restRead = (path: string): Read => ({ url: `${restApi}${path}`, headers: apiKey });

  // ---- Sessions page, beside the REST session list with the same window and page. ----
  /** The window as the REST API takes it: ISO dates, both ends inclusive. */
  const restWindow = (fromMs: number, toMs: number) => `startDate=${new Date(fromMs).toISOString()}&endDate=${new Date(toMs).toISOString()}`;
  // The REST API filters by status alone (the spec's parameters): the other filters have no twin.
  const days92 = (to: number) => `from=${to - 92 * DAY_MS}&to=${to}`;
  const sessionPages: { measure: string; dashboard: (toMs: number) => string; rest?: (toMs: number) => string }[] = [
    { measure: 'sessions page, last 30 days (default)', dashboard: () => '', rest: (to) => restWindow(to - 30 * DAY_MS, to) },
    { measure: 'sessions page, status=Terminated', dashboard: () => 'status=Terminated', rest: (to) => `${restWindow(to - 30 * DAY_MS, to)}&status=Terminated` },
    { measure: 'sessions page, 92 days', dashboard: days92, rest: (to) => restWindow(to - 92 * DAY_MS, to) },
    { measure: 'sessions page, skip=9975 (30 days; the last page before the count cap)', dashboard: () => 'skip=9975', rest: (to) => `${restWindow(to - 30 * DAY_MS, to)}&skip=9975` },
    { measure: 'sessions page, 92 days, diagnosis=mediaNeverConnected (3 %)', dashboard: (to) => `${days92(to)}&diagnosis=mediaNeverConnected` },
    { measure: 'sessions page, 92 days, country=Germany (a common one)', dashboard: (to) => `${days92(to)}&country=Germany` },
    { measure: 'sessions page, 92 days, country=Iceland (the rarest)', dashboard: (to) => `${days92(to)}&country=Iceland` },
    { measure: 'sessions page, 92 days, browser=Firefox', dashboard: (to) => `${days92(to)}&browser=Firefox` },
    { measure: 'sessions page, 92 days, Chrome + Germany + connectedWithoutVideo', dashboard: (to) => `${days92(to)}&browser=Chrome&country=Germany&diagnosis=connectedWithoutVideo` },
  ];
  for (const { measure, dashboard, rest } of sessionPages) {
    const figures = await compare(
      () => dashboardRead(`/sessions?${dashboard(Date.now())}`),
      () => (rest === undefined ? [] : [restRead(`/projects/${projectId}/sessions?${rest(Date.now())}&limit=${PAGE_SIZE}`)]),
    );
    record(measure, rest === undefined ? undefined : `GET …/projects/:id/sessions, limit ${PAGE_SIZE}`, figures);
  }

  // ---- A long session's page, beside its telemetry page and snapshots. Each request reads a
  // session the other side has not read (every session's first read comes from disk alike). ----
  const longSession = (k: number) => longSessions[k % longSessions.length]!;
  record(
    'session page, a session of 2,000 telemetry rows',
    'frontend-streaming-logs?limit=1000 + sessions/:id',
    await compare(
      (i) => dashboardRead(`/sessions/${longSession(2 * i)}`),
      (i) => {
        const sessionId = longSession(2 * i + 1);
        return [restRead(`/frontend-streaming-logs?sessionId=${sessionId}&projectId=${projectId}&limit=1000`), restRead(`/sessions/${sessionId}?projectId=${projectId}`)];
      },
    ),
  );

  // ---- The audience page over 92 days, beside the five REST breakdowns of that window. ----
  record(
    'analytics page, 92 days (five breakdowns)',
    'the five breakdowns, summed',
    await compare(
      () => {
        const to = Date.now();
        return dashboardRead(`/analytics?from=${to - 92 * DAY_MS}&to=${to}`);
      },
      () => {
        const to = Date.now();
        return (['country', 'city', 'browser', 'os', 'device'] as const).map((dimension) => restRead(`/projects/${projectId}/analytics/breakdown?dimension=${dimension}&${restWindow(to - 92 * DAY_MS, to)}`));
      },
    ),
  );

  // ---- The first page's assets as they cross the wire to a browser that accepts gzip. ----
  const shellHtml = await (await fetch(`${dashboardUrl}/`)).text();
  const assetUrls = [...shellHtml.matchAll(/(?:src|href)="([^"]+\/assets\/[^"]+)"/g)].map((m) => new URL(m[1]!, dashboardUrl).toString());
  const sent = await Promise.all(assetUrls.map((url) => wireBytes(url)));
  const wire = sent.reduce((n, a) => n + a.bytes, 0);
  const bundle = await bundleDashboard();
  table.push({
    measure: 'first page, script + style as sent (Accept-Encoding: gzip)',
    figures: `${kb(wire)} (${sent.map((a) => `${a.name} ${a.bytes} B ${a.encoding}`).join(', ')}; ${kb(bundle.js.length + bundle.css.length)} unpacked)`,
    target: `<= ${FIRST_PAGE_TARGET_BYTES / 1000} KB: ${verdict(wire <= FIRST_PAGE_TARGET_BYTES && sent.every((a) => a.encoding === 'gzip'))}`,
  });

  // ---- Chromium: navigation to the projects page drawn, signed in, the bundle built. ----
  await timedReads([{ url: `${dashboardUrl}/`, headers: {} }]); // the server builds the bundle on the first request
  const browser = await launchChromium();
  closeBrowser = browser.close;
  const page = await browser.context.newPage();
  await page.goto(`${dashboardUrl}/sign-in`);
  await page.getByLabel('E-mail address').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  const loads: number[] = [];
  for (let run = 0; run < PAGE_LOADS; run++) {
    const t0 = performance.now();
    // 'commit': the new document is in place, so the waits below see only what it draws.
    await page.goto(`${dashboardUrl}/`, { waitUntil: 'commit' });
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await page.getByRole('listitem').filter({ hasText: 'Bench' }).waitFor();
    loads.push(performance.now() - t0);
  }
  console.log(`projects page rendered: ${loads.map((ms) => f(ms, 0)).join(', ')} ms`);
  table.push({
    measure: `projects page rendered (${PAGE_LOADS} loads, assets cached)`,
    figures: `median ${f(median(loads), 0)} ms, max ${f(Math.max(...loads), 0)} ms`,
    target: `<= ${RENDERED_TARGET_MS} ms: ${verdict(Math.max(...loads) <= RENDERED_TARGET_MS)}`,
  });

  // ---- The table. ----
  const width = (key: keyof TableRow) => Math.max(key.length, ...table.map((r) => r[key].length));
  const row = (r: TableRow) => `${r.measure.padEnd(width('measure'))} | ${r.figures.padEnd(width('figures'))} | ${r.target}`;
  console.log(`\n${sessionCount} sessions, ${telemetryCount} telemetry rows; ${requests} requests per measure after ${WARM_UP} warm-up\n`);
  console.log(row({ measure: 'measure', figures: 'figures', target: 'target' }));
  console.log(`${'-'.repeat(width('measure'))}-|-${'-'.repeat(width('figures'))}-|-${'-'.repeat(width('target'))}`);
  for (const r of table) console.log(row(r));
  const complaints = logs.lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 40);
  if (complaints.length > 0) console.log(`\nthe control plane logged ${complaints.length} warn/error lines:\n${complaints.slice(0, 10).join('\n')}`);
} finally {
  await closeBrowser?.();
  await destroy();
}
