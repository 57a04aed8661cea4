// Extraction of a build archive behind the same guards as inspection: free disk checked first,
// entries streamed one at a time into a temp folder beside the destination, every entry's
// CRC-32 and byte count verified as it is written, then one rename makes the build appear whole.
// Any failure removes everything written: a rejected archive leaves nothing on disk.
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat, statfs } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import { type Entry, type ZipFile } from 'yauzl';
import { ArchiveRejection, quoteEntryName } from './archive-rejection';
import { type ArchiveLimits } from './archive-limits';
import { formatBytes } from './byte-size';
import { checkEntries, type ArchiveEntry } from './entry-guards';
import { manifestOf, type ArchiveManifest } from './inspect-archive';
import { openEntryStream, readCentralDirectory } from './zip-reader';

export interface ExtractProgress {
  /** Bytes written so far. */
  bytesDone: number;
  /** Bytes the whole archive expands to. */
  bytesTotal: number;
}

export interface ExtractOptions {
  /** Called as bytes are written (once per chunk, up to every 64 KiB). */
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

/** Yauzl's complaints about an entry's data, as this entry's objection. */
const TRUNCATED = /^(unexpected EOF|invalid local file header signature|file data overflows file bounds)/;

/** The objection for an error met while extracting `entry` (a read, inflate or write failure). */
export function extractionError(err: unknown, entry: string): unknown {
  if (err instanceof ArchiveRejection || (err instanceof Error && err.name === 'AbortError')) return err;
  const e = err as NodeJS.ErrnoException;
  const named = `entry ${quoteEntryName(entry)}`;
  if (e.code === 'ENOSPC' || e.code === 'EDQUOT') {
    return new ArchiveRejection('DISK_FULL', 'the server ran out of disk space while extracting the build', { cause: err });
  }
  if (typeof e.message === 'string') {
    if (e.message.startsWith('too many bytes in the stream')) {
      return new ArchiveRejection('CORRUPT', `${named} holds more data than its header declares`, { cause: err });
    }
    if (e.message.startsWith('not enough bytes in the stream')) {
      return new ArchiveRejection('CORRUPT', `${named} holds less data than its header declares`, { cause: err });
    }
    if (TRUNCATED.test(e.message)) return new ArchiveRejection('CORRUPT', `the archive is truncated or damaged at ${named}`, { cause: err });
  }
  if (typeof e.code === 'string' && e.code.startsWith('Z_')) {
    return new ArchiveRejection('CORRUPT', `${named} is damaged: its compressed data cannot be read`, { cause: err });
  }
  if (e.syscall !== undefined) {
    return new ArchiveRejection('WRITE_FAILED', `the server could not write the extracted build (${e.code ?? 'I/O error'})`, { cause: err });
  }
  // Anything else (a throwing progress callback, a bug) is not the archive's fault: passed on as is.
  return err;
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
      await writeEntries(zipfile, entries, checked, temp, manifest.totalBytes, options);
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
  zipfile: ZipFile,
  entries: readonly Entry[],
  checked: readonly ArchiveEntry[],
  root: string,
  bytesTotal: number,
  options: ExtractOptions,
): Promise<void> {
  const made = new Set<string>([root]);
  const makeDir = async (dir: string) => {
    if (made.has(dir)) return;
    await mkdir(dir, { recursive: true });
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
      await writeEntry(zipfile, raw, entry, target, progress, options);
    } catch (err) {
      throw extractionError(err, raw.fileName);
    }
  }
}

/** Streams one entry to target, checking its byte count and CRC-32 against the central directory. */
async function writeEntry(
  zipfile: ZipFile,
  raw: Entry,
  entry: ArchiveEntry,
  target: string,
  progress: ExtractProgress,
  options: ExtractOptions,
): Promise<void> {
  let written = 0;
  let crc = 0;
  const name = quoteEntryName(raw.fileName);
  const verify = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      written += chunk.length;
      // yauzl counts inflated bytes too; this also covers stored entries and keeps the rule here.
      if (written > entry.uncompressedSize) {
        callback(new ArchiveRejection('CORRUPT', `entry ${name} holds more data than its header declares`));
        return;
      }
      crc = crc32(chunk, crc);
      progress.bytesDone += chunk.length;
      options.onProgress?.({ ...progress });
      callback(null, chunk);
    },
    flush(callback) {
      if (written !== entry.uncompressedSize) callback(new ArchiveRejection('CORRUPT', `entry ${name} holds less data than its header declares`));
      else if (crc !== entry.crc32) callback(new ArchiveRejection('CORRUPT', `entry ${name} is damaged: its checksum (CRC-32) does not match`));
      else callback();
    },
  });
  const source = await openEntryStream(zipfile, raw);
  const sink = createWriteStream(target, { flags: 'wx', mode: entry.executable ? 0o755 : 0o644 });
  await pipeline(source, verify, sink, { signal: options.signal });
}
