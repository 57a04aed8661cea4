import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from './database';
import { WalCheckpointer } from './wal-checkpointer';

let dir: string;
let db: Db;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-wal-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  db.exec('CREATE TABLE blobs (b BLOB)');
});

afterEach(() => {
  if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

const write = (mib: number) => {
  const insert = db.prepare('INSERT INTO blobs (b) VALUES (randomblob(65536))');
  for (let i = 0; i < mib * 16; i++) insert.run(); // one commit each, as ingest batches are
};

describe('WalCheckpointer', () => {
  it('moves committed pages into the database file from its own thread, none on commit', async () => {
    const checkpointer = WalCheckpointer.start(db, pino({ level: 'silent' }), 20)!;
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const before = statSync(db.name).size;
    write(8);
    // The file grows only through checkpoints, and this connection runs none.
    await expect.poll(() => statSync(db.name).size - before, { timeout: 10_000 }).toBeGreaterThan(7 * 1024 * 1024);
    await checkpointer.close();
    await checkpointer.close(); // idempotent
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect((db.prepare('SELECT COUNT(*) AS n FROM blobs').get() as { n: number }).n).toBe(128);
  });

  it('does nothing for an in-memory database', () => {
    expect(WalCheckpointer.start(openDatabase(':memory:'), pino({ level: 'silent' }))).toBeUndefined();
  });
});
