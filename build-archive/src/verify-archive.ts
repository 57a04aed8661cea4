// The control plane's scan of a build archive: the same inspection as inspectArchive, then every
// entry's data read, inflated and checked (byte count, CRC-32) without writing it anywhere. The
// control plane never runs a build, so extracting it only to delete it would cost a second copy
// of the build's size on disk and its writes; the agents extract (extractArchive) with the same checks.
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ArchiveLimits } from './archive-limits';
import { checkedEntryData, extractionError, type ExtractProgress } from './entry-data';
import { checkEntries } from './entry-guards';
import { manifestOf, type ArchiveManifest } from './inspect-archive';
import { openEntryData, readCentralDirectory } from './zip-reader';

export interface VerifyOptions {
  /** Called as entry data is checked (once per chunk, up to every 1 MiB). */
  onProgress?: (progress: ExtractProgress) => void;
  /** Stops the scan; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Reads zipPath's central directory, checks every entry against the guards and `limits`, finds
 * the packaged Unreal app, then reads every file's data through the same checks as extraction.
 * @returns the archive's manifest.
 * @throws ArchiveRejection for a hostile, damaged or non-Unreal archive, naming the entry.
 */
export async function verifyArchive(zipPath: string, limits: ArchiveLimits, options: VerifyOptions = {}): Promise<ArchiveManifest> {
  const { zipfile, entries } = await readCentralDirectory(zipPath, limits);
  try {
    const checked = checkEntries(entries, limits);
    const manifest = manifestOf(checked);
    const progress: ExtractProgress = { bytesDone: 0, bytesTotal: manifest.totalBytes };
    for (const [i, entry] of checked.entries()) {
      options.signal?.throwIfAborted();
      const raw = entries[i];
      if (raw === undefined) throw new Error('verifyArchive: entry lists differ');
      if (entry.isDirectory) continue;
      try {
        const data = await openEntryData(zipPath, zipfile, raw);
        const drop = new Writable({ highWaterMark: 1024 * 1024, write: (_chunk, _encoding, callback) => callback() });
        await pipeline([...data, checkedEntryData(entry, raw.fileName, progress, options.onProgress), drop], { signal: options.signal });
      } catch (err) {
        // Nothing is written: a file system error reading the archive is the server's fault, not
        // the archive's, and goes on as it is (the pipeline logs it and answers its own objection).
        if ((err as NodeJS.ErrnoException).syscall !== undefined) throw err;
        throw extractionError(err, raw.fileName);
      }
    }
    return manifest;
  } finally {
    zipfile.close();
  }
}
