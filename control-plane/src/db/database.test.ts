import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SchemaTooNewError, migrate, openDatabase, schemaStatus, type Db } from './database';
import { MIGRATIONS, type Migration } from './migrations';
import { SqliteBuildsRepository } from '../repositories/builds';
import { SqliteTelemetryDiagnosisRepository } from '../repositories/telemetry-diagnosis';
import { DIAGNOSES, diagnose } from '../analytics/session-diagnosis';
import { startupBucket } from '../repositories/session-daily';

const ALL_TABLES = [
  'api_keys',
  'build_copies',
  'build_stages',
  'builds',
  'dashboard_sessions',
  'events',
  'log_files',
  'mail_outbox',
  'project_members',
  'projects',
  'schema_migrations',
  'session_days',
  'session_dimension_days',
  'session_dimension_weeks',
  'session_snapshots',
  'session_startup_days',
  'sessions',
  'telemetry_rows',
  'user_links',
  'users',
  'warm_pool_failures',
  'webhook_deliveries',
  'worker_commands',
  'workers',
];

let dir: string;
const open: Db[] = [];

function track(db: Db): Db {
  open.push(db);
  return db;
}

function tables(db: Db): string[] {
  return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map(
    (r) => r.name,
  );
}

function versions(db: Db): number[] {
  return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-db-'));
});

afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('openDatabase', () => {
  it('creates every table on an empty database, creating the parent folder', () => {
    const db = track(openDatabase(join(dir, 'nested', 'folder', 'cp.sqlite')));
    expect(tables(db)).toEqual(ALL_TABLES);
    const latest = Math.max(...MIGRATIONS.map((m) => m.version));
    expect(Math.max(...versions(db))).toBe(latest);
    expect(versions(db)).toEqual(MIGRATIONS.map((m) => m.version).sort((a, b) => a - b));
  });

  it('creates a new database file 0600 (and its -wal and -shm alike) in a folder 0700, whatever the umask; an existing file keeps its mode', () => {
    const umask = process.umask(0);
    try {
      const path = join(dir, 'data', 'cp.sqlite');
      const db = track(openDatabase(path));
      db.prepare('INSERT INTO users (id, email, created_at) VALUES (?, ?, ?)').run('usr_1', 'a@example.com', 0);
      const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
      expect(mode(join(dir, 'data'))).toBe('700');
      expect([mode(path), mode(`${path}-wal`), mode(`${path}-shm`)]).toEqual(['600', '600', '600']);
      db.close();
      chmodSync(path, 0o640); // an operator's choice
      track(openDatabase(path));
      expect(mode(path)).toBe('640');
    } finally {
      process.umask(umask);
    }
  });

  it('applies nothing when re-opened', () => {
    const path = join(dir, 'cp.sqlite');
    const first = openDatabase(path);
    const appliedAt = first.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all();
    first.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    first.close();

    const again = track(openDatabase(path));
    expect(again.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all()).toEqual(appliedAt);
    expect(migrate(again, MIGRATIONS)).toEqual([]);
    expect(again.prepare('SELECT COUNT(*) AS n FROM users').get()).toEqual({ n: 1 });
  });

  it('reports the schema version applied and the one this build brings, for readiness', () => {
    const latest = Math.max(...MIGRATIONS.map((m) => m.version));
    expect(schemaStatus(track(openDatabase(join(dir, 'now.sqlite'))))).toEqual({ current: latest, latest });
    // A database left by a build one migration older, read by this one before migrating.
    const older = track(openDatabase(join(dir, 'older.sqlite'), MIGRATIONS.filter((m) => m.version < latest)));
    expect(schemaStatus(older)).toEqual({ current: latest - 1, latest });
    older.close();
    expect(() => schemaStatus(older)).toThrow();
  });

  it('turns on WAL mode and foreign keys', () => {
    const db = track(openDatabase(join(dir, 'cp.sqlite')));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(() => db.prepare("INSERT INTO api_keys (user_id, key_hash, created_at) VALUES ('usr_missing', 'h', 1)").run()).toThrow(
      /FOREIGN KEY/,
    );
  });

  it('refuses a database whose schema is newer than this build, with SchemaTooNewError', () => {
    const path = join(dir, 'cp.sqlite');
    openDatabase(path).close();
    const raw = new Database(path);
    raw.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 1)").run();
    raw.close();

    expect(() => openDatabase(path)).toThrow(SchemaTooNewError);
    expect(() => openDatabase(path)).toThrow(/999/);
    // The refused database is left untouched and can still be opened by a build that knows v999.
    const future = track(openDatabase(path, [...MIGRATIONS, { version: 999, name: 'from the future', sql: 'SELECT 1' }]));
    expect(versions(future)).toContain(999);
  });

  it('applies migrations in version order, whatever order they are listed in, and returns those applied', () => {
    const db = track(new Database(join(dir, 'custom.sqlite')));
    const list: Migration[] = [
      { version: 2, name: 'second', sql: 'ALTER TABLE t ADD COLUMN b TEXT' },
      { version: 1, name: 'first', sql: 'CREATE TABLE t (a INTEGER)' },
    ];
    expect(migrate(db, list)).toEqual([1, 2]);
    expect(versions(db)).toEqual([1, 2]);
    expect(migrate(db, [...list, { version: 3, name: 'third', sql: 'CREATE TABLE u (x INTEGER)' }])).toEqual([3]);
    expect(tables(db)).toEqual(['schema_migrations', 't', 'u']);
  });

  it('rolls back a failing migration completely, keeping the ones before it', () => {
    const path = join(dir, 'custom.sqlite');
    const list: Migration[] = [
      { version: 1, name: 'ok', sql: 'CREATE TABLE good (a INTEGER)' },
      { version: 2, name: 'breaks half way', sql: 'CREATE TABLE half (a INTEGER); INSERT INTO missing_table VALUES (1);' },
      { version: 3, name: 'never reached', sql: 'CREATE TABLE later (a INTEGER)' },
    ];
    expect(() => openDatabase(path, list)).toThrow(/missing_table/);

    const db = track(new Database(path));
    expect(tables(db)).toEqual(['good', 'schema_migrations']);
    expect(versions(db)).toEqual([1]);

    // Fixed migration 2 then applies cleanly on the next start.
    db.close();
    const fixed = track(openDatabase(path, [list[0]!, { version: 2, name: 'fixed', sql: 'CREATE TABLE half (a INTEGER)' }, list[2]!]));
    expect(tables(fixed)).toEqual(['good', 'half', 'later', 'schema_migrations']);
    expect(versions(fixed)).toEqual([1, 2, 3]);
  });

  it('opens an in-memory database', () => {
    const db = track(openDatabase(':memory:'));
    expect(tables(db)).toEqual(ALL_TABLES);
  });
});

