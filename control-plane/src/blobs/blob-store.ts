// Content-addressed blob storage (builds, log files) in a local folder. Writes stream to a
// temp file while hashing, then fsync and rename into place, so a crash never leaves a partial blob.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, createWriteStream, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import type { Readable } from 'node:stream';

export interface StoredBlob {
  sha256: string;
  size: number;
}

/** The blob was larger than the caller allowed. */
export class BlobTooLargeError extends Error {
  override readonly name = 'BlobTooLargeError';
}

/** Bytes `start` to `end` of a blob, both inclusive and counted from 0 (an HTTP `Range`'s numbers). */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Where blobs live, by SHA-256. Kept to what an S3-compatible object store can implement later:
 * a streamed put (multipart upload, keyed by the digest once known), a streamed get, a ranged
 * get (`GetObject` with `Range: bytes=start-end`) and an existence check (`HeadObject`).
 */
export interface BlobStore {
  /** Streams chunks into a new blob; throws BlobTooLargeError past maxBytes. */
  write(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob>;
  /**
   * Takes a whole file whose SHA-256 and size the caller computed as it wrote the file (a build's
   * download) and stores it under that digest without reading it again: the local store renames
   * it (copying only across file systems), an object store would upload it. The file is gone
   * afterwards; a blob already stored under the digest is kept as it is.
   */
  adopt(path: string, blob: StoredBlob): Promise<void>;
  /**
   * Streams the blob, or only `range` of it (never buffered whole). The caller checks the range
   * against the blob's size: a range past the end yields the bytes that exist. A missing blob
   * fails the stream with an error (ENOENT for this store).
   */
  read(sha256: string, range?: ByteRange): Readable;
  has(sha256: string): boolean;
  /**
   * Deletes a blob (`DeleteObject`); a missing one is not an error. The caller makes sure no record
   * names it any more, in the same turn of the event loop as that check.
   */
  remove(sha256: string): void;
}

function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync of a directory makes a rename durable; Windows cannot open a directory for it (the rename is journaled there). */
function syncDirectory(dir: string): void {
  try {
    syncPath(dir);
  } catch (err) {
    if (process.platform !== 'win32') throw err;
  }
}

export class LocalBlobStore implements BlobStore {
  constructor(private readonly root: string) {
    mkdirSync(join(root, 'tmp'), { recursive: true });
  }

  async write(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob> {
    const tmp = join(this.root, 'tmp', randomBytes(12).toString('hex'));
    const out = createWriteStream(tmp, { flags: 'wx' });
    const hash = createHash('sha256');
    let size = 0;
    try {
      for await (const chunk of chunks) {
        size += chunk.byteLength;
        if (size > maxBytes) throw new BlobTooLargeError(`blob exceeds ${maxBytes} bytes`);
        hash.update(chunk);
        if (!out.write(chunk)) await once(out, 'drain');
      }
      out.end();
      await once(out, 'close');
      const sha256 = hash.digest('hex');
      const final = this.pathOf(sha256);
      const dir = join(final, '..');
      mkdirSync(dir, { recursive: true });
      // The bytes reach the disk before the name does, and the name before the caller records the
      // blob: after a power loss a recorded blob is whole, never an empty file under its digest.
      syncPath(tmp);
      renameSync(tmp, final);
      syncDirectory(dir);
      return { sha256, size };
    } catch (err) {
      // The file is opened in the background: wait for the stream to close, or the open
      // could land after the removal and leave an empty temp file behind.
      out.destroy();
      if (!out.closed) await once(out, 'close');
      rmSync(tmp, { force: true });
      throw err;
    }
  }

  async adopt(path: string, blob: StoredBlob): Promise<void> {
    const final = this.pathOf(blob.sha256);
    const size = statSync(path).size;
    if (size !== blob.size) throw new Error(`adopt: ${path} holds ${size} bytes, not the ${blob.size} stated`);
    if (existsSync(final)) {
      rmSync(path, { force: true });
      return;
    }
    const dir = join(final, '..');
    mkdirSync(dir, { recursive: true });
    syncPath(path);
    try {
      renameSync(path, final);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      // Another file system: copied through write(), which hashes what it copies.
      const copied = await this.write(createReadStream(path), blob.size);
      if (copied.sha256 !== blob.sha256) throw new Error(`adopt: ${path} hashes to ${copied.sha256}, not the ${blob.sha256} stated`);
      rmSync(path, { force: true });
      return;
    }
    syncDirectory(dir);
  }

  read(sha256: string, range?: ByteRange): Readable {
    if (range && !(Number.isSafeInteger(range.start) && Number.isSafeInteger(range.end) && range.start >= 0 && range.end >= range.start)) {
      throw new RangeError(`not a byte range: ${range.start}-${range.end}`);
    }
    return createReadStream(this.pathOf(sha256), range ? { start: range.start, end: range.end } : {});
  }

  has(sha256: string): boolean {
    return existsSync(this.pathOf(sha256));
  }

  remove(sha256: string): void {
    rmSync(this.pathOf(sha256), { force: true });
  }

  private pathOf(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error('not a sha256 digest');
    return join(this.root, 'sha256', sha256.slice(0, 2), sha256);
  }
}
