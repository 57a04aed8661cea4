// The analytics store at scale, seeded straight into a control plane's SQLite file for the benches
// that read it (bench:analytics, bench:dashboard): sessions spread evenly over 90 days in one
// project, each with its client dimensions, their day and week rollups and four status snapshots,
// and telemetry rows in long sessions of 2,000 rows (an event row every 20, statistics between).
import { SqliteSessionDailyRepository, type Db } from '@pixelfleet/control-plane/test-support';

/** Telemetry rows of each long session (the rest of the sessions have none). */
export const ROWS_PER_LONG_SESSION = 2_000;
export const DAY_MS = 24 * 60 * 60 * 1000;
/** Days the sessions are spread over, ending now. */
export const SPAN_DAYS = 90;
/** The tables the seed fills, in the order the benches print their counts. */
export const STORE_TABLES = ['sessions', 'session_snapshots', 'telemetry_rows', 'session_dimension_days', 'session_dimension_weeks'] as const;

/** Picks from values with Zipf weights (the first most often), as real audiences are spread. */
function zipf<T>(values: readonly T[], rand: () => number): () => T {
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

/**
 * A statistics row (no logType) with every field the player sends, as strings (web-player's
 * TelemetryStatsRow): the session page charts FPS, bitrate, latency, packetLoss and framesDropped.
 */
export const statsRow = (at: number, frames: number) => ({
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

export const countRows = (db: Db, table: string): number => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;

export interface AnalyticsStoreOptions {
  /** The project every session belongs to (it must exist). */
  projectId: string;
  sessionCount: number;
  /** Telemetry rows in all, in sessions of ROWS_PER_LONG_SESSION spread evenly over the sessions. */
  telemetryCount: number;
  /** Epoch ms the 90 days end at (the newest session is created just before). */
  now: number;
  /**
   * Every random choice is drawn from this source, in a fixed order (the 5,000 cities first), so a
   * bench that goes on drawing from it after the seed sees the same numbers run after run.
   */
  rand: () => number;
}

export interface AnalyticsStore {
  /** Ids of the sessions with ROWS_PER_LONG_SESSION telemetry rows (fewer in the last one if the rows run out), oldest first. */
  longSessions: string[];
  /** Epoch ms of the oldest session's creation (now - 90 days). */
  spanStartMs: number;
  /** Rows in each of STORE_TABLES once seeded. */
  tableCounts: Record<(typeof STORE_TABLES)[number], number>;
}

/**
 * A session's stored diagnosis, drawn from its index (no draw from rand: the seed's sequence stays
 * as it was): video in 88 of 100 (every session with rows), no video after connecting in 5, no media
 * connection in 3, nothing reported in 4; the shares a filter of the sessions list meets.
 */
function diagnosisOf(i: number, rows: number): string {
  const slot = i % 100;
  if (rows > 0 || slot >= 12) return 'videoDelivered';
  return slot < 4 ? 'neverReported' : slot < 7 ? 'mediaNeverConnected' : 'connectedWithoutVideo';
}

/**
 * Seeds the store through prepared statements in big transactions, writes the rollups as session
 * creation does, ANALYZEs and checkpoints the WAL. A million sessions and ten million rows take a
 * few minutes on two cores.
 */
export function seedAnalyticsStore(db: Db, options: AnalyticsStoreOptions): AnalyticsStore {
  const { projectId, sessionCount, telemetryCount, now, rand } = options;
  const start = now - SPAN_DAYS * DAY_MS;
  // 5,000 cities, each in a country (the big countries have the most).
  const pickCode = zipf(CODES, rand);
  const CITIES = Array.from({ length: 5_000 }, (_, i) => ({ city: `City ${i}`, code: pickCode() }));
  const pickBrowser = zipf(BROWSERS, rand);
  const pickOs = zipf(OSES, rand);
  const pickDevice = zipf(DEVICES, rand);
  const pickCity = zipf(CITIES, rand);

  const insertSession = db.prepare(
    `INSERT INTO sessions (id, project_id, region, status, streaming_id, player_id, max_run_time, end_reason, placed_at, created_at, updated_at,
       browser, os, device_type, country, country_code, city, telemetry_count, diagnosis)
     VALUES (?, ?, 'europe', 'Terminated', ?, ?, 60, 'viewerLeft', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertSnapshot = db.prepare('INSERT INTO session_snapshots (session_id, received_at, data) VALUES (?, ?, ?)');
  const insertRow = db.prepare(
    'INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, ts, received_at, row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  // The daily rollups through their repository, as the session's insert and its move to Running write them.
  const daily = new SqliteSessionDailyRepository(db);
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
          diagnosisOf(i, rows),
        );
        const snap = (status: string, at: number, worker: boolean) =>
          insertSnapshot.run(id, at, JSON.stringify({ sessionId: id, projectId, status, region: 'Europe', ...(worker ? { assignedWorker: 'wrk_bench' } : {}), streamingId: `streamer_${i}`, playerId: `player_${i}`, maxRunTime: 60 }));
        snap('Enqueued', createdAt, false);
        snap('Starting', createdAt + 2_000, true);
        // Start-ups of 5 to 30 s, as packaged apps take (drawn from the index: no draw from rand).
        const startupMs = 5_000 + ((i * 7_919) % 25_000);
        snap('Running', createdAt + 2_000 + startupMs, true);
        daily.recordCreated(projectId, createdAt);
        daily.recordStartup(projectId, createdAt, startupMs);
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
  const tableCounts = Object.fromEntries(STORE_TABLES.map((t) => [t, countRows(db, t)])) as AnalyticsStore['tableCounts'];
  return { longSessions, spanStartMs: start, tableCounts };
}
