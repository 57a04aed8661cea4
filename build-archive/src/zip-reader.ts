// Opens a build archive with yauzl and reads its central directory, never the file data: the
// one place that knows yauzl's options and turns its errors into objections.
import { createReadStream } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { Readable, type Transform } from 'node:stream';
import { createInflateRaw } from 'node:zlib';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { ArchiveRejection, quoteEntryName } from './archive-rejection';
import { type ArchiveLimits } from './archive-limits';
import { checkEntryCount, checkEntryName } from './entry-guards';

export interface CentralDirectory {
  zipfile: ZipFile;
  /** Every central-directory record, in archive order. */
  entries: Entry[];
}

const OPTIONS: yauzl.Options = {
  lazyEntries: true,
  autoClose: false,
  // A '\' in a name is refused rather than read as a folder separator (see checkEntryName).
  strictFileNames: true,
  validateEntrySizes: true,
  decodeStrings: true,
};

/** yauzl's own name checks, reported with our objection for the same name. */
const YAUZL_NAME_ERRORS = /^(?:absolute path|invalid relative path|invalid characters in fileName): ([\s\S]*)$/;

/**
 * Opens zipPath and reads its central directory; the caller closes `zipfile`.
 * @throws ArchiveRejection NOT_A_ZIP, LIMIT_EXCEEDED (entry count, before reading any record),
 *   UNSAFE_ENTRY, UNSUPPORTED_ENTRY or CORRUPT.
 */
export async function readCentralDirectory(zipPath: string, limits: ArchiveLimits): Promise<CentralDirectory> {
  const zipfile = await new Promise<ZipFile>((resolve, reject) => {
    yauzl.open(zipPath, OPTIONS, (err, zf) => (err ? reject(err) : resolve(zf)));
  }).catch(async (err: unknown) => {
    throw await notAZip(zipPath, err);
  });
  try {
    checkEntryCount(zipfile.entryCount, limits);
    const entries = await new Promise<Entry[]>((resolve, reject) => {
      const read: Entry[] = [];
      zipfile.on('entry', (entry: Entry) => {
        read.push(entry);
        zipfile.readEntry();
      });
      zipfile.once('end', () => resolve(read));
      zipfile.once('error', (err: Error) => reject(centralDirectoryError(err)));
      zipfile.readEntry();
    });
    return { zipfile, entries };
  } catch (err) {
    zipfile.close();
    throw err;
  }
}

/** Why a file that yauzl cannot open is not an archive, from its first bytes. */
async function notAZip(zipPath: string, cause: unknown): Promise<ArchiveRejection> {
  if ((cause as NodeJS.ErrnoException).code !== undefined) throw cause;
  const head = Buffer.alloc(512);
  const file = await openFile(zipPath, 'r');
  let size: number;
  let read: number;
  try {
    size = (await file.stat()).size;
    ({ bytesRead: read } = await file.read(head, 0, head.length, 0));
  } finally {
    await file.close();
  }
  const start = head.subarray(0, read);
  const text = start.toString('latin1').trimStart().toLowerCase();
  let objection: string;
  if (size === 0) objection = 'the file is empty, not a zip archive';
  else if (text.startsWith('<!doctype html') || text.startsWith('<html') || text.startsWith('<head') || text.startsWith('<body')) {
    objection = 'the file is an HTML page, not a zip archive';
  } else if (text.startsWith('<?xml')) objection = 'the file is an XML document (often a storage service\'s error page), not a zip archive';
  else if (start.length >= 4 && start.readUInt32LE(0) === 0x04034b50) objection = 'the archive is truncated: its end (the central directory) is missing';
  else objection = 'the file is not a zip archive';
  return new ArchiveRejection('NOT_A_ZIP', objection, { cause });
}

function centralDirectoryError(err: Error): ArchiveRejection {
  if (err instanceof ArchiveRejection) return err;
  const name = YAUZL_NAME_ERRORS.exec(err.message)?.[1];
  if (name !== undefined) {
    try {
      checkEntryName(name);
    } catch (rejection) {
      if (rejection instanceof ArchiveRejection) return rejection;
    }
    return new ArchiveRejection('UNSAFE_ENTRY', `entry ${quoteEntryName(name)} has an unsafe name`, { cause: err });
  }
  if (err.message === 'strong encryption is not supported') {
    return new ArchiveRejection('UNSUPPORTED_ENTRY', 'an entry is encrypted: upload the archive without a password', { cause: err });
  }
  if (err.message.startsWith('compressed/uncompressed size mismatch for stored file')) {
    return new ArchiveRejection('CORRUPT', 'the archive is damaged: an uncompressed entry declares two different sizes', { cause: err });
  }
  return new ArchiveRejection('CORRUPT', 'the archive is damaged: its central directory cannot be read', { cause: err });
}

/**
 * Bytes per read of an entry's data and per inflated chunk. yauzl's own entry stream reads 64 KiB
 * and inflates 16 KiB at a time, one thread-pool trip each: measured on a 1 GiB entry, 142 MiB/s
 * against 1.1 GiB/s with 1 MiB reads and chunks. The memory it costs is bounded per entry in flight.
 */
const ENTRY_DATA_CHUNK_BYTES = 1024 * 1024;

/**
 * An entry's data as the streams to pipe in order: the raw bytes read from zipPath (its local
 * header located and bounds-checked by yauzl), then the inflater for a deflated entry. The
 * caller counts the bytes and checks the CRC-32 (entry-data.ts): nothing here trusts the sizes.
 * Guards already refused every method but store and deflate.
 */
export async function openEntryData(zipPath: string, zipfile: ZipFile, entry: Entry): Promise<[Readable, ...Transform[]]> {
  const { fileDataStart } = await zipfile.readLocalFileHeaderPromise(entry, { minimal: true });
  const raw =
    entry.compressedSize === 0
      ? Readable.from([])
      : createReadStream(zipPath, { start: fileDataStart, end: fileDataStart + entry.compressedSize - 1, highWaterMark: ENTRY_DATA_CHUNK_BYTES });
  return entry.compressionMethod === 0 ? [raw] : [raw, createInflateRaw({ chunkSize: ENTRY_DATA_CHUNK_BYTES })];
}