describe('schema constraints', () => {
  it('allows one live API key per user', () => {
    const db = track(openDatabase(join(dir, 'cp.sqlite')));
    db.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    const insertKey = db.prepare("INSERT INTO api_keys (user_id, key_hash, created_at, revoked_at) VALUES ('usr_1', ?, 1, ?)");
    insertKey.run('h1', 5);
    insertKey.run('h2', null);
    expect(() => insertKey.run('h3', null)).toThrow(/UNIQUE/);
  });

  it('treats user emails case-insensitively', () => {
    const db = track(openDatabase(join(dir, 'cp.sqlite')));
    db.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    expect(() => db.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_2', 'A@Example.com', 1)").run()).toThrow(/UNIQUE/);
  });
});

describe('migration 5: the CHECK on builds.status', () => {
  const before5 = MIGRATIONS.filter((m) => m.version < 5);
  const rows = (db: Db) => db.prepare('SELECT * FROM builds ORDER BY upload_id').all();
  /** A version-4 database file holding two builds, the second in `status`; returns its path and rows. */
  const atVersion4 = (status: string) => {
    const path = join(dir, 'cp.sqlite');
    const db = new Database(path);
    migrate(db, before5);
    db.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    db.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_1', 'usr_1', 'p', 'europe', 1)").run();
    const insert = db.prepare('INSERT INTO builds (upload_id, project_id, file_url, status, objection, auto_release, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    insert.run('upl_a', 'prj_1', 'https://example.com/a.zip', 'Reject', 'bad archive', 1, 10, 20);
    insert.run('upl_b', 'prj_1', null, status, null, 0, 30, 40);
    const kept = rows(db);
    db.close();
    return { path, kept };
  };

  it('rebuilds the table keeping every row, the index and the foreign key', () => {
    const { path, kept } = atVersion4('pending');

    const db = track(openDatabase(path));
    expect(versions(db)).toContain(5);
    // Migration 6 then adds the pipeline's columns, empty for every older build.
    expect(rows(db)).toEqual(kept.map((r) => ({ ...(r as Record<string, unknown>), manifest: null, archive_sha256: null, archive_bytes: null })));
    expect(tables(db)).toEqual(ALL_TABLES);
    expect(db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'builds_project_created'").get()).toEqual({
      sql: 'CREATE INDEX builds_project_created ON builds(project_id, created_at DESC)',
    });
    expect(() => db.prepare("UPDATE builds SET status = 'Uploaded' WHERE upload_id = 'upl_b'").run()).toThrow(/CHECK constraint failed/);
    // Still a child of projects: deleting the project deletes its builds.
    db.prepare("DELETE FROM projects WHERE id = 'prj_1'").run();
    expect(rows(db)).toEqual([]);
    expect(db.pragma('foreign_key_check')).toEqual([]);
  });

  it('rolls back, leaving version 4 and its rows, when a stored status is not a build status', () => {
    const { path, kept } = atVersion4('Uploaded');

    expect(() => openDatabase(path)).toThrow(/CHECK constraint failed/);
    const db = track(new Database(path));
    expect(Math.max(...versions(db))).toBe(4);
    expect(rows(db)).toEqual(kept);
    expect(tables(db)).not.toContain('builds_with_status_check');
  });
});

describe('migration 15: telemetry bytes per session', () => {
  it("backfills each session's stored telemetry bytes (UTF-8 bytes of the row JSON, not characters)", () => {
    const path = join(dir, 'cp.sqlite');
    const raw = new Database(path);
    migrate(raw, MIGRATIONS.filter((m) => m.version < 15));
    raw.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    raw.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_1', 'usr_1', 'p', 'europe', 1)").run();
    const session = raw.prepare("INSERT INTO sessions (id, project_id, region, status, created_at, updated_at) VALUES (?, 'prj_1', 'europe', 'Terminated', 1, 2)");
    session.run('session_1_1');
    session.run('session_2_2');
    const row = raw.prepare("INSERT INTO telemetry_rows (session_id, project_id, timestamp, ts, received_at, row) VALUES ('session_1_1', 'prj_1', '2026-01-01T10:00:00Z', 1, 7, ?)");
    row.run('{"a":"b"}');
    row.run('{"note":"é€"}');
    raw.close();

    const db = track(openDatabase(path));
    expect(db.prepare('SELECT id, telemetry_bytes AS bytes FROM sessions ORDER BY id').all()).toEqual([
      { id: 'session_1_1', bytes: Buffer.byteLength('{"a":"b"}') + Buffer.byteLength('{"note":"é€"}') },
      { id: 'session_2_2', bytes: 0 },
    ]);
  });
});

describe('migration 18: build stages and webhook delivery failures', () => {
  it('gives each older build its first stage and the one it is in; each repository move adds a stage with the status change', () => {
    const path = join(dir, 'cp.sqlite');
    const raw = new Database(path);
    migrate(raw, MIGRATIONS.filter((m) => m.version < 18));
    raw.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    raw.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_1', 'usr_1', 'p', 'europe', 1)").run();
    const insert = raw.prepare('INSERT INTO builds (upload_id, project_id, file_url, status, objection, auto_release, created_at, updated_at) VALUES (?, ?, NULL, ?, NULL, 0, ?, ?)');
    insert.run('upl_a', 'prj_1', 'pending', 10, 10);
    insert.run('upl_b', 'prj_1', 'Ready', 30, 90);
    raw.close();

    const db = track(openDatabase(path));
    const builds = new SqliteBuildsRepository(db);
    expect(Object.fromEntries(builds.stagesOf(['upl_a', 'upl_b']))).toEqual({
      upl_a: [{ status: 'pending', enteredAt: 10 }],
      upl_b: [
        { status: 'pending', enteredAt: 30 },
        { status: 'Ready', enteredAt: 90 },
      ],
    });
    expect(builds.moveStatus('upl_a', 'pending', 'Downloading Files', undefined, 100)).toBe(true);
    // A move from a status the build is no longer in changes nothing and adds no stage.
    expect(builds.moveStatus('upl_a', 'pending', 'Downloading Files', undefined, 200)).toBe(false);
    expect(builds.stagesOf(['upl_a']).get('upl_a')).toEqual([
      { status: 'pending', enteredAt: 10 },
      { status: 'Downloading Files', enteredAt: 100 },
    ]);
    expect(() => db.prepare("INSERT INTO webhook_deliveries (project_id, event, url, failure, duration_ms, attempted_at) VALUES ('prj_1', 'webhook.test', 'https://x', 'exploded', 1, 1)").run()).toThrow(/CHECK constraint failed/);
    // Deleting a build deletes its stages.
    db.prepare("DELETE FROM projects WHERE id = 'prj_1'").run();
    expect(db.prepare('SELECT COUNT(*) AS n FROM build_stages').get()).toEqual({ n: 0 });
  });
});

describe('migration 10: client dimensions, telemetry order and count', () => {
  it('backfills each session\'s telemetry count and each row\'s time from its ISO 8601 timestamp', () => {
    const path = join(dir, 'cp.sqlite');
    const raw = new Database(path);
    migrate(raw, MIGRATIONS.filter((m) => m.version < 10));
    raw.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    raw.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_1', 'usr_1', 'p', 'europe', 1)").run();
    const session = raw.prepare("INSERT INTO sessions (id, project_id, region, status, created_at, updated_at) VALUES (?, 'prj_1', 'europe', 'Terminated', 1, 2)");
    session.run('session_1_1');
    session.run('session_2_2');
    const row = raw.prepare("INSERT INTO telemetry_rows (session_id, project_id, timestamp, received_at, row) VALUES ('session_1_1', 'prj_1', ?, 7, '{}')");
    row.run('2026-01-01T10:00:00Z');
    row.run('2026-01-01T12:00:00.250+02:00');
    raw.close();

    const db = track(openDatabase(path));
    expect(db.prepare('SELECT id, telemetry_count AS n FROM sessions ORDER BY id').all()).toEqual([
      { id: 'session_1_1', n: 2 },
      { id: 'session_2_2', n: 0 },
    ]);
    expect(db.prepare('SELECT ts FROM telemetry_rows ORDER BY id').all()).toEqual([
      { ts: Date.parse('2026-01-01T10:00:00Z') },
      { ts: Date.parse('2026-01-01T10:00:00.250Z') },
    ]);
    // Migration 11's index by age (retention.telemetryDays) and 12's partial indexes (the session list's diagnosis) follow.
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'telemetry_rows' ORDER BY name").all()).toEqual([
      { name: 'telemetry_rows_received' },
      { name: 'telemetry_rows_session_event' },
      { name: 'telemetry_rows_session_statistics' },
      { name: 'telemetry_rows_session_ts' },
    ]);
  });
});

