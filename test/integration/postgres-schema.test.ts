// The PostgreSQL store's schema held to SQLite's: a fresh database of each, migrated, must describe
// the same tables, columns, keys, indexes and CHECKs (the parity test), and the PostgreSQL side's
// own promises hold: migrations once across replicas, too-new refused, int8 as safe numbers,
// its constraints enforced. Here, not beside the sources: no control-plane test imports test/support.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MIGRATIONS,
  POSTGRES_MIGRATIONS,
  PostgresConnectError,
  SchemaTooNewError,
  migratePostgres,
  openDatabase,
  openPostgres,
  postgresSchemaStatus,
  type Db,
  type PostgresPool,
} from '@pixelfleet/control-plane/test-support';
import { startPostgresCluster, type PostgresCluster } from '../support/postgres-cluster';

/** The migrated database every test clones (a template: nobody stays connected to it). */
const BASELINE = 'baseline';

// ---------------------------------------------------------------------------------------------
// Both catalogs, each table described as lines that read alike when the schemas agree
// ---------------------------------------------------------------------------------------------

/** A table as lines: its columns in order first, then its keys, indexes, foreign keys and CHECKs sorted. */
type SchemaDescription = Record<string, string[]>;

/** SQLite's type affinity of a declared type (its rules in order), PostgreSQL's type named the same way. */
function sqliteTypeClass(declared: string): string {
  const type = declared.toUpperCase();
  if (type.includes('INT')) return 'integer';
  if (/CHAR|CLOB|TEXT/.test(type)) return 'text';
  if (type === '' || type.includes('BLOB')) return 'blob';
  if (/REAL|FLOA|DOUB/.test(type)) return 'real';
  return 'numeric';
}

function postgresTypeClass(formatted: string): string {
  if (['bigint', 'integer', 'smallint'].includes(formatted)) return 'integer';
  if (['double precision', 'real'].includes(formatted)) return 'real';
  if (formatted === 'text' || formatted.startsWith('character')) return 'text';
  if (formatted === 'bytea') return 'blob';
  return `numeric (${formatted})`;
}

/** A default as a value: PostgreSQL's `'active'::text` and SQLite's `'active'` are the same. */
function normaliseDefault(value: string | null): string {
  if (value === null) return 'no default';
  return `default ${value.replace(/::[a-z ]+/g, '').replace(/^\((.*)\)$/, '$1')}`;
}

