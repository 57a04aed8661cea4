// Opens the control plane's SQLite file (WAL, foreign keys on) and applies pending migrations.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS, type Migration } from './migrations';

export type Db = Database.Database;

/** The schema on disk is newer than this build understands. */
export class SchemaTooNewError extends Error {
  override readonly name = 'SchemaTooNewError';
}

/** Opens (creating if needed) the database at path and migrates it to the latest version. */
export function openDatabase(path: string, migrations: readonly Migration[] = MIGRATIONS): Db {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // A new file is the service account's alone (0600, whatever the umask): it holds key digests,
    // viewers' addresses and settings. SQLite gives its -wal and -shm files the same mode.
    if (!existsSync(path)) {
      closeSync(openSync(path, 'a', 0o600));
      chmodSync(path, 0o600);
    }
  }
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    db.pragma('synchronous = NORMAL');
    migrate(db, migrations);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Applies every migration above the recorded version; returns the versions applied. */
export function migrate(db: Db, migrations: readonly Migration[]): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  const current = row.v ?? 0;
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  if (current > latest) {
    throw new SchemaTooNewError(`database schema version ${current} is newer than this build knows (${latest})`);
  }
  const applied: number[] = [];
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
    })();
    applied.push(m.version);
  }
  return applied;
}

/** The store's schema as a replica's readiness reports it: the version applied and the one this build brings. */
export interface SchemaStatus {
  current: number;
  latest: number;
}

/**
 * Reads the applied schema version (a query, so it also proves the database answers). Throws what
 * the driver throws when it cannot be read.
 */
export function schemaStatus(db: Db, migrations: readonly Migration[] = MIGRATIONS): SchemaStatus {
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return { current: row.v ?? 0, latest: migrations.reduce((max, m) => Math.max(max, m.version), 0) };
}
