// The PostgreSQL test harness itself: a cluster of its own (not the system service) that takes
// password connections on its URL, clones a database from a template, and leaves nothing behind.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresBinDir, startPostgresCluster, type PostgresCluster } from './postgres-cluster.js';

const exec = promisify(execFile);

/** psql over TCP with the URL a client would be given (password auth), not the harness's socket. */
async function viaUrl(url: string, sql: string): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('PG')));
  const { stdout } = await exec(join(postgresBinDir(), 'psql'), ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], { env });
  return stdout.trim();
}

describe('a throwaway PostgreSQL cluster', () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgresCluster();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('serves its URL with password auth, from its own folder and port', async () => {
    expect(cluster.url()).toMatch(/^postgres:\/\/postgres:[0-9a-f]+@127\.0\.0\.1:\d+\/pixelfleet$/);
    expect(await viaUrl(cluster.url(), 'SELECT current_user, current_database()')).toBe('postgres|pixelfleet');
    expect(await viaUrl(cluster.url(), "SELECT current_setting('data_directory')")).toBe(join(cluster.dir, 'data'));
    expect(cluster.port).not.toBe(5432);
    const wrong = cluster.url().replace(/:[0-9a-f]+@/, ':wrong@');
    await expect(viaUrl(wrong, 'SELECT 1')).rejects.toThrow(/password authentication failed/);
  });

  it('clones a database from a template, each test its own', async () => {
    await cluster.psql('CREATE TABLE builds (id integer PRIMARY KEY, status text NOT NULL); INSERT INTO builds VALUES (1, $$Ready$$);');
    const first = await cluster.createDatabase({ template: 'pixelfleet' });
    const second = await cluster.createDatabase({ template: 'pixelfleet' });
    expect(first).not.toBe(second);
    await viaUrl(first, "UPDATE builds SET status = 'Approved'");
    expect(await viaUrl(first, 'SELECT status FROM builds')).toBe('Approved');
    expect(await viaUrl(second, 'SELECT status FROM builds')).toBe('Ready');
    const name = new URL(first).pathname.slice(1);
    await cluster.dropDatabase(name);
    expect(await cluster.psql(`SELECT count(*) FROM pg_database WHERE datname = '${name}'`, 'postgres')).toBe('0\n');
  });

  it('stops (twice is once) and removes its folder', async () => {
    const other = await startPostgresCluster({ database: 'other' });
    expect(await viaUrl(other.url(), 'SELECT current_database()')).toBe('other');
    await other.stop();
    await other.stop();
    expect(existsSync(other.dir)).toBe(false);
    await expect(viaUrl(other.url(), 'SELECT 1')).rejects.toThrow(/Connection refused|could not connect/);
  });
});