/** The CHECK expressions of a CREATE TABLE statement, as written (string literals skipped while matching parentheses). */
function checkExpressions(createTable: string): string[] {
  const found: string[] = [];
  const keyword = /\bCHECK\s*\(/gi;
  for (let match = keyword.exec(createTable); match !== null; match = keyword.exec(createTable)) {
    const start = match.index + match[0].length;
    let depth = 1;
    let i = start;
    for (; i < createTable.length && depth > 0; i += 1) {
      const ch = createTable[i];
      if (ch === "'") i = createTable.indexOf("'", i + 1);
      else if (ch === '(') depth += 1;
      else if (ch === ')') depth -= 1;
    }
    found.push(createTable.slice(start, i - 1).trim());
  }
  return found;
}

function describeSqlite(db: Db): SchemaDescription {
  const out: SchemaDescription = {};
  const tables = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string; sql: string }[];
  for (const { name: table, sql } of tables) {
    const columns = db.pragma(`table_info("${table}")`) as { name: string; type: string; notnull: number; dflt_value: string | null; pk: number }[];
    const autoincrement = /\bAUTOINCREMENT\b/i.test(sql);
    const lines = columns.map((c) => {
      // A rowid table's key column reports notnull 0; PostgreSQL's key columns are NOT NULL, and ours never hold NULL.
      const nullability = c.notnull === 1 || c.pk > 0 ? 'not null' : 'null';
      const identity = autoincrement && c.pk > 0 ? ' identity' : '';
      return `column ${c.name} ${sqliteTypeClass(c.type)} ${nullability} ${normaliseDefault(c.dflt_value)}${identity}`;
    });
    const rest: string[] = [];
    const pk = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
    if (pk.length > 0) rest.push(`primary key (${pk.map((c) => c.name).join(', ')})`);
    const indexes = db.pragma(`index_list("${table}")`) as { name: string; unique: number; origin: string; partial: number }[];
    for (const index of indexes) {
      if (index.origin === 'pk') continue;
      const keys = (db.pragma(`index_xinfo("${index.name}")`) as { name: string | null; desc: number; coll: string; key: number }[]).filter((k) => k.key === 1);
      // NOCASE compares as lower() of the text under the C collation (ASCII letters only, both sides).
      const cols = keys.map((k) => `${k.coll === 'NOCASE' ? `lower(${k.name})` : k.name}${k.desc === 1 ? ' DESC' : ''}`).join(', ');
      const indexSql = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").get(index.name) as { sql: string | null } | undefined)?.sql ?? '';
      const predicate = index.partial === 1 ? /\bWHERE\b([\s\S]*)$/i.exec(indexSql)?.[1]?.trim() : undefined;
      rest.push(indexLine(index.name, index.unique === 1, cols, predicate === undefined ? undefined : { sqlite: predicate }));
    }
    const foreignKeys = db.pragma(`foreign_key_list("${table}")`) as { id: number; seq: number; table: string; from: string; to: string | null; on_update: string; on_delete: string }[];
    for (const id of new Set(foreignKeys.map((f) => f.id))) {
      const parts = foreignKeys.filter((f) => f.id === id).sort((a, b) => a.seq - b.seq);
      const first = parts[0]!;
      const referenced = parts.every((p) => p.to !== null)
        ? parts.map((p) => p.to).join(', ')
        : (db.pragma(`table_info("${first.table}")`) as { name: string; pk: number }[]).filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name).join(', ');
      const actions = [first.on_update === 'NO ACTION' ? '' : ` ON UPDATE ${first.on_update}`, first.on_delete === 'NO ACTION' ? '' : ` ON DELETE ${first.on_delete}`].join('');
      rest.push(`FOREIGN KEY (${parts.map((p) => p.from).join(', ')}) REFERENCES ${first.table}(${referenced})${actions}`);
    }
    for (const check of checkExpressions(sql)) rest.push(`check ${JSON.stringify({ sqlite: check })}`);
    out[table] = [...lines, ...rest.sort()];
  }
  return out;
}

/**
 * An index as one line. Unique ones are named by their columns alone (SQLite's UNIQUE constraints
 * have no name to compare, and its UNIQUE COLLATE NOCASE is an index of ours); the others by name.
 * A predicate still in SQLite's words is read by PostgreSQL later (readSqliteExpressions).
 */
function indexLine(name: string, unique: boolean, cols: string, predicate: { sqlite: string } | string | undefined): string {
  const where = predicate === undefined ? '' : ` WHERE ${typeof predicate === 'string' ? predicate : JSON.stringify(predicate)}`;
  return unique ? `unique (${cols})${where}` : `index ${name} (${cols})${where}`;
}

