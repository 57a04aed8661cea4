// Content-addressed blob storage (builds, log files): the interface both stores implement, and the
// local folder (the default). Writes stream to a temp file while hashing, then fsync and rename
// into place, so a crash never leaves a partial blob. The S3 store is s3-blob-store.ts.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, createWriteStream, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
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

/** How long a write's or an upload's leftovers are kept before sweepAbandoned takes them (default 24 h). */
export const DEFAULT_ABANDONED_AFTER_MS = 24 * 3600 * 1000;

/**
 * Where blobs live, by SHA-256: a folder (LocalBlobStore) or an S3 bucket (S3BlobStore). What an
 * object store can do: a streamed put (multipart upload), a streamed get, a ranged get (`GetObject`
 * with `Range: bytes=start-end`), an existence check (`HeadObject`), a delete and a signed URL.
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
   * Streams the blob, or only `range` of it (never buffered whole), once the store has answered:
   * a missing blob rejects (ENOENT for the folder, NoSuchKey for S3). The caller checks the range
   * against the blob's size: a range past the end yields the bytes that exist.
   */
  read(sha256: string, range?: ByteRange): Promise<Readable>;
  has(sha256: string): Promise<boolean>;
  /**
   * Deletes a blob (`DeleteObject`); a missing one is not an error. The caller makes sure no record
   * names it any more, in the same turn of the event loop as that check, and calls remove in that
   * turn: the deletion is registered before remove returns its promise, so a write or adopt of the
   * same digest that has not resolved yet stores the blob again after it.
   */
  remove(sha256: string): Promise<void>;
  /**
   * A URL any HTTP client may GET the blob from, `Range` included, without credentials of its own,
   * valid for a short while (S3: a presigned GetObject, `blobs.s3.presignSeconds`); undefined when
   * the store has none (the folder: the control plane serves the bytes itself).
   */
  directUrl(sha256: string): Promise<string | undefined>;
  /**
   * Deletes what interrupted writes left behind more than `olderThanMs` ago (the folder: temp
   * files; S3: incomplete multipart uploads) and resolves with how many. Run by the retention sweep.
   */
  sweepAbandoned(olderThanMs?: number): Promise<number>;
  /** Stops requests in flight (an upload stops where it stands and resumes at the next adopt). Idempotent. */
  close(): void;
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
  /**
   * `now`: epoch ms, for sweepAbandoned's age of temp files. Real time by default, not the app's
   * clock: it is compared with file modification times, which the file system writes in real time.
   */
  constructor(
    private readonly root: string,
    private readonly now: () => number = Date.now,
  ) {
    mkdirSync(join(root, 'tmp'), { recursive: true });
  }

  async write(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob> {
    const tmp = join(this.root, 'tmp', randomBytes(12).toString('hex'));
    const blob = await spoolHashed(chunks, maxBytes, tmp);
    try {
      const final = this.pathOf(blob.sha256);
      const dir = join(final, '..');
      mkdirSync(dir, { recursive: true });
      // The bytes reach the disk before the name does, and the name before the caller records the
      // blob: after a power loss a recorded blob is whole, never an empty file under its digest.
      syncPath(tmp);
      renameSync(tmp, final);
      syncDirectory(dir);
      return blob;
    } catch (err) {
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

  async read(sha256: string, range?: ByteRange): Promise<Readable> {
    checkRange(range);
    // Opened first, so a missing blob rejects here rather than failing a stream already answered.
    const file = await open(this.pathOf(sha256), 'r');
    return file.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  has(sha256: string): Promise<boolean> {
    return Promise.resolve(existsSync(this.pathOf(sha256)));
  }

  remove(sha256: string): Promise<void> {
    // Synchronous: the file is gone before a write of the same digest can rename its own in.
    rmSync(this.pathOf(sha256), { force: true });
    return Promise.resolve();
  }

  directUrl(_sha256: string): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }

  sweepAbandoned(olderThanMs = DEFAULT_ABANDONED_AFTER_MS): Promise<number> {
    return Promise.resolve(removeOldFiles(join(this.root, 'tmp'), this.now() - olderThanMs));
  }

  close(): void {
    // Nothing to stop: every operation is a file-system call.
  }

  private pathOf(sha256: string): string {
    checkDigest(sha256);
    return join(this.root, 'sha256', sha256.slice(0, 2), sha256);
  }
}

/**
 * Removes the files of `dir` last modified before `cutoff` (epoch ms) and returns how many: temp
 * files a crash left. A write in flight touches its temp file with every chunk, so it is never one.
 */
export function removeOldFiles(dir: string, cutoff: number): number {
  let removed = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    try {
      if (statSync(path).mtimeMs >= cutoff) continue;
      rmSync(path, { force: true });
      removed += 1;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return removed;
}

/** Throws unless `sha256` is a lower-case hex SHA-256 digest (so no name escapes the store). */
export function checkDigest(sha256: string): void {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error('not a sha256 digest');
}

/** Throws RangeError unless `range` is absent or whole, non-negative, inclusive offsets in order. */
export function checkRange(range: ByteRange | undefined): void {
  if (range && !(Number.isSafeInteger(range.start) && Number.isSafeInteger(range.end) && range.start >= 0 && range.end >= range.start)) {
    throw new RangeError(`not a byte range: ${range.start}-${range.end}`);
  }
}

/**
 * Writes chunks to a new file at path (refusing one that exists) while hashing them, at most maxBytes
 * (BlobTooLargeError past it): what both stores do with a blob whose digest is not known yet. The
 * file is the caller's once this resolves; on failure it is removed.
 */
export async function spoolHashed(chunks: AsyncIterable<Uint8Array>, maxBytes: number, path: string, mode?: number): Promise<StoredBlob> {
  const out = createWriteStream(path, { flags: 'wx', ...(mode === undefined ? {} : { mode }) });
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
    return { sha256: hash.digest('hex'), size };
  } catch (err) {
    // The file is opened in the background: wait for the stream to close, or the open
    // could land after the removal and leave an empty temp file behind.
    out.destroy();
    if (!out.closed) await once(out, 'close');
    rmSync(path, { force: true });
    throw err;
  }
}
