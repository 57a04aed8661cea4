// Extraction of a build archive behind the same guards as inspection: free disk checked first,
// entries streamed one at a time into a temp folder beside the destination, every entry's
// CRC-32 and byte count verified as it is written, then one rename makes the build appear whole.
// Any failure removes everything written: a rejected archive leaves nothing on disk.
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat, statfs } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type Entry, type ZipFile } from 'yauzl';
import { ArchiveRejection, quoteEntryName } from './archive-rejection';
import { type ArchiveLimits } from './archive-limits';
import { formatBytes } from './byte-size';
import { checkedEntryData, extractionError, type ExtractProgress } from './entry-data';
import { checkEntries, type ArchiveEntry } from './entry-guards';
import { manifestOf, type ArchiveManifest } from './inspect-archive';
import { openEntryData, readCentralDirectory } from './zip-reader';

export type { ExtractProgress } from './entry-data';

export interface ExtractOptions {
  /** Called as bytes are written (once per chunk, up to every 1 MiB). */
  onProgress?: (progress: ExtractProgress) => void;
  /** Free bytes on the file system holding `dir`; default `fs.statfs` (blocks available to us × block size). */
  freeBytes?: (dir: string) => Promise<number>;
  /** Aborts the extraction (the caller is shutting down): everything written is removed, the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

async function statfsFreeBytes(dir: string): Promise<number> {
  const fsStats = await statfs(dir);
  return fsStats.bavail * fsStats.bsize;
}

/**
 * Extracts zipPath into destDir (which must not exist; its parent is created once the archive
 * passed every check), after the same inspection as `inspectArchive` and a free-space check:
 * the total uncompressed size plus `limits.freeSpaceMarginBytes` must be free beside destDir. Files get mode 0o755 when the
 * archive marks them executable (any x bit in the external attributes), else 0o644 (less umask).
 * @returns the archive's manifest, once destDir holds the whole build.
 * @throws ArchiveRejection for a hostile, damaged or non-Unreal archive, DISK_FULL, WRITE_FAILED;
 *   nothing is left on disk.
 */
export async function extractArchive(zipPath: string, destDir: string, limits: ArchiveLimits, options: ExtractOptions = {}): Promise<ArchiveManifest> {
  const dest = resolve(destDir);
  const { zipfile, entries } = await readCentralDirectory(zipPath, limits);
  try {
    const checked = checkEntries(entries, limits);
    const manifest = manifestOf(checked);
    const parent = dirname(dest);
    if (await exists(dest)) throw new Error(`extractArchive: ${dest} already exists`);
    // Measured on the nearest folder that exists, so a refused archive creates no folder either.
    const free = await (options.freeBytes ?? statfsFreeBytes)(await nearestExisting(parent));
    const needed = manifest.totalBytes + limits.freeSpaceMarginBytes;
    if (free < needed) {
      throw new ArchiveRejection(
        'DISK_FULL',
        `the server has too little free disk to extract the build: it needs ${formatBytes(manifest.totalBytes)} (plus ${formatBytes(limits.freeSpaceMarginBytes)} to spare) and ${formatBytes(free)} is free`,
      );
    }
    options.signal?.throwIfAborted();
    // The first folder this call creates (undefined when parent existed): removed on failure too.
    const createdTop = await mkdir(parent, { recursive: true });
    const temp = await mkdtemp(join(parent, `.${basename(dest)}.extracting-`));
    try {
      await writeEntries(zipPath, zipfile, entries, checked, temp, manifest.totalBytes, options);
      await rename(temp, dest);
    } catch (err) {
      await rm(createdTop ?? temp, { recursive: true, force: true });
      throw err;
    }
    return manifest;
  } finally {
    zipfile.close();
  }
}

/** path, or its nearest ancestor that exists. */
async function nearestExisting(path: string): Promise<string> {
  let current = path;
  while (!(await exists(current)) && dirname(current) !== current) current = dirname(current);
  return current;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

async function writeEntries(
  zipPath: string,
  zipfile: ZipFile,
  entries: readonly Entry[],
  checked: readonly ArchiveEntry[],
  root: string,
  bytesTotal: number,
  options: ExtractOptions,
): Promise<void> {
  const made = new Set<string>([root]);
  // One level at a time: Node 20's recursive mkdir reports a full disk (ENOSPC) as ENOENT, which
  // would name the wrong cause; each level is under root, which exists.
  const makeDir = async (dir: string): Promise<void> => {
    if (made.has(dir)) return;
    await makeDir(dirname(dir));
    try {
      await mkdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    made.add(dir);
  };
  const progress = { bytesDone: 0, bytesTotal };
  for (const [i, entry] of checked.entries()) {
    options.signal?.throwIfAborted();
    const raw = entries[i];
    if (raw === undefined) throw new Error('extractArchive: entry lists differ');
    // The guards already refused '..' and absolute names; this keeps the invariant local.
    const target = resolve(root, ...entry.path.split('/'));
    if (!target.startsWith(root + sep)) throw new ArchiveRejection('UNSAFE_ENTRY', `entry ${quoteEntryName(raw.fileName)} escapes the archive`);
    try {
      if (entry.isDirectory) {
        await makeDir(target);
        continue;
      }
      await makeDir(dirname(target));
      await writeEntry(zipPath, zipfile, raw, entry, target, progress, options);
    } catch (err) {
      throw extractionError(err, raw.fileName);
    }
  }
}

/** Streams one entry to target, checking its byte count and CRC-32 against the central directory. */
async function writeEntry(
  zipPath: string,
  zipfile: ZipFile,
  raw: Entry,
  entry: ArchiveEntry,
  target: string,
  progress: ExtractProgress,
  options: ExtractOptions,
): Promise<void> {
  const data = await openEntryData(zipPath, zipfile, raw);
  const sink = createWriteStream(target, { flags: 'wx', mode: entry.executable ? 0o755 : 0o644, highWaterMark: 1024 * 1024 });
  await pipeline([...data, checkedEntryData(entry, raw.fileName, progress, options.onProgress), sink], { signal: options.signal });
}