describe('migration 13: the weekly rollup of session dimensions', () => {
  it('fills the weeks from the day rollup already counted', () => {
    const path = join(dir, 'cp.sqlite');
    const raw = new Database(path);
    migrate(raw, MIGRATIONS.filter((m) => m.version < 13));
    const day = raw.prepare("INSERT INTO session_dimension_days (project_id, dimension, day, country_code, value, country, sessions) VALUES ('prj_1', ?, ?, ?, ?, ?, ?)");
    day.run('browser', 700, '', 'Chrome', '', 2); // week 100
    day.run('browser', 706, '', 'Chrome', '', 3); // week 100
    day.run('browser', 707, '', 'Chrome', '', 4); // week 101
    day.run('city', 701, 'DE', 'Berlin', 'Germany', 5);
    day.run('city', 702, 'CA', 'Berlin', 'Canada', 1);
    raw.close();

    const db = track(openDatabase(path));
    expect(db.prepare('SELECT dimension, country_code, value, week, country, sessions FROM session_dimension_weeks ORDER BY dimension, country_code, week').all()).toEqual([
      { dimension: 'browser', country_code: '', value: 'Chrome', week: 100, country: '', sessions: 5 },
      { dimension: 'browser', country_code: '', value: 'Chrome', week: 101, country: '', sessions: 4 },
      { dimension: 'city', country_code: 'CA', value: 'Berlin', week: 100, country: 'Canada', sessions: 1 },
      { dimension: 'city', country_code: 'DE', value: 'Berlin', week: 100, country: 'Germany', sessions: 5 },
    ]);
  });
});

