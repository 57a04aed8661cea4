// The control plane's two stores, side by side, for tests that hold each repository to one
// contract: SQLite (a migrated file in a temp folder, its synchronous repositories behind the same
// promises the services see) and PostgreSQL (a throwaway cluster per test file, a fresh database
// per test cloned from one migrated template). A test file calls `storeCases()` once and runs its
// tests for each case with `describe.each`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import {
  migratePostgres,
  openDatabase,
  openPostgres,
  postgresRepositories,
  sqliteRepositories,
  type Db,
  type PostgresPool,
  type PostgresRepositories,
} from '@pixelfleet/control-plane/test-support';
import { startPostgresCluster, type PostgresCluster } from './postgres-cluster';

/** One database of one store, made for one test. */
export interface OpenedStore {
  readonly repositories: PostgresRepositories;
  /** Runs SQL that both dialects read alike, `?` for each parameter (tests that look under the repositories). */
  rows<R>(text: string, values?: readonly unknown[]): Promise<R[]>;
  /** Closes the database and removes what it left. */
  close(): Promise<void>;
}

export interface StoreCase {
  readonly name: 'sqlite' | 'postgres';
  open(): Promise<OpenedStore>;
}

/** The template every PostgreSQL test database is cloned from. */
const TEMPLATE = 'migrated';

/** `?` placeholders as PostgreSQL's `$1, $2...` (no test SQL holds a literal question mark). */
const numbered = (text: string) => {
  let n = 0;
  return text.replace(/\?/g, () => `$${(n += 1)}`);
};

function sqliteCase(): StoreCase {
  return {
    name: 'sqlite',
    open() {
      const dir = mkdtempSync(join(tmpdir(), 'pf-store-'));
      const db: Db = openDatabase(join(dir, 'cp.sqlite'));
      return Promise.resolve({
        repositories: sqliteRepositories(db),
        rows: <R>(text: string, values: readonly unknown[] = []) => Promise.resolve(db.prepare(text).all(...values) as R[]),
        close: () => {
          db.close();
          rmSync(dir, { recursive: true, force: true });
          return Promise.resolve();
        },
      });
    },
  };
}

function postgresCase(): StoreCase {
  let cluster: Promise<PostgresCluster> | undefined;
  // The cluster starts with the first test that asks for it (a file that runs only SQLite's tests starts none).
  const started = () =>
    (cluster ??= (async () => {
      const c = await startPostgresCluster();
      const templateUrl = await c.createDatabase({ name: TEMPLATE });
      const pool = await openPostgres(templateUrl, { poolSize: 1 });
      try {
        await migratePostgres(pool);
      } finally {
        await pool.end();
      }
      return c;
    })());
  afterAll(async () => {
    if (cluster !== undefined) await (await cluster).stop();
  });
  return {
    name: 'postgres',
    async open() {
      const c = await started();
      const url = await c.createDatabase({ template: TEMPLATE });
      const pool: PostgresPool = await openPostgres(url, { poolSize: 4 });
      return {
        repositories: postgresRepositories(pool),
        rows: async <R>(text: string, values: readonly unknown[] = []) => (await pool.query(numbered(text), values as unknown[])).rows as R[],
        close: () => pool.end(),
      };
    },
  };
}

/** Both stores; call once per test file, at its top level. */
export function storeCases(): StoreCase[] {
  return [sqliteCase(), postgresCase()];
}
