// Crash-safe small JSON files: write a temp file, fsync, rename over the old one, fsync the folder
// (so the rename itself survives a power cut). A crash leaves the old file or the new one, never a
// mix; at worst a `*.tmp` beside it, which readers ignore.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** The suffix of the temp files writeJsonAtomic leaves behind when it dies mid-write. */
export const ATOMIC_TEMP_SUFFIX = '.tmp';

/** Writes JSON atomically; mode 0o600 keeps secrets readable by the service account only. */
export function writeJsonAtomic(path: string, value: unknown, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}${ATOMIC_TEMP_SUFFIX}`;
  // A temp file a dead run left (or a link planted there) would keep its own mode, or lead elsewhere:
  // it goes, and the new one is created exclusively with `mode`.
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, 'wx', mode);
  try {
    writeSync(fd, JSON.stringify(value, null, 2));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncFolder(dirname(path));
}

/** fsync a folder so a rename or unlink in it is durable; Windows cannot open a folder for that (NTFS journals it). */
export function syncFolder(dir: string): void {
  if (process.platform === 'win32') return;
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Reads a JSON file, or undefined when it does not exist. */
export function readJsonIfExists(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