async function describePostgres(pool: PostgresPool): Promise<SchemaDescription> {
  const out: SchemaDescription = {};
  const tables = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname COLLATE "C"`,
  );
  for (const { name: table } of tables.rows) {
    const columns = await pool.query<{ name: string; type: string; notnull: boolean; dflt: string | null; identity: string }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull,
         pg_get_expr(d.adbin, d.adrelid) AS dflt, a.attidentity AS identity
       FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
       WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
      [table],
    );
    const lines = columns.rows.map(
      (c) => `column ${c.name} ${postgresTypeClass(c.type)} ${c.notnull ? 'not null' : 'null'} ${normaliseDefault(c.dflt)}${c.identity === 'd' ? ' identity' : ''}`,
    );
    const rest: string[] = [];
    const indexes = await pool.query<{ name: string; unique: boolean; primary: boolean; cols: string; predicate: string | null }>(
      `SELECT i.relname AS name, x.indisunique AS unique, x.indisprimary AS primary, pg_get_expr(x.indpred, x.indrelid) AS predicate,
         (SELECT string_agg(pg_get_indexdef(x.indexrelid, k, true) || CASE WHEN x.indoption[k - 1] & 1 = 1 THEN ' DESC' ELSE '' END, ', ' ORDER BY k)
          FROM generate_series(1, x.indnkeyatts) AS k) AS cols
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = $1::regclass`,
      [table],
    );
    for (const index of indexes.rows) {
      if (index.primary) rest.push(`primary key (${index.cols})`);
      else rest.push(indexLine(index.name, index.unique, index.cols, index.predicate ?? undefined));
    }
    const constraints = await pool.query<{ type: string; def: string }>(
      `SELECT contype AS type, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('f', 'c')`,
      [table],
    );
    for (const c of constraints.rows) rest.push(c.type === 'f' ? c.def : `check ${c.def}`);
    out[table] = [...lines, ...rest.sort()];
  }
  return out;
}

/**
 * Replaces the SQLite CHECKs and index predicates of a description (`{"sqlite": "…"}`) with
 * PostgreSQL's own reading of the same text on the PostgreSQL table (added in a transaction rolled
 * back), so that `status IN ('a', 'b')` and `(status = ANY (ARRAY['a'::text, 'b'::text]))` compare
 * equal and one missing value does not. Text PostgreSQL cannot read stays, marked, and differs.
 */
async function readSqliteExpressions(description: SchemaDescription, pool: PostgresPool): Promise<SchemaDescription> {
  const client = await pool.connect();
  try {
    const read = async (table: string, kind: 'check' | 'predicate', sqlite: string): Promise<string> => {
      await client.query('BEGIN');
      try {
        if (kind === 'check') {
          await client.query(`ALTER TABLE "${table}" ADD CONSTRAINT parity_probe CHECK (${sqlite})`);
          const r = await client.query<{ def: string }>(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'parity_probe' AND conrelid = $1::regclass`, [table]);
          return r.rows[0]!.def;
        }
        await client.query(`CREATE INDEX parity_probe ON "${table}" ((1)) WHERE ${sqlite}`);
        const r = await client.query<{ predicate: string }>(`SELECT pg_get_expr(indpred, indrelid) AS predicate FROM pg_index WHERE indexrelid = 'parity_probe'::regclass`);
        return r.rows[0]!.predicate;
      } catch (err) {
        return `(PostgreSQL cannot read SQLite's ${sqlite}: ${(err as Error).message})`;
      } finally {
        await client.query('ROLLBACK');
      }
    };
    const out: SchemaDescription = {};
    for (const [table, lines] of Object.entries(description)) {
      const readLines: string[] = [];
      for (const line of lines) {
        const check = /^check (\{.*\})$/.exec(line);
        const predicate = /^(.*) WHERE (\{.*\})$/.exec(line);
        if (check !== null) readLines.push(`check ${await read(table, 'check', (JSON.parse(check[1]!) as { sqlite: string }).sqlite)}`);
        else if (predicate !== null) readLines.push(`${predicate[1]} WHERE ${await read(table, 'predicate', (JSON.parse(predicate[2]!) as { sqlite: string }).sqlite)}`);
        else readLines.push(line);
      }
      const columns = readLines.filter((l) => l.startsWith('column '));
      out[table] = [...columns, ...readLines.filter((l) => !l.startsWith('column ')).sort()];
    }
    return out;
  } finally {
    client.release();
  }
}

// ---------------------------------------------------------------------------------------------

describe('the PostgreSQL migration list', () => {
  it('starts at the baseline 23 and has, from 23 on, the versions and names of SQLite’s', () => {
    const sqlite = MIGRATIONS.filter((m) => m.version >= 23).map(({ version, name }) => ({ version, name }));
    const postgres = POSTGRES_MIGRATIONS.map(({ version, name }) => ({ version, name }));
    expect(postgres[0]?.version).toBe(23);
    expect(postgres).toEqual(sqlite);
  });
});

