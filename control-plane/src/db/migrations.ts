// Numbered schema migrations, applied in order at start, each in its own transaction.
// Never edit a released migration: add the next number. From 24 on, every migration is added here
// and to postgres-migrations.ts (whose 23 is a baseline of this schema at 23) with the same version
// and name; test/integration/postgres-schema.test.ts compares the lists and the schemas they end at.
// Longer than ~400 lines: the schema's whole history, append-only and read in order; a split by
// number would hide which migration came after which.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts, workers, commands, sessions, builds, log files, events',
    sql: `
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE COLLATE NOCASE,
  created_at INTEGER NOT NULL
);

-- Only SHA-256 digests of keys are stored. At most one live key per user.
CREATE TABLE api_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  key_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
CREATE UNIQUE INDEX api_keys_one_live_per_user ON api_keys(user_id) WHERE revoked_at IS NULL;

CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  owner_user_id TEXT NOT NULL REFERENCES users(id),
  name TEXT NOT NULL,
  region TEXT NOT NULL CHECK (region IN ('us-east-1', 'europe', 'asia-pacific')),
  enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  subscription_status TEXT NOT NULL DEFAULT 'active',
  live_upload_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX projects_owner ON projects(owner_user_id);

CREATE TABLE project_members (
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  access TEXT NOT NULL CHECK (access IN ('FULL', 'READONLY')),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members(user_id);

-- link: connected | disconnected | unreachable (the control link); draining is an operator flag.
CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  region TEXT NOT NULL,
  slots INTEGER NOT NULL CHECK (slots >= 1),
  token_hash TEXT NOT NULL UNIQUE,
  agent_version TEXT NOT NULL,
  link TEXT NOT NULL DEFAULT 'disconnected' CHECK (link IN ('connected', 'disconnected', 'unreachable')),
  draining INTEGER NOT NULL DEFAULT 0 CHECK (draining IN (0, 1)),
  connection_epoch INTEGER NOT NULL DEFAULT 0,
  last_acked_seq INTEGER NOT NULL DEFAULT 0,
  next_seq INTEGER NOT NULL DEFAULT 1,
  last_seen_at INTEGER,
  lease_expires_at INTEGER,
  enrolled_at INTEGER NOT NULL
);

-- Commands to agents, delivered at least once; phase follows the agent's acks.
CREATE TABLE worker_commands (
  worker_id TEXT NOT NULL REFERENCES workers(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  command_id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL,
  phase TEXT NOT NULL DEFAULT 'PENDING',
  error_code TEXT,
  error_message TEXT,
  not_after INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (worker_id, seq)
);

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  region TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('Enqueued', 'Starting', 'Running', 'Terminating', 'Terminated')),
  assigned_worker TEXT,
  streaming_id TEXT,
  player_id TEXT,
  max_run_time INTEGER,
  end_reason TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX sessions_project_created ON sessions(project_id, created_at DESC);
CREATE INDEX sessions_live ON sessions(status) WHERE status <> 'Terminated';
CREATE INDEX sessions_worker ON sessions(assigned_worker) WHERE status <> 'Terminated';

CREATE TABLE session_snapshots (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  received_at INTEGER NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX session_snapshots_session ON session_snapshots(session_id, id);

CREATE TABLE builds (
  upload_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  file_url TEXT,
  status TEXT NOT NULL,
  objection TEXT,
  auto_release INTEGER NOT NULL DEFAULT 0 CHECK (auto_release IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX builds_project_created ON builds(project_id, created_at DESC);

-- Engine log files uploaded by agents; the gzip bytes live in the blob store under blob_sha256.
CREATE TABLE log_files (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  file_name TEXT NOT NULL,
  file_size INTEGER NOT NULL,
  gz_size INTEGER NOT NULL,
  blob_sha256 TEXT NOT NULL,
  uploaded_at INTEGER NOT NULL
);
CREATE INDEX log_files_session ON log_files(session_id, uploaded_at);

CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  type TEXT NOT NULL,
  occurred_at INTEGER NOT NULL,
  worker_id TEXT,
  session_id TEXT,
  project_id TEXT,
  data TEXT NOT NULL DEFAULT '{}'
);
`,
  },
  {
    version: 2,
    name: 'viewer tokens, project settings, telemetry rows',
    sql: `
-- Streaming settings of a project as JSON (codec, bitrates, resolution, fps, maxRunTime, ...);
-- missing keys take the defaults in project-settings.ts.
ALTER TABLE projects ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';

-- SHA-256 of the per-session token the viewer page presents when it reports telemetry.
ALTER TABLE sessions ADD COLUMN viewer_token_hash TEXT;

-- Telemetry rows reported by viewers' players, as received (the analytics API reads them).
CREATE TABLE telemetry_rows (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  log_type TEXT,
  event TEXT,
  timestamp TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  row TEXT NOT NULL
);
CREATE INDEX telemetry_rows_session ON telemetry_rows(session_id, timestamp);
`,
  },
  {
    version: 3,
    name: 'project webhooks, webhook deliveries',
    sql: `
-- The project's webhook receiver and its event filter (JSON array of event names; NULL = all).
ALTER TABLE projects ADD COLUMN webhook_url TEXT;
ALTER TABLE projects ADD COLUMN webhook_events TEXT;

-- Every webhook delivery attempt and its outcome (no retries: one row per attempt), for operators.
CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  event TEXT NOT NULL,
  upload_id TEXT,
  url TEXT NOT NULL,
  status_code INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  attempted_at INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_project ON webhook_deliveries(project_id, id DESC);
`,
  },
  {
    version: 4,
    name: "a project's sessions that have not ended",
    sql: `
-- Disabling a project ends every session of it that is not over, however old: this index finds
-- them without reading the project's ended history.
CREATE INDEX sessions_project_not_terminated ON sessions(project_id, created_at) WHERE status <> 'Terminated';
`,
  },
  {
    version: 5,
    name: 'builds.status limited to the build stages',
    sql: `
-- builds.status takes only the statuses of the build stage table (builds/build-stages.ts).
-- SQLite cannot add a CHECK to a column, so the table is rebuilt in this migration's transaction:
-- new table, rows copied, old table dropped, new one renamed, index recreated. No foreign key
-- points at builds, so dropping it cascades nowhere; a stored status outside the list fails the
-- copy and rolls the whole migration back.
CREATE TABLE builds_with_status_check (
  upload_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  file_url TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'Downloading Files', 'Extracting & Scanning', 'Saving to Repository', 'Ready', 'Distributing to Servers', 'Approved', 'Reject', 'Download Failed')),
  objection TEXT,
  auto_release INTEGER NOT NULL DEFAULT 0 CHECK (auto_release IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
INSERT INTO builds_with_status_check (upload_id, project_id, file_url, status, objection, auto_release, created_at, updated_at)
  SELECT upload_id, project_id, file_url, status, objection, auto_release, created_at, updated_at FROM builds;
DROP TABLE builds;
ALTER TABLE builds_with_status_check RENAME TO builds;
CREATE INDEX builds_project_created ON builds(project_id, created_at DESC);
`,
  },
  {
    version: 6,
    name: "a build's archive and manifest",
    sql: `
-- What the pipeline learned of a build: the manifest of its archive (platform, project, the
-- executable to launch, file count and size, as JSON) once scanned, and the archive's SHA-256 and
-- size once saved to the blob store (content-addressed: identical archives are stored once).
ALTER TABLE builds ADD COLUMN manifest TEXT;
ALTER TABLE builds ADD COLUMN archive_sha256 TEXT;
ALTER TABLE builds ADD COLUMN archive_bytes INTEGER;
-- Builds the pipeline has not finished with, found at start to resume them.
CREATE INDEX builds_unfinished ON builds(created_at) WHERE status IN ('pending', 'Downloading Files', 'Extracting & Scanning', 'Saving to Repository');
`,
  },
  {
    version: 7,
    name: "a build's copies on workers",
    sql: `
-- Each worker's copy of a distributed build: PrepareBuild sent, the build ready in the worker's
-- cache, or failed there (error says why). Distribution ends when every copy has settled; a
-- worker holding a project's live build ready may take that project's sessions.
CREATE TABLE build_copies (
  upload_id TEXT NOT NULL REFERENCES builds(upload_id) ON DELETE CASCADE,
  worker_id TEXT NOT NULL REFERENCES workers(id) ON DELETE CASCADE,
  phase TEXT NOT NULL CHECK (phase IN ('sent', 'ready', 'failed')),
  error TEXT,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (upload_id, worker_id)
);
CREATE INDEX build_copies_worker ON build_copies(worker_id, phase);
`,
  },
  {
    version: 8,
    name: "a session's placement time",
    sql: `
-- When the session was placed on a worker (Starting): its maximum run time and its connect
-- timeout count from here, and are armed again from it when the control plane restarts.
ALTER TABLE sessions ADD COLUMN placed_at INTEGER;
`,
  },
  {
    version: 9,
    name: 'retention: ended sessions, fleet events and settled commands by age',
    sql: `
-- The retention sweep (retention/retention-sweep.ts) finds what is older than retention.sessionDays
-- through these, oldest first, a small batch at a time, without reading what it keeps. An ended
-- session's updated_at is when it ended (Terminated is final).
CREATE INDEX sessions_ended ON sessions(updated_at) WHERE status = 'Terminated';
CREATE INDEX events_occurred ON events(occurred_at);
CREATE INDEX worker_commands_settled ON worker_commands(updated_at) WHERE phase IN ('SUCCEEDED', 'FAILED');
`,
  },
  {
    version: 10,
    name: 'client dimensions of sessions, their per-day rollup, telemetry read order and row count',
    sql: `
-- What the server derived of the viewer when the session was created (the share page's socket):
-- browser, os and device type from the User-Agent, country, country code and city from the client
-- address (offline GeoIP). NULL when unknown (a bot or garbage User-Agent, a private address).
ALTER TABLE sessions ADD COLUMN browser TEXT;
ALTER TABLE sessions ADD COLUMN os TEXT;
ALTER TABLE sessions ADD COLUMN device_type TEXT;
ALTER TABLE sessions ADD COLUMN country TEXT;
ALTER TABLE sessions ADD COLUMN country_code TEXT;
ALTER TABLE sessions ADD COLUMN city TEXT;
-- Telemetry rows accepted for the session (the per-session cap reads this one row, not a COUNT).
ALTER TABLE sessions ADD COLUMN telemetry_count INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET telemetry_count = (SELECT COUNT(*) FROM telemetry_rows t WHERE t.session_id = sessions.id);

-- Sessions created per UTC day (day = floor(created_at / 86400000)) by dimension value, kept
-- current in the transaction that inserts the session, so a breakdown reads at most days x values
-- rows whatever the number of sessions. dimension: country | city | browser | os | device.
-- value: the country name for country, the city name for city, else the browser / os / device type.
-- country_code and country: the session's, for country and city rows (a city is told apart by its
-- country); '' for the others.
CREATE TABLE session_dimension_days (
  project_id TEXT NOT NULL,
  dimension TEXT NOT NULL CHECK (dimension IN ('country', 'city', 'browser', 'os', 'device')),
  day INTEGER NOT NULL,
  country_code TEXT NOT NULL DEFAULT '',
  value TEXT NOT NULL,
  country TEXT NOT NULL DEFAULT '',
  sessions INTEGER NOT NULL,
  PRIMARY KEY (project_id, dimension, day, country_code, value)
) WITHOUT ROWID;
-- The retention sweep deletes days older than retention.sessionDays through this.
CREATE INDEX session_dimension_days_day ON session_dimension_days(day);

-- Telemetry rows of one session are read newest first by the time the row carries (ts: its
-- ISO 8601 timestamp in ms since the epoch), optionally only the event rows (log_type 'Webrtc')
-- and between two dates: (session_id, ts, id, log_type) answers the filters and the count from the
-- index alone, and ORDER BY ts DESC, id DESC walks it backwards with no sort (id is the rowid).
ALTER TABLE telemetry_rows ADD COLUMN ts INTEGER NOT NULL DEFAULT 0;
UPDATE telemetry_rows SET ts = coalesce(CAST(round((julianday(timestamp) - 2440587.5) * 86400000) AS INTEGER), received_at);
DROP INDEX telemetry_rows_session;
CREATE INDEX telemetry_rows_session_ts ON telemetry_rows(session_id, ts, id, log_type);
`,
  },
  {
    version: 11,
    name: 'retention: log files and telemetry rows by age, log blobs by digest',
    sql: `
-- retention.logDays and retention.telemetryDays (retention/retention-sweep.ts) delete the oldest
-- rows a small batch at a time; a deleted log file's blob goes once no record names its digest.
CREATE INDEX log_files_uploaded ON log_files(uploaded_at);
CREATE INDEX log_files_blob ON log_files(blob_sha256);
CREATE INDEX telemetry_rows_received ON telemetry_rows(received_at);
CREATE INDEX builds_archive_sha256 ON builds(archive_sha256) WHERE archive_sha256 IS NOT NULL;
`,
  },
  {
    version: 12,
    name: 'telemetry facts a session diagnosis reads',
    sql: `
-- The session list's diagnosis (analytics/session-diagnosis.ts) asks, per listed session, whether
-- an event was reported (sdpAnswer, connected) and for its oldest and newest statistics rows: each
-- is one probe of these indexes, however many rows the session has.
CREATE INDEX telemetry_rows_session_event ON telemetry_rows(session_id, event) WHERE log_type IS NOT NULL;
CREATE INDEX telemetry_rows_session_statistics ON telemetry_rows(session_id, ts, id) WHERE log_type IS NULL;
`,
  },
  {
    version: 13,
    name: 'a weekly rollup of session dimensions',
    sql: `
-- Sessions created per week of 7 UTC days (week = floor(day / 7), day as in session_dimension_days)
-- by dimension value, kept current with the day rollup in the transaction that inserts the session:
-- a breakdown over 92 days reads 13 weeks and at most 12 days beside them (and the partial edge
-- days from the sessions) instead of 92 days, a third of the rows for 5,000 cities. Keyed value
-- first and week last, so a breakdown groups it straight off the key with no sort (and a country
-- filter is a prefix of it); it reads every stored week of the project's dimension
-- (retention.sessionDays). Filled from the day rollup for the sessions already counted.
CREATE TABLE session_dimension_weeks (
  project_id TEXT NOT NULL,
  dimension TEXT NOT NULL CHECK (dimension IN ('country', 'city', 'browser', 'os', 'device')),
  country_code TEXT NOT NULL DEFAULT '',
  value TEXT NOT NULL,
  week INTEGER NOT NULL,
  country TEXT NOT NULL DEFAULT '',
  sessions INTEGER NOT NULL,
  PRIMARY KEY (project_id, dimension, country_code, value, week)
) WITHOUT ROWID;
-- The retention sweep deletes the weeks that ended by its cutoff day through this.
CREATE INDEX session_dimension_weeks_week ON session_dimension_weeks(week);
INSERT INTO session_dimension_weeks (project_id, dimension, country_code, value, week, country, sessions)
  SELECT project_id, dimension, country_code, value, day / 7, max(country), SUM(sessions) FROM session_dimension_days GROUP BY 1, 2, 3, 4, 5;
`,
  },
  {
    version: 14,
    name: 'sessions by viewer token digest',
    sql: `
-- Telemetry posted with another session's live viewer token is told apart from a bad token (403,
-- not 401): the token's digest is looked up through this index, never by a scan.
CREATE INDEX sessions_viewer_token ON sessions(viewer_token_hash) WHERE viewer_token_hash IS NOT NULL;
`,
  },
  {
    version: 15,
    name: 'telemetry bytes per session',
    sql: `
-- Telemetry is anonymous input: each session gets a byte budget (issue 22), read from the session
-- row like its row count, never by summing its rows. Counted as the stored JSON's UTF-8 bytes.
ALTER TABLE sessions ADD COLUMN telemetry_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET telemetry_bytes = (SELECT COALESCE(SUM(LENGTH(CAST(t.row AS BLOB))), 0) FROM telemetry_rows t WHERE t.session_id = sessions.id);
`,
  },
  {
    version: 16,
    name: 'the mail outbox',
    sql: `
-- Mail to people (invitations, password resets, new API keys) is written here before it is sent, so
-- a restart or an SMTP outage loses none (mail/mail-delivery.ts). The body may hold a single-use
-- link or a key: it is wiped (NULL) once the mail is delivered or given up, and the row stays as
-- the delivery's record.
CREATE TABLE mail_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  to_address TEXT NOT NULL,
  subject TEXT NOT NULL,
  body TEXT,
  created_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  sent_at INTEGER,
  failed_at INTEGER,
  last_error TEXT
);
CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;
`,
  },
  {
    version: 17,
    name: 'passwords, single-use links and dashboard sign-ins',
    sql: `
-- People sign in to the dashboard with their e-mail address and a password (people/): only an
-- scrypt hash of it is stored, NULL until the person has set one through their invitation.
ALTER TABLE users ADD COLUMN password_hash TEXT;
-- Single-use links mailed to a person (an invitation to set a password, a password reset): only
-- the SHA-256 digest of the link's token is stored; a link works once, before it expires.
CREATE TABLE user_links (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  purpose TEXT NOT NULL CHECK (purpose IN ('invitation', 'passwordReset')),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);
CREATE INDEX user_links_user ON user_links(user_id);
-- Dashboard sign-ins: the SHA-256 digest of the cookie's token, ended by sign-out, by idleness
-- (last_seen_at) or at expires_at, whichever comes first.
CREATE TABLE dashboard_sessions (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX dashboard_sessions_user ON dashboard_sessions(user_id);
`,
  },
  {
    version: 18,
    name: 'the stages each build entered, and why a webhook delivery failed',
    sql: `
-- Every status a build entered, with its time (repositories/builds.ts writes one row with each
-- status change, in the same transaction): the dashboard's stage timeline. A build can enter a
-- status twice (a distribution queued again), hence its own key.
CREATE TABLE build_stages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  upload_id TEXT NOT NULL REFERENCES builds(upload_id) ON DELETE CASCADE,
  status TEXT NOT NULL,
  entered_at INTEGER NOT NULL
);
CREATE INDEX build_stages_upload ON build_stages(upload_id, id);
-- Builds from before: their first status when they were made, and the one they are in since their last change.
INSERT INTO build_stages (upload_id, status, entered_at) SELECT upload_id, 'pending', created_at FROM builds ORDER BY created_at;
INSERT INTO build_stages (upload_id, status, entered_at) SELECT upload_id, status, updated_at FROM builds WHERE status <> 'pending' ORDER BY updated_at;
-- Why a delivery failed, as a kind the dashboard words from the catalogue (errors.ts
-- WEBHOOK_DELIVERY_FAILURES): \`error\` is the detail, which can name internal addresses, for operators only.
ALTER TABLE webhook_deliveries ADD COLUMN failure TEXT CHECK (failure IN ('refused', 'unreachable', 'timedOut', 'rejected'));
`,
  },
  {
    version: 19,
    name: 'operator dashboard sign-ins',
    sql: `
-- An operator's dashboard sign-in: a person's sign-in that was shown the admin token, until this
-- time (http/dashboard/dashboard-fleet-routes.ts). NULL: a customer's sign-in, which never sees the fleet.
ALTER TABLE dashboard_sessions ADD COLUMN operator_until INTEGER;
`,
  },
  {
    version: 20,
    name: "a session's diagnosis stored, and the session list's filters",
    sql: `
-- The dashboard lists a project's sessions by status, diagnosis, country and browser over millions
-- of sessions, so the diagnosis is a column: written with each batch of telemetry, in its
-- transaction (repositories/telemetry.ts, by the rules of analytics/session-diagnosis.ts), and kept
-- when retention later deletes the rows it was read from. Sessions before this migration get it here,
-- by the same rules in SQL (a row whose counters are not plain numbers may read otherwise: the
-- player sends numbers or numeric strings); telemetryExpired is a session whose rows were already gone.
-- video_shown_at: when the relay saw video reach the viewer (the agent's videoShown event: the
-- viewer's receiver reports acknowledged a whole keyframe), a second witness for the diagnosis.
ALTER TABLE sessions ADD COLUMN video_shown_at INTEGER;
ALTER TABLE sessions ADD COLUMN diagnosis TEXT NOT NULL DEFAULT 'neverReported'
  CHECK (diagnosis IN ('neverReported', 'telemetryExpired', 'mediaNeverConnected', 'connectedWithoutVideo', 'videoDelivered'));
UPDATE sessions SET diagnosis = 'telemetryExpired'
  WHERE telemetry_count > 0 AND NOT EXISTS (SELECT 1 FROM telemetry_rows t WHERE t.session_id = sessions.id);
UPDATE sessions SET diagnosis = CASE
    WHEN f.newest_frames > 0 AND (f.newest_fps > 0 OR f.newest_frames > f.oldest_frames) THEN 'videoDelivered'
    WHEN f.sdp_answer AND NOT f.connected THEN 'mediaNeverConnected'
    ELSE 'connectedWithoutVideo'
  END
  FROM (
    SELECT s.id AS session_id,
      COALESCE((SELECT CAST(json_extract(t.row, '$.framesDecoded') AS REAL) FROM telemetry_rows t WHERE t.session_id = s.id AND t.log_type IS NULL ORDER BY t.ts DESC, t.id DESC LIMIT 1), 0) AS newest_frames,
      COALESCE((SELECT CAST(json_extract(t.row, '$.FPS') AS REAL) FROM telemetry_rows t WHERE t.session_id = s.id AND t.log_type IS NULL ORDER BY t.ts DESC, t.id DESC LIMIT 1), 0) AS newest_fps,
      COALESCE((SELECT CAST(json_extract(t.row, '$.framesDecoded') AS REAL) FROM telemetry_rows t WHERE t.session_id = s.id AND t.log_type IS NULL ORDER BY t.ts, t.id LIMIT 1), 0) AS oldest_frames,
      EXISTS (SELECT 1 FROM telemetry_rows t WHERE t.session_id = s.id AND t.event = 'sdpAnswer' AND t.log_type IS NOT NULL) AS sdp_answer,
      EXISTS (SELECT 1 FROM telemetry_rows t WHERE t.session_id = s.id AND t.event = 'connected' AND t.log_type IS NOT NULL) AS connected
    FROM sessions s WHERE EXISTS (SELECT 1 FROM telemetry_rows t WHERE t.session_id = s.id)
  ) AS f
  WHERE sessions.id = f.session_id;
-- One index per filter, each walked newest first within the project's window, the id breaking ties
-- as the list orders them (so no sort step, and a count reads the index alone); an unfiltered list
-- walks sessions_project_created, which gains the id for the same reason. Read by
-- repositories/session-history.ts.
DROP INDEX sessions_project_created;
CREATE INDEX sessions_project_created ON sessions(project_id, created_at DESC, id DESC);
-- The id here too, or a project's live sessions (oldest first, then by id) would be read along the
-- index above, through every session the project ever had, rather than this partial one.
DROP INDEX sessions_project_not_terminated;
CREATE INDEX sessions_project_not_terminated ON sessions(project_id, created_at, id) WHERE status <> 'Terminated';
CREATE INDEX sessions_project_status ON sessions(project_id, status, created_at DESC, id DESC);
CREATE INDEX sessions_project_diagnosis ON sessions(project_id, diagnosis, created_at DESC, id DESC);
CREATE INDEX sessions_project_country ON sessions(project_id, country, created_at DESC, id DESC);
CREATE INDEX sessions_project_browser ON sessions(project_id, browser, created_at DESC, id DESC);
`,
  },
  {
    version: 21,
    name: 'sessions and start-up times per day',
    sql: `
-- The audience page's daily charts over up to 92 days, from rollups kept current in the
-- transactions that create a session and move it to Running (repositories/session-daily.ts), never
-- from the sessions themselves: sessions per UTC day of creation, and the start-ups (Starting →
-- Running) of each day's sessions counted in buckets 5 % wide (bucket b holds [1.05^b, 1.05^(b+1))
-- ms), from which the day's median is read. Older sessions are counted here, their start-ups timed
-- by their snapshots as the session list times them. The retention sweep deletes days before its cutoff.
CREATE TABLE session_days (
  project_id TEXT NOT NULL,
  day INTEGER NOT NULL,
  sessions INTEGER NOT NULL,
  PRIMARY KEY (project_id, day)
) WITHOUT ROWID;
CREATE TABLE session_startup_days (
  project_id TEXT NOT NULL,
  day INTEGER NOT NULL,
  bucket INTEGER NOT NULL,
  sessions INTEGER NOT NULL,
  PRIMARY KEY (project_id, day, bucket)
) WITHOUT ROWID;
CREATE INDEX session_days_day ON session_days(day);
CREATE INDEX session_startup_days_day ON session_startup_days(day);
INSERT INTO session_days (project_id, day, sessions)
  SELECT project_id, created_at / 86400000, COUNT(*) FROM sessions GROUP BY 1, 2;
INSERT INTO session_startup_days (project_id, day, bucket, sessions)
  SELECT project_id, day, bucket, COUNT(*) FROM (
    SELECT s.project_id, s.created_at / 86400000 AS day, CAST(floor(ln(max(1, t.running - t.starting)) / ln(1.05)) AS INTEGER) AS bucket
    FROM (
      SELECT session_id,
        MIN(CASE WHEN json_extract(data, '$.status') = 'Starting' THEN received_at END) AS starting,
        MIN(CASE WHEN json_extract(data, '$.status') = 'Running' THEN received_at END) AS running
      FROM session_snapshots GROUP BY session_id
    ) AS t JOIN sessions s ON s.id = t.session_id
    WHERE t.starting IS NOT NULL AND t.running IS NOT NULL
  ) GROUP BY 1, 2, 3;
`,
  },
  {
    version: 22,
    name: 'the moment each session app identified itself',
    sql: `
-- The start-up of the session list split in two: launch (Starting → the app identified itself on
-- the agent's signalling) and negotiation (→ Running, the viewer's WebRTC up). Set once, by the
-- first identification; older sessions have none, and the list says null for both.
ALTER TABLE sessions ADD COLUMN identified_at INTEGER;
`,
  },
  {
    version: 23,
    name: 'warm pools: instances launched before their viewer, and builds that stopped being warmed',
    sql: `
-- A warm instance is a session row launched before any viewer (sessions/warm-pool.ts): it holds a
-- slot like any placed session, but it is no customer's session until a viewer claims it. pooled = 1
-- while unclaimed (and for ever when it ends so); a claim sets 0 and claimed_at, and from then on
-- it is an ordinary session that was served warm. The lists of a project's sessions read only
-- pooled = 0, so their indexes become partial on it: a count still reads an index alone.
ALTER TABLE sessions ADD COLUMN pooled INTEGER NOT NULL DEFAULT 0 CHECK (pooled IN (0, 1));
ALTER TABLE sessions ADD COLUMN claimed_at INTEGER;
ALTER TABLE sessions ADD COLUMN upload_id TEXT;
DROP INDEX sessions_project_created;
CREATE INDEX sessions_project_created ON sessions(project_id, created_at DESC, id DESC) WHERE pooled = 0;
DROP INDEX sessions_project_status;
CREATE INDEX sessions_project_status ON sessions(project_id, status, created_at DESC, id DESC) WHERE pooled = 0;
DROP INDEX sessions_project_diagnosis;
CREATE INDEX sessions_project_diagnosis ON sessions(project_id, diagnosis, created_at DESC, id DESC) WHERE pooled = 0;
DROP INDEX sessions_project_country;
CREATE INDEX sessions_project_country ON sessions(project_id, country, created_at DESC, id DESC) WHERE pooled = 0;
DROP INDEX sessions_project_browser;
CREATE INDEX sessions_project_browser ON sessions(project_id, browser, created_at DESC, id DESC) WHERE pooled = 0;
-- A build whose warm instances failed WARM_FAILURES_TO_STOP times in a row is no longer warmed
-- until the project's live build or its pool settings change; kept across restarts, so a restart
-- is not a fresh crash loop.
CREATE TABLE warm_pool_failures (
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  upload_id TEXT NOT NULL,
  failures INTEGER NOT NULL CHECK (failures >= 0),
  last_failure_at INTEGER NOT NULL,
  last_reason TEXT NOT NULL,
  stopped_at INTEGER,
  PRIMARY KEY (project_id, upload_id)
) WITHOUT ROWID;
`,
  },
];
