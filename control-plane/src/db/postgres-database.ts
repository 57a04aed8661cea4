// Opens the control plane's PostgreSQL store (a pg.Pool whose integers read as JS numbers, as
// better-sqlite3's do) and applies pending migrations, once across replicas starting together.
import pg from 'pg';
import { SchemaTooNewError, type SchemaStatus } from './database';
import type { Migration } from './migrations';
import { POSTGRES_MIGRATIONS } from './postgres-migrations';

export type PostgresPool = pg.Pool;

/**
 * The key of the transaction-level advisory lock every migration step holds ('pxflmigr' in ASCII),
 * so that replicas starting at once apply each migration exactly once: one applies, the others wait
 * for its commit, then find the version recorded.
 */
export const MIGRATION_LOCK_KEY = 0x7078_666c_6d69_6772n;

export interface PostgresOptions {
  /** Connections the pool holds at most. Default 10. */
  poolSize?: number;
  /** The server's statement_timeout for every connection, in ms (0: none). Default: the server's setting. Migrations run without one. */
  statementTimeoutMs?: number;
  /** How long opening a connection may take, in ms. Default 10,000. */
  connectTimeoutMs?: number;
  /**
   * Called when an idle pooled connection fails (the server restarted, the network dropped it): the
   * pool has already discarded it, and the next query opens another. Without a handler such an
   * error would end the process. Default: ignored.
   */
  onIdleError?: (err: Error) => void;
}

const DEFAULT_POOL_SIZE = 10;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** Opening the store failed: the message names host, port and database, never the credentials. */
export class PostgresConnectError extends Error {
  override readonly name = 'PostgresConnectError';
  constructor(
    message: string,
    /** The driver's or the server's code (`ECONNREFUSED`, `28P01`), when it gave one. */
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** An int8 as a JS number; beyond ±(2^53-1) a number would be another integer, so it throws. */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`PostgreSQL bigint ${text} is beyond JavaScript's safe integers (±2^53-1)`);
  return value;
}

/** A numeric (SUM of bigints, AVG) as a JS number: fractions round as SQLite's REAL do; beyond ±(2^53-1), NaN or infinite, it throws. */
function parseNumeric(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || Math.abs(value) > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(`PostgreSQL numeric ${text} is not a JavaScript number within ±(2^53-1)`);
  }
  return value;
}

/** The pool's own parsers (pg's global table is left alone): int8 and numeric as numbers, the rest as pg reads them. */
const NUMBER_TYPES: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) => {
    if (format !== 'binary') {
      if (oid === pg.types.builtins.INT8) return parseInt8;
      if (oid === pg.types.builtins.NUMERIC) return parseNumeric;
    }
    return pg.types.getTypeParser(oid, format) as (value: string) => unknown;
  },
};

/** host:port, database: where a URL points, for messages. Throws, without echoing the URL (it may hold a password), if it is not one. */
function describeTarget(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new PostgresConnectError('database.url is not a valid postgres:// URL', undefined);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new PostgresConnectError(`database.url must start with postgres:// or postgresql://, not ${parsed.protocol}//`, undefined);
  }
  const host = parsed.searchParams.get('host') ?? (parsed.hostname === '' ? 'localhost' : parsed.hostname);
  const database = decodeURIComponent(parsed.pathname.slice(1)) || decodeURIComponent(parsed.username) || '(default)';
  return `${host}:${parsed.port === '' ? '5432' : parsed.port}, database ${database}`;
}

/** The error's own message with the password (if any) masked, and its code. */
function reasonOf(err: unknown, password: string): { reason: string; code: string | undefined } {
  const message = err instanceof Error ? err.message : String(err);
  const code = typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : undefined;
  return { reason: password === '' ? message : message.split(password).join('***'), code };
}