describe('migration 20: the stored diagnosis and the session list filters', () => {
  it("gives each older session the diagnosis its rows read by the rules, the same as diagnose(); telemetryExpired where they were already gone", () => {
    const path = join(dir, 'cp.sqlite');
    const raw = new Database(path);
    migrate(raw, MIGRATIONS.filter((m) => m.version < 20));
    raw.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    raw.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_1', 'usr_1', 'p', 'europe', 1)").run();
    const session = raw.prepare("INSERT INTO sessions (id, project_id, region, status, created_at, updated_at, telemetry_count) VALUES (?, 'prj_1', 'europe', 'Terminated', 1, 2, ?)");
    const row = raw.prepare("INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, ts, received_at, row) VALUES (?, 'prj_1', ?, ?, 't', ?, 1, ?)");
    const stats = (id: string, ts: number, framesDecoded: number | string, fps: number | string) => row.run(id, null, null, ts, JSON.stringify({ framesDecoded, FPS: fps }));
    const event = (id: string, name: string) => row.run(id, 'Webrtc', name, 1, JSON.stringify({ event: name }));
    const expected: Record<string, string> = {
      s_none: 'neverReported',
      s_expired: 'telemetryExpired',
      s_playing: 'videoDelivered',
      s_one_row: 'videoDelivered',
      s_rising_no_fps: 'videoDelivered',
      s_frozen: 'connectedWithoutVideo',
      s_no_frames: 'connectedWithoutVideo',
      s_no_media: 'mediaNeverConnected',
    };
    for (const id of Object.keys(expected)) session.run(id, id === 's_none' ? 0 : 3);
    event('s_playing', 'sdpAnswer');
    event('s_playing', 'connected');
    stats('s_playing', 10, '0', '0'); // the player's numbers are strings
    stats('s_playing', 20, '120', '30');
    stats('s_one_row', 10, 50, 30);
    stats('s_rising_no_fps', 10, 10, 0);
    stats('s_rising_no_fps', 20, 90, 0);
    event('s_frozen', 'sdpAnswer');
    event('s_frozen', 'connected');
    stats('s_frozen', 10, 100, 0);
    stats('s_frozen', 20, 100, 0);
    event('s_no_frames', 'connected');
    stats('s_no_frames', 10, 0, 0);
    event('s_no_media', 'sdpAnswer');
    raw.close();

    const db = track(openDatabase(path));
    const stored = Object.fromEntries((db.prepare('SELECT id, diagnosis FROM sessions').all() as { id: string; diagnosis: string }[]).map((r) => [r.id, r.diagnosis]));
    expect(stored).toEqual(expected);
    // The migration's SQL and the rules in TypeScript agree on every session whose rows are there.
    const facts = new SqliteTelemetryDiagnosisRepository(db);
    for (const id of Object.keys(expected).filter((i) => i !== 's_expired')) expect(diagnose(facts.diagnosisFacts(id)), id).toBe(stored[id]);
  });

  it('holds the column to the diagnoses the rules name', () => {
    const db = track(openDatabase(join(dir, 'cp.sqlite')));
    const sql = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'sessions'").get() as { sql: string }).sql;
    const listed = /diagnosis IN \(([^)]*)\)/.exec(sql)?.[1]?.split(',').map((v) => v.trim().replace(/'/g, ''));
    expect(listed).toEqual([...DIAGNOSES]);
  });
});

describe('migration 21: sessions and start-ups per day', () => {
  it("counts older sessions by their creation day and their start-ups (snapshots' Starting → Running) in the buckets startupBucket() computes", () => {
    const path = join(dir, 'cp.sqlite');
    const raw = new Database(path);
    migrate(raw, MIGRATIONS.filter((m) => m.version < 21));
    raw.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', 1)").run();
    raw.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_1', 'usr_1', 'p', 'europe', 1)").run();
    const session = raw.prepare("INSERT INTO sessions (id, project_id, region, status, created_at, updated_at) VALUES (?, 'prj_1', 'europe', 'Terminated', ?, ?)");
    const snapshot = raw.prepare('INSERT INTO session_snapshots (session_id, received_at, data) VALUES (?, ?, ?)');
    const day = 20_000 * 86_400_000;
    const startups = { s_1: 7_300, s_2: 7_350, s_3: 41_000, s_4: 1, s_5: undefined } as Record<string, number | undefined>;
    Object.entries(startups).forEach(([id, startup], i) => {
      const at = day + i * 1_000 + (id === 's_3' ? 86_400_000 : 0);
      session.run(id, at, at + 100_000);
      snapshot.run(id, at, JSON.stringify({ status: 'Enqueued' }));
      if (startup === undefined) return; // never placed
      snapshot.run(id, at + 500, JSON.stringify({ status: 'Starting' }));
      snapshot.run(id, at + 500 + startup, JSON.stringify({ status: 'Running' }));
      snapshot.run(id, at + 90_000, JSON.stringify({ status: 'Terminated' }));
    });
    raw.close();

    const db = track(openDatabase(path));
    expect(db.prepare('SELECT day, sessions FROM session_days ORDER BY day').all()).toEqual([
      { day: 20_000, sessions: 4 },
      { day: 20_001, sessions: 1 },
    ]);
    const expected = new Map<string, number>();
    for (const [id, startup] of Object.entries(startups)) {
      if (startup === undefined) continue;
      const key = `${id === 's_3' ? 20_001 : 20_000}:${startupBucket(startup)}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    const stored = db.prepare('SELECT day, bucket, sessions FROM session_startup_days ORDER BY day, bucket').all() as { day: number; bucket: number; sessions: number }[];
    expect(new Map(stored.map((r) => [`${r.day}:${r.bucket}`, r.sessions]))).toEqual(expected);
  });
});
