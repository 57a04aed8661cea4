// What every PostgreSQL repository does with the pool: a query's rows, its first row, the rows it
// changed, and a transaction on one connection. Statements are always parameterised ($1, $2...):
// values never become SQL text.
import type pg from 'pg';
import type { PostgresPool } from '../../db/postgres-database';

/** A pool, or the one connection of a transaction in progress. */
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/** The rows a statement returns. */
export async function rowsOf<R extends pg.QueryResultRow>(db: Queryable, text: string, values: readonly unknown[] = []): Promise<R[]> {
  return (await db.query<R>(text, values as unknown[])).rows;
}

/** The first row a statement returns, if any. */
export async function firstRowOf<R extends pg.QueryResultRow>(db: Queryable, text: string, values: readonly unknown[] = []): Promise<R | undefined> {
  return (await db.query<R>(text, values as unknown[])).rows[0];
}

/** How many rows a statement inserted, updated or deleted. */
export async function changesOf(db: Queryable, text: string, values: readonly unknown[] = []): Promise<number> {
  return (await db.query(text, values as unknown[])).rowCount ?? 0;
}

/**
 * Runs work in one transaction on one connection: committed when it resolves, rolled back when it
 * throws (the error goes on to the caller). A connection that cannot even roll back is discarded.
 */
export async function inTransaction<T>(pool: PostgresPool, work: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch {
      broken = true;
    }
    throw err;
  } finally {
    client.release(broken);
  }
}