/**
 * Opens a pool on url (`postgres://user:password@host:port/database`, libpq's query parameters
 * such as `sslmode` allowed) and proves it answers with one connection, so that a wrong address or
 * password fails at start. Connections say application_name 'pixelfleet' (the URL may override it).
 * Throws PostgresConnectError naming host, port and database.
 */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<PostgresPool> {
  const target = describeTarget(url);
  const password = decodeURIComponent(new URL(url).password);
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new RangeError(`poolSize must be a whole number of connections ≥ 1, not ${poolSize}`);
  let pool: pg.Pool;
  try {
    pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      application_name: 'pixelfleet',
      connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
      types: NUMBER_TYPES,
    });
  } catch (err) {
    const { reason, code } = reasonOf(err, password);
    throw new PostgresConnectError(`cannot use PostgreSQL at ${target}: ${reason}`, code);
  }
  const onIdleError = options.onIdleError ?? (() => undefined);
  pool.on('error', (err) => onIdleError(err));
  try {
    const client = await pool.connect();
    client.release();
    return pool;
  } catch (err) {
    await pool.end().catch(() => undefined);
    const { reason, code } = reasonOf(err, password);
    throw new PostgresConnectError(`cannot connect to PostgreSQL at ${target}: ${reason}`, code);
  }
}

function latestVersion(migrations: readonly Migration[]): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

async function currentVersion(client: pg.ClientBase): Promise<number> {
  const result = await client.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
  return result.rows[0]?.v ?? 0;
}

/**
 * Runs step in a transaction holding the migration lock. A failed step rolls back; a connection
 * that cannot even roll back is reported broken, so that the pool discards it.
 */
async function underMigrationLock<T>(client: pg.PoolClient, step: () => Promise<T>): Promise<{ result: T } | { error: unknown; broken: boolean }> {
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    const result = await step();
    await client.query('COMMIT');
    return { result };
  } catch (error) {
    try {
      await client.query('ROLLBACK');
      return { error, broken: false };
    } catch {
      return { error, broken: true };
    }
  }
}

/**
 * Applies every migration above the recorded version, each in its own transaction under the
 * migration lock (the version is read again under it: another replica may have applied it while
 * this one waited); returns the versions this call applied. Throws SchemaTooNewError when the
 * database records a version above the latest of migrations.
 */
export async function migratePostgres(pool: PostgresPool, migrations: readonly Migration[] = POSTGRES_MIGRATIONS): Promise<number[]> {
  const latest = latestVersion(migrations);
  const client = await pool.connect();
  let broken = false;
  const locked = async <T>(step: () => Promise<T>): Promise<T> => {
    const outcome = await underMigrationLock(client, step);
    if ('result' in outcome) return outcome.result;
    broken = outcome.broken;
    throw outcome.error;
  };
  const refuseNewer = (current: number) => {
    if (current > latest) throw new SchemaTooNewError(`database schema version ${current} is newer than this build knows (${latest})`);
  };
  try {
    // Under the lock too: two CREATE TABLE IF NOT EXISTS at once can both try to create it.
    const current = await locked(async () => {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version BIGINT PRIMARY KEY, name TEXT COLLATE "C" NOT NULL, applied_at BIGINT NOT NULL)`);
      return currentVersion(client);
    });
    refuseNewer(current);
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (m.version <= current) continue;
      const done = await locked(async () => {
        const now = await currentVersion(client);
        refuseNewer(now);
        if (now >= m.version) return false;
        // A configured statement_timeout is for the service's queries, not for rewriting a large table.
        await client.query('SET LOCAL statement_timeout = 0');
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, Date.now()]);
        return true;
      });
      if (done) applied.push(m.version);
    }
    return applied;
  } finally {
    client.release(broken);
  }
}

/**
 * Reads the applied schema version (a query, so it also proves the database answers), as
 * schemaStatus does for SQLite. Throws what the driver throws when it cannot be read.
 */
export async function postgresSchemaStatus(pool: PostgresPool, migrations: readonly Migration[] = POSTGRES_MIGRATIONS): Promise<SchemaStatus> {
  const result = await pool.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
  return { current: result.rows[0]?.v ?? 0, latest: latestVersion(migrations) };
}
