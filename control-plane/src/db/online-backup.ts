// Online backups of the control plane's database: SQLite's backup API (better-sqlite3's
// `db.backup()`) copies the live database page by page between event-loop turns, so the control
// plane keeps serving; writes made meanwhile through this connection are carried into the copy,
// which is one consistent state of the database. The copy is written under <dataDir>/backups
// (the service's only writable place under systemd) and removed once it has been sent.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from './database';

export interface BackupFile {
  path: string;
  bytes: number;
  /** Deletes the copy (idempotent). */
  remove(): void;
}

export class OnlineBackups {
  /**
   * `dir` holds copies only while they are being sent: what a previous run left there (a crash
   * mid-send) is deleted now, before this process takes any.
   */
  constructor(
    private readonly db: Db,
    private readonly dir: string,
  ) {
    rmSync(dir, { recursive: true, force: true });
  }

  /** Takes a consistent copy of the database into a new file of its own. */
  async take(): Promise<BackupFile> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, `backup-${randomBytes(8).toString('hex')}.sqlite`);
    const remove = () => rmSync(path, { force: true });
    try {
      await this.db.backup(path);
      return { path, bytes: statSync(path).size, remove };
    } catch (err) {
      remove();
      throw err;
    }
  }
}
