// An entry's data read through our checks, for extraction and for the control plane's scan
// alike: its byte count and CRC-32 against the central directory, progress as bytes go by, and
// the objection for whatever fails on the way (a read, an inflate, a write).
import { Transform } from 'node:stream';
import { crc32 } from 'node:zlib';
import { ArchiveRejection, quoteEntryName } from './archive-rejection';
import { type ArchiveEntry } from './entry-guards';

export interface ExtractProgress {
  /** Bytes of entry data checked (and, when extracting, written) so far. */
  bytesDone: number;
  /** Bytes the whole archive expands to. */
  bytesTotal: number;
}

/** Yauzl's complaints about an entry's data, as this entry's objection. */
const TRUNCATED = /^(unexpected EOF|invalid local file header signature|file data overflows file bounds)/;

/** The objection for an error met while reading, inflating or writing `entry`. */
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
 * Passes an entry's (inflated) data on while counting it against the central directory's size
 * (more is refused at once, so a lying entry cannot fill a disk) and checking its CRC-32 at the end.
 */
export function checkedEntryData(entry: ArchiveEntry, fileName: string, progress: ExtractProgress, onProgress?: (progress: ExtractProgress) => void): Transform {
  let seen = 0;
  let crc = 0;
  const name = quoteEntryName(fileName);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > entry.uncompressedSize) {
        callback(new ArchiveRejection('CORRUPT', `entry ${name} holds more data than its header declares`));
        return;
      }
      crc = crc32(chunk, crc);
      progress.bytesDone += chunk.length;
      onProgress?.({ ...progress });
      callback(null, chunk);
    },
    flush(callback) {
      if (seen !== entry.uncompressedSize) callback(new ArchiveRejection('CORRUPT', `entry ${name} holds less data than its header declares`));
      else if (crc !== entry.crc32) callback(new ArchiveRejection('CORRUPT', `entry ${name} is damaged: its checksum (CRC-32) does not match`));
      else callback();
    },
  });
}
