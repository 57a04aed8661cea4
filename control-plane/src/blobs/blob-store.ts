// Content-addressed blob storage (builds, log files) in a local folder. Writes stream to a
// temp file while hashing, then rename into place, so a crash never leaves a partial blob.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, renameSync, rmSync, existsSync } from 'node:fs';
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

export interface BlobStore {
  /** Streams chunks into a new blob; throws BlobTooLargeError past maxBytes. */
  write(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob>;
  read(sha256: string): Readable;
  has(sha256: string): boolean;
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
      await once(out, 'finish');
      const sha256 = hash.digest('hex');
      const final = this.pathOf(sha256);
      mkdirSync(join(final, '..'), { recursive: true });
      renameSync(tmp, final);
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

  read(sha256: string): Readable {
    return createReadStream(this.pathOf(sha256));
  }

  has(sha256: string): boolean {
    return existsSync(this.pathOf(sha256));
  }

  private pathOf(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error('not a sha256 digest');
    return join(this.root, 'sha256', sha256.slice(0, 2), sha256);
  }
}
