// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that
// crosses 1,000 WAL pages, on the writing thread: copying the pages back and syncing the file held
// the control plane's event loop for 20 to 50 ms every few hundred telemetry batches. Here the main
// connection's automatic checkpoint is off, and a worker thread with its own connection to the same
// file runs a PASSIVE checkpoint every interval: it copies what no reader still needs without
// taking any lock a writer waits on, and the next write after a complete one starts the WAL over.
// If the worker fails, the main connection's automatic checkpoint is turned back on.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Db } from './database';

/** Time between two checkpoints: at 50,000 telemetry rows/s the WAL stays a few MiB. */
export const CHECKPOINT_INTERVAL_MS = 250;
/** SQLite's default automatic checkpoint, restored if the worker fails. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)');
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
`;

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  private closed = false;

  private constructor(
    private readonly db: Db,
    log: Logger,
    intervalMs: number,
  ) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER, { eval: true, workerData: { driver, path: db.name, intervalMs } });
    // Never what keeps the process alive (an app built and dropped without close()).
    this.worker.unref();
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.on('error', (err) => {
      if (this.closed) return;
      log.error({ err }, 'WAL checkpoint thread failed; checkpoints run on commit again');
      if (db.open) db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    });
    db.pragma('wal_autocheckpoint = 0');
  }

  /** Starts checkpointing the database's file from a worker thread; undefined for an in-memory database. */
  static start(db: Db, log: Logger, intervalMs = CHECKPOINT_INTERVAL_MS): WalCheckpointer | undefined {
    if (db.memory) return undefined;
    return new WalCheckpointer(db, log, intervalMs);
  }

  /** Stops the thread (its connection closed); the main connection checkpoints on commit again. Idempotent. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      // Held open until the thread has closed its connection (unref'd, the process could exit first).
      this.worker.ref();
      this.worker.postMessage('close');
      if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    }
    await this.exited;
  }
}
