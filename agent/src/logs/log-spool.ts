// The agent's log spool (`<dataDir>/log-spool`): one folder per finished session holding copies
// of its logs (a crash folder as one zip) and a small manifest, so an engine log outlives a control
// plane outage or an agent restart. A folder appears whole or not at all: it is filled under a
// temp name, its manifest written atomically, then renamed into place. A file leaves only once the
// control plane answered for it (the manifest records that first); the spool is bounded by size
// and age, the oldest dropped first with a warning.
import { copyFile, mkdir, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '@pixelfleet/common';
import { readJsonIfExists, syncFolder, writeJsonAtomic } from '../lib/atomic-file';
import type { CollectedLog } from './collect-logs';
import { zipCrashFolder } from './crash-zip';

export const MANIFEST_FILE = 'manifest.json';
/** Prefix of a folder being filled; one left by a crashed agent is removed at start. */
const INCOMING_PREFIX = '.incoming-';

const spoolFileSchema = z.object({
  /** The name the control plane records (unique within the session). */
  fileName: z.string().min(1),
  /** Uncompressed size in bytes. */
  fileSize: z.number().int().min(0),
  /** Set once the control plane stored it: the file is gone from the folder. */
  uploaded: z.object({ logFileId: z.string(), gzSize: z.number() }).optional(),
  /** Set when the control plane refused it for good (the reason): it is not sent again. */
  dropped: z.string().optional(),
});
const manifestSchema = z.object({
  version: z.literal(1),
  sessionId: z.string().min(1),
  /** When the session's logs were spooled (the clock's ms): the age bound counts from here. */
  spooledAtMs: z.number(),
  files: z.array(spoolFileSchema),
});

export type SpoolFile = z.infer<typeof spoolFileSchema>;
export type SpoolManifest = z.infer<typeof manifestSchema>;

/** One session's spooled logs. */
export interface SpoolEntry {
  /** The entry's folder. */
  readonly dir: string;
  readonly manifest: SpoolManifest;
}

export interface LogSpoolOptions {
  /** The spool folder (`<dataDir>/log-spool`). */
  dir: string;
  /** Bytes the spooled files may take; past it the oldest entries are dropped (logSpool.maxBytes). */
  maxBytes: number;
  /** An entry older than this is dropped, in ms (logSpool.maxAgeHours). */
  maxAgeMs: number;
  clock: Clock;
  log: Logger;
}

/** The path of a pending file inside its entry. */
export const spoolFilePath = (entry: SpoolEntry, file: SpoolFile): string => join(entry.dir, 'files', file.fileName);

/** Files not yet answered for. */
export const pendingFiles = (entry: SpoolEntry): SpoolFile[] => entry.manifest.files.filter((f) => f.uploaded === undefined && f.dropped === undefined);

export class LogSpool {
  private sequence = 0;

  constructor(private readonly options: LogSpoolOptions) {}

  /**
   * Copies a session's logs into a new entry (crash folders zipped) and returns it; undefined when
   * there is nothing to keep (no log at all is a normal outcome). The agent's own copies (`owned`:
   * the session folder's) are removed once the entry is in place; a build's Saved files are left.
   */
  async add(sessionId: string, logs: readonly CollectedLog[]): Promise<SpoolEntry | undefined> {
    if (logs.length === 0) return undefined;
    const { dir, clock, log } = this.options;
    await mkdir(dir, { recursive: true });
    const spooledAtMs = clock.now();
    this.sequence += 1;
    const incoming = join(dir, `${INCOMING_PREFIX}${sessionId}-${process.pid}-${this.sequence}`);
    await rm(incoming, { recursive: true, force: true });
    await mkdir(join(incoming, 'files'), { recursive: true });
    const files: SpoolFile[] = [];
    try {
      for (const l of logs) {
        const target = join(incoming, 'files', l.fileName);
        try {
          if (l.kind === 'file') {
            await copyFile(l.path, target);
            files.push({ fileName: l.fileName, fileSize: (await stat(target)).size });
          } else {
            const zip = await zipCrashFolder(l.dir, target);
            files.push({ fileName: l.fileName, fileSize: zip.size });
          }
        } catch (err) {
          // One unreadable file (removed meanwhile, no permission) does not cost the others.
          log.warn({ sessionId, fileName: l.fileName, err: (err as Error).message }, 'a session log could not be spooled');
          await rm(target, { force: true });
        }
      }
      if (files.length === 0) {
        await rm(incoming, { recursive: true, force: true });
        return undefined;
      }
      syncFolder(join(incoming, 'files'));
      const manifest: SpoolManifest = { version: 1, sessionId, spooledAtMs, files };
      writeJsonAtomic(join(incoming, MANIFEST_FILE), manifest);
      const final = await this.freeName(`${String(spooledAtMs).padStart(15, '0')}-${String(this.sequence).padStart(6, '0')}-${sessionId}`);
      await rename(incoming, final);
      syncFolder(dir);
      for (const l of logs) if (l.kind === 'file' && l.owned && files.some((f) => f.fileName === l.fileName)) await unlink(l.path).catch(() => undefined);
      log.info({ sessionId, files: files.map((f) => f.fileName), bytes: files.reduce((n, f) => n + f.fileSize, 0) }, 'session logs spooled');
      const entry = { dir: final, manifest };
      await this.enforceBounds();
      return entry;
    } catch (err) {
      await rm(incoming, { recursive: true, force: true });
      throw err;
    }
  }

  /** Every entry, oldest first. A folder whose manifest is missing or unreadable is removed (with a warning). */
  async entries(): Promise<SpoolEntry[]> {
    const { dir, log } = this.options;
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
    const entries: SpoolEntry[] = [];
    for (const name of names) {
      const entryDir = join(dir, name);
      let manifest: SpoolManifest | undefined;
      try {
        const parsed = manifestSchema.safeParse(readJsonIfExists(join(entryDir, MANIFEST_FILE)));
        if (parsed.success) manifest = parsed.data;
      } catch {
        manifest = undefined;
      }
      if (manifest === undefined) {
        log.warn({ entry: name }, 'log spool entry without a readable manifest removed');
        await rm(entryDir, { recursive: true, force: true });
        continue;
      }
      entries.push({ dir: entryDir, manifest });
    }
    return entries.sort((a, b) => a.manifest.spooledAtMs - b.manifest.spooledAtMs || a.dir.localeCompare(b.dir));
  }

  /**
   * Records the control plane's answer for one file (the manifest first, atomically), then removes
   * the file; the entry goes once every file is answered for. Returns the updated entry, or
   * undefined when it was removed.
   */
  async settle(entry: SpoolEntry, fileName: string, outcome: { uploaded: { logFileId: string; gzSize: number } } | { dropped: string }): Promise<SpoolEntry | undefined> {
    // The bounds may have dropped the entry meanwhile: nothing is left to record.
    if ((await stat(entry.dir).catch(() => undefined)) === undefined) return undefined;
    const files = entry.manifest.files.map((f) => (f.fileName === fileName ? { ...f, ...outcome } : f));
    const updated: SpoolEntry = { dir: entry.dir, manifest: { ...entry.manifest, files } };
    if (pendingFiles(updated).length === 0) {
      await this.removeEntry(entry);
      return undefined;
    }
    writeJsonAtomic(join(entry.dir, MANIFEST_FILE), updated.manifest);
    await unlink(join(entry.dir, 'files', fileName)).catch(() => undefined);
    return updated;
  }

  /**
   * At agent start: removes folders a crash left half-filled, and files already answered for whose
   * removal the crash interrupted; then applies the bounds.
   */
  async recover(): Promise<void> {
    const { dir, log } = this.options;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (!name.startsWith(INCOMING_PREFIX)) continue;
      log.warn({ entry: name }, 'a log spool entry left half-written by a stopped agent removed (its logs were still in the session folder)');
      await rm(join(dir, name), { recursive: true, force: true });
    }
    for (const entry of await this.entries()) {
      if (pendingFiles(entry).length === 0) {
        await this.removeEntry(entry);
        continue;
      }
      for (const f of entry.manifest.files) if (f.uploaded !== undefined || f.dropped !== undefined) await unlink(spoolFilePath(entry, f)).catch(() => undefined);
    }
    await this.enforceBounds();
  }

  /** Drops entries older than maxAgeMs, then the oldest until the pending files fit in maxBytes; each with a warning. */
  async enforceBounds(): Promise<void> {
    const { clock, log, maxAgeMs, maxBytes } = this.options;
    const entries = await this.entries();
    const sizes = await Promise.all(entries.map((e) => this.pendingBytes(e)));
    let total = sizes.reduce((a, b) => a + b, 0);
    for (const [i, entry] of entries.entries()) {
      const ageMs = clock.now() - entry.manifest.spooledAtMs;
      const tooOld = ageMs > maxAgeMs;
      if (!tooOld && total <= maxBytes) break;
      log.warn(
        { sessionId: entry.manifest.sessionId, files: pendingFiles(entry).map((f) => f.fileName), ageMs, spoolBytes: total, maxBytes, maxAgeMs },
        tooOld ? 'session logs dropped from the log spool: older than logSpool.maxAgeHours' : 'session logs dropped from the log spool: it is over logSpool.maxBytes',
      );
      await this.removeEntry(entry);
      total -= sizes[i]!;
    }
  }

  /** Bytes of an entry's files still waiting for the control plane. */
  private async pendingBytes(entry: SpoolEntry): Promise<number> {
    let bytes = 0;
    for (const f of pendingFiles(entry)) bytes += (await stat(spoolFilePath(entry, f)).catch(() => undefined))?.size ?? 0;
    return bytes;
  }

  private async removeEntry(entry: SpoolEntry): Promise<void> {
    // The manifest goes first: a crash midway leaves a folder without one, which entries() removes.
    await unlink(join(entry.dir, MANIFEST_FILE)).catch(() => undefined);
    await rm(entry.dir, { recursive: true, force: true });
    syncFolder(this.options.dir);
  }

  private async freeName(base: string): Promise<string> {
    for (let i = 0; ; i++) {
      const candidate = join(this.options.dir, i === 0 ? base : `${base}-${i}`);
      if ((await stat(candidate).catch(() => undefined)) === undefined) return candidate;
    }
  }
}

/**
 * Removes a session folder once the spool took its logs: empty files (a log opened and never
 * written: no log) go, then the folder if nothing else is left (anything else stays as it was).
 */
export async function removeSpooledSessionDir(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const path = join(dir, name);
    const s = await stat(path).catch(() => undefined);
    if (s?.isFile() === true && s.size === 0) await unlink(path).catch(() => undefined);
  }
  await rmdir(dir).catch(() => undefined);
}