describe('the PostgreSQL store', () => {
  let cluster: PostgresCluster;
  const pools: PostgresPool[] = [];

  /** A pool on a new database cloned from the migrated baseline. */
  async function migratedDatabase(): Promise<PostgresPool> {
    const pool = await openPostgres(await cluster.createDatabase({ template: BASELINE }), { poolSize: 4 });
    pools.push(pool);
    return pool;
  }

  beforeAll(async () => {
    cluster = await startPostgresCluster({ database: BASELINE });
    const pool = await openPostgres(cluster.url());
    try {
      await migratePostgres(pool);
    } finally {
      await pool.end();
    }
  });
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    await cluster?.stop();
  });

  it('ends its migrations at the schema SQLite’s end at: tables, columns, keys, indexes, foreign keys and CHECKs', async () => {
    const pool = await migratedDatabase();
    const sqliteDb = openDatabase(':memory:');
    try {
      const sqlite = await readSqliteExpressions(describeSqlite(sqliteDb), pool);
      const postgres = await describePostgres(pool);
      expect(Object.keys(postgres)).toEqual(Object.keys(sqlite));
      expect(postgres).toEqual(sqlite);
      expect(await postgresSchemaStatus(pool)).toEqual({ current: 23, latest: 23 });
    } finally {
      sqliteDb.close();
    }
  });

  it('types every column by the mapping: BIGINT, DOUBLE PRECISION, BYTEA, or TEXT in the C collation', async () => {
    const pool = await migratedDatabase();
    const { rows } = await pool.query<{ column: string; type: string }>(
      `SELECT c.relname || '.' || a.attname AS column, format_type(a.atttypid, a.atttypmod) || coalesce(' COLLATE ' || co.collname, '') AS type
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_collation co ON co.oid = a.attcollation
       WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped`,
    );
    expect(rows.length).toBeGreaterThan(100);
    const unmapped = rows.filter((r) => !['bigint', 'double precision', 'bytea', 'text COLLATE C'].includes(r.type));
    expect(unmapped).toEqual([]);
  });

  it('applies each migration once when two replicas migrate one empty database at the same time', async () => {
    const url = await cluster.createDatabase();
    const later = [
      ...POSTGRES_MIGRATIONS,
      { version: 24, name: 'probe a', sql: 'CREATE TABLE probe_a (id BIGINT PRIMARY KEY)' },
      { version: 25, name: 'probe b', sql: 'ALTER TABLE probe_a ADD COLUMN b BIGINT' },
    ];
    const [a, b] = await Promise.all([openPostgres(url, { poolSize: 2 }), openPostgres(url, { poolSize: 2 })]);
    pools.push(a, b);
    const [appliedByA, appliedByB] = await Promise.all([migratePostgres(a, later), migratePostgres(b, later)]);
    expect([...appliedByA, ...appliedByB].sort((x, y) => x - y)).toEqual([23, 24, 25]);
    const { rows } = await a.query<{ version: number; times: number }>('SELECT version, count(*) AS times FROM schema_migrations GROUP BY version ORDER BY version');
    expect(rows).toEqual([
      { version: 23, times: 1 },
      { version: 24, times: 1 },
      { version: 25, times: 1 },
    ]);
    expect(await migratePostgres(b, later)).toEqual([]);
  });

  it('refuses a database whose schema is newer than this build, with SchemaTooNewError', async () => {
    const pool = await migratedDatabase();
    await pool.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (24, 'from a newer build', 0)");
    await expect(migratePostgres(pool)).rejects.toThrow(SchemaTooNewError);
    await expect(migratePostgres(pool)).rejects.toThrow('database schema version 24 is newer than this build knows (23)');
    expect(await postgresSchemaStatus(pool)).toEqual({ current: 24, latest: 23 });
  });

  it('reads bigints and numerics as numbers up to 2^53-1, and throws beyond rather than round', async () => {
    const pool = await migratedDatabase();
    const max = Number.MAX_SAFE_INTEGER;
    await pool.query("INSERT INTO events (id, type, occurred_at) VALUES ($1, 'probe', $1)", [max]);
    const { rows } = await pool.query<{ id: unknown; occurred_at: unknown }>('SELECT id, occurred_at FROM events');
    expect(rows).toEqual([{ id: max, occurred_at: max }]);
    await expect(pool.query('SELECT $1::bigint + 2 AS beyond', [max])).rejects.toThrow(/9007199254740993 is beyond JavaScript's safe integers/);
    expect((await pool.query<{ total: unknown }>('SELECT sum(occurred_at) - 1 AS total FROM events')).rows).toEqual([{ total: max - 1 }]);
    await expect(pool.query('SELECT sum(occurred_at) + 2 AS total FROM events')).rejects.toThrow(/numeric 9007199254740993 is not a JavaScript number/);
    // The pool's connections stay usable after a row it refused.
    expect((await pool.query<{ one: unknown }>('SELECT 1::bigint AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('enforces the constraints: CHECKed values, one live api key per user, e-mail addresses unique whatever their case, foreign keys', async () => {
    const pool = await migratedDatabase();
    await pool.query("INSERT INTO users (id, email, created_at) VALUES ('u1', 'Ann@Example.com', 1)");
    await expect(pool.query("INSERT INTO users (id, email, created_at) VALUES ('u2', 'ann@example.COM', 1)")).rejects.toMatchObject({ code: '23505', constraint: 'users_email_lower' });
    expect((await pool.query(`SELECT id FROM users WHERE lower(email) = lower($1 COLLATE "C")`, ['ANN@example.com'])).rows).toEqual([{ id: 'u1' }]);

    await pool.query("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('p1', 'u1', 'Demo', 'europe', 1)");
    await pool.query("INSERT INTO sessions (id, project_id, region, status, created_at, updated_at) VALUES ('s1', 'p1', 'europe', 'Running', 1, 1)");
    await expect(pool.query("INSERT INTO sessions (id, project_id, region, status, created_at, updated_at) VALUES ('s2', 'p1', 'europe', 'Paused', 1, 1)")).rejects.toMatchObject({
      code: '23514',
      constraint: 'sessions_status_check',
    });

    await pool.query("INSERT INTO api_keys (user_id, key_hash, created_at) VALUES ('u1', 'h1', 1)");
    await expect(pool.query("INSERT INTO api_keys (user_id, key_hash, created_at) VALUES ('u1', 'h2', 2)")).rejects.toMatchObject({
      code: '23505',
      constraint: 'api_keys_one_live_per_user',
    });
    await pool.query("UPDATE api_keys SET revoked_at = 3 WHERE key_hash = 'h1'");
    await pool.query("INSERT INTO api_keys (user_id, key_hash, created_at) VALUES ('u1', 'h2', 3)");

    // projects.owner_user_id has no ON DELETE action: a user who owns a project stays.
    await expect(pool.query("DELETE FROM users WHERE id = 'u1'")).rejects.toMatchObject({ code: '23503', constraint: 'projects_owner_user_id_fkey' });
    await pool.query("DELETE FROM projects WHERE id = 'p1'");
    expect((await pool.query('SELECT count(*)::bigint AS n FROM sessions')).rows).toEqual([{ n: 0 }]);
    await pool.query("DELETE FROM users WHERE id = 'u1'");
    expect((await pool.query('SELECT count(*)::bigint AS n FROM api_keys')).rows).toEqual([{ n: 0 }]);
  });

  it('takes explicit ids in identity columns (a copy from SQLite), and goes on past them once the sequence is set', async () => {
    const pool = await migratedDatabase();
    await pool.query("INSERT INTO events (id, type, occurred_at) VALUES (41, 'copied', 1), (42, 'copied', 1)");
    await pool.query("SELECT setval(pg_get_serial_sequence('events', 'id'), (SELECT max(id) FROM events))");
    expect((await pool.query("INSERT INTO events (type, occurred_at) VALUES ('new', 2) RETURNING id")).rows).toEqual([{ id: 43 }]);
  });

  it('opens a pool as pixelfleet with the statement timeout asked for, and names the server but never the password when it cannot', async () => {
    const url = cluster.url();
    const pool = await openPostgres(url, { statementTimeoutMs: 1234 });
    pools.push(pool);
    const { rows } = await pool.query<{ app: string; timeout: string }>("SELECT current_setting('application_name') AS app, current_setting('statement_timeout') AS timeout");
    expect(rows).toEqual([{ app: 'pixelfleet', timeout: '1234ms' }]);

    const password = new URL(url).password;
    const wrong = url.replace(`:${password}@`, ':not-the-password@');
    const refused = await openPostgres(wrong).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(PostgresConnectError);
    expect((refused as PostgresConnectError).message).toBe(`cannot connect to PostgreSQL at 127.0.0.1:${cluster.port}, database ${BASELINE}: password authentication failed for user "postgres"`);
    expect((refused as PostgresConnectError).code).toBe('28P01');
    expect(JSON.stringify(refused)).not.toContain('not-the-password');
    await expect(openPostgres(`postgres://postgres:${password}@127.0.0.1:1/nowhere`, { connectTimeoutMs: 2000 })).rejects.toThrow(
      /^cannot connect to PostgreSQL at 127\.0\.0\.1:1, database nowhere: connect ECONNREFUSED/,
    );
    await expect(openPostgres('not a url with secret')).rejects.toThrow(/^database\.url is not a valid postgres:\/\/ URL$/);
  });
});
