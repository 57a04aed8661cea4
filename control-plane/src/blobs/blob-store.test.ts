import { createHash } from 'node:crypto';
import type * as NodeFs from 'node:fs';
import { type WriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BlobTooLargeError, LocalBlobStore, type ByteRange } from './blob-store';

// The store's temp-file streams, captured so a test can wait until each one has really
// closed (its file opened and released) before looking at the temp folder.
const streams = vi.hoisted(() => [] as WriteStream[]);
vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof NodeFs>();
  const createWriteStream: typeof actual.createWriteStream = (...args: Parameters<typeof actual.createWriteStream>) => {
    const s = actual.createWriteStream(...args);
    streams.push(s);
    return s;
  };
  return { ...actual, default: { ...actual, createWriteStream }, createWriteStream };
});

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pf-blobs-'));
  streams.length = 0;
});

afterEach(async () => {
  await streamsSettled();
  rmSync(root, { recursive: true, force: true });
});

/** Waits until every temp-file stream the store opened has closed. */
async function streamsSettled(): Promise<void> {
  for (const s of streams) if (!s.closed) await once(s, 'close');
}

/** The parts as an async stream of chunks, one chunk per part. */
function chunksOf(...parts: (string | Uint8Array)[]): AsyncIterable<Uint8Array> {
  return Readable.from(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
}

/** An async source built from a pull function: each next() calls pull for the next chunk. */
function source(pull: () => Uint8Array): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => ({
      // A throw inside the executor rejects the promise, as a failing upload would.
      next: () => new Promise<IteratorResult<Uint8Array>>((resolve) => resolve({ value: pull(), done: false })),
    }),
  };
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

async function readAll(store: LocalBlobStore, digest: string, range?: ByteRange): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of await store.read(digest, range)) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

describe('LocalBlobStore.write', () => {
  it('streams the chunks into a blob named by the sha256 of all its bytes', async () => {
    const store = new LocalBlobStore(root);
    const whole = Buffer.from('hello, streaming world\n'.repeat(1_000));
    const blob = await store.write(chunksOf(whole.subarray(0, 5), whole.subarray(5, 9_000), whole.subarray(9_000)), 1_000_000);
    expect(blob).toEqual({ sha256: sha(whole), size: whole.length });
    expect(await store.has(blob.sha256)).toBe(true);
    const path = join(root, 'sha256', blob.sha256.slice(0, 2), blob.sha256);
    expect(readFileSync(path)).toEqual(whole);
  });

  it('reads back exactly the bytes written, binary included', async () => {
    const store = new LocalBlobStore(root);
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256));
    const blob = await store.write(chunksOf(bytes.subarray(0, 65_536), bytes.subarray(65_536)), bytes.length);
    expect((await readAll(store, blob.sha256)).equals(bytes)).toBe(true);
  });

  it('stores an empty blob', async () => {
    const store = new LocalBlobStore(root);
    const blob = await store.write(chunksOf(), 10);
    expect(blob).toEqual({ sha256: sha(Buffer.alloc(0)), size: 0 });
    expect(await readAll(store, blob.sha256)).toEqual(Buffer.alloc(0));
  });

  it('accepts a blob of exactly maxBytes', async () => {
    const store = new LocalBlobStore(root);
    const blob = await store.write(chunksOf('12345', '67890'), 10);
    expect(blob.size).toBe(10);
  });

  it('writes the same content twice to the same name', async () => {
    const store = new LocalBlobStore(root);
    const a = await store.write(chunksOf('same'), 100);
    const b = await store.write(chunksOf('sa', 'me'), 100);
    expect(b).toEqual(a);
    expect(readdirSync(join(root, 'sha256', a.sha256.slice(0, 2)))).toEqual([a.sha256]);
  });

  it('leaves nothing in the temp folder after a successful write', async () => {
    const store = new LocalBlobStore(root);
    await store.write(chunksOf('abc'), 100);
    expect(streams).toHaveLength(1);
    await streamsSettled();
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
  });

  it('rejects a blob past maxBytes with BlobTooLargeError and stops pulling chunks', async () => {
    const store = new LocalBlobStore(root);
    let pulled = 0;
    const endless = source(() => {
      pulled += 1;
      return new Uint8Array(4);
    });
    await expect(store.write(endless, 10)).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(pulled).toBe(3);
    expect(existsSync(join(root, 'sha256'))).toBe(false);
  });

  it('leaves no temp file behind when the blob is too large (limit crossed on a later chunk)', async () => {
    const store = new LocalBlobStore(root);
    await expect(store.write(chunksOf('12345678', '12345678'), 10)).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(streams).toHaveLength(1);
    await streamsSettled();
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
  });

  it('leaves no temp file behind when the blob is too large (first chunk already too big)', async () => {
    const store = new LocalBlobStore(root);
    await expect(store.write(chunksOf(new Uint8Array(100)), 10)).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(streams).toHaveLength(1);
    await streamsSettled();
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
  });

  it('leaves no temp file behind when the source fails part way', async () => {
    const store = new LocalBlobStore(root);
    let pulls = 0;
    const failing = source(() => {
      pulls += 1;
      if (pulls === 1) return Buffer.from('partial');
      throw new Error('upload connection reset');
    });
    await expect(store.write(failing, 100)).rejects.toThrow('upload connection reset');
    expect(streams).toHaveLength(1);
    await streamsSettled();
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
  });
});

describe('LocalBlobStore lookups', () => {
  it('has() is false for an unknown digest', async () => {
    const store = new LocalBlobStore(root);
    expect(await store.has('0'.repeat(64))).toBe(false);
  });

  it('refuses names that are not sha256 digests (no path escapes)', async () => {
    const store = new LocalBlobStore(root);
    for (const bad of ['../../etc/passwd', 'A'.repeat(64), '0'.repeat(63), '']) {
      expect(() => store.has(bad), bad).toThrow('not a sha256 digest');
      await expect(store.read(bad), bad).rejects.toThrow('not a sha256 digest');
    }
  });
});

describe('LocalBlobStore.read with a range', () => {
  // Bytes start..end themselves: the store contract, run on both stores (test/integration/blob-stores.test.ts).
  it('refuses a range that is not one (negative, reversed, fractional)', async () => {
    const store = new LocalBlobStore(root);
    const { sha256 } = await store.write(chunksOf('abc'), 10);
    for (const bad of [{ start: -1, end: 2 }, { start: 2, end: 1 }, { start: 0.5, end: 2 }]) {
      await expect(store.read(sha256, bad), JSON.stringify(bad)).rejects.toThrow('not a byte range');
    }
  });

  it('rejects the read of a missing blob before any stream is handed out', async () => {
    const store = new LocalBlobStore(root);
    await expect(store.read('a'.repeat(64), { start: 0, end: 1 })).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('LocalBlobStore.adopt', () => {
  const fileOf = (dir: string, name: string, data: Buffer) => {
    const path = join(dir, name);
    writeFileSync(path, data);
    return path;
  };

  it('moves a hashed file in under its digest without copying it (same inode), and the file is gone', async () => {
    const store = new LocalBlobStore(join(root, 'store'));
    const data = Buffer.from('PK\x03\x04 a build archive'.repeat(500));
    const path = fileOf(root, 'download.zip', data);
    const inode = statSync(path).ino;
    await store.adopt(path, { sha256: sha(data), size: data.length });
    expect(existsSync(path)).toBe(false);
    expect((await readAll(store, sha(data))).equals(data)).toBe(true);
    expect(statSync(join(root, 'store', 'sha256', sha(data).slice(0, 2), sha(data))).ino).toBe(inode);
  });

  it('keeps the blob already stored under the digest and removes the file', async () => {
    const store = new LocalBlobStore(join(root, 'store'));
    const data = Buffer.from('same archive');
    await store.write(chunksOf(data), 100);
    const stored = join(root, 'store', 'sha256', sha(data).slice(0, 2), sha(data));
    const inode = statSync(stored).ino;
    const path = fileOf(root, 'again.zip', data);
    await store.adopt(path, { sha256: sha(data), size: data.length });
    expect(existsSync(path)).toBe(false);
    expect(statSync(stored).ino).toBe(inode);
  });

  it('refuses a file whose size is not the one stated, leaving it where it is', async () => {
    const store = new LocalBlobStore(join(root, 'store'));
    const data = Buffer.from('twelve bytes');
    const path = fileOf(root, 'short.zip', data);
    await expect(store.adopt(path, { sha256: sha(data), size: 13 })).rejects.toThrow(`adopt: ${path} holds 12 bytes, not the 13 stated`);
    expect(existsSync(path)).toBe(true);
    expect(await store.has(sha(data))).toBe(false);
  });

  it('copies across file systems (EXDEV) through write(), which checks the digest', async () => {
    // /dev/shm is its own tmpfs on Linux: a rename from there into the store fails EXDEV.
    expect(statSync('/dev/shm').dev).not.toBe(statSync(root).dev);
    const shm = mkdtempSync('/dev/shm/pf-adopt-');
    try {
      const store = new LocalBlobStore(join(root, 'store'));
      const data = Buffer.from('from another file system');
      const path = fileOf(shm, 'build.zip', data);
      await store.adopt(path, { sha256: sha(data), size: data.length });
      expect(existsSync(path)).toBe(false);
      expect((await readAll(store, sha(data))).equals(data)).toBe(true);

      const lie = fileOf(shm, 'lie.zip', data);
      const wrong = sha(Buffer.from('something else'));
      await expect(store.adopt(lie, { sha256: wrong, size: data.length })).rejects.toThrow(`adopt: ${lie} hashes to ${sha(data)}, not the ${wrong} stated`);
      expect(await store.has(wrong)).toBe(false);
    } finally {
      rmSync(shm, { recursive: true, force: true });
    }
  });
});

describe('LocalBlobStore.sweepAbandoned', () => {
  it('removes temp files a crash left (untouched for longer than the age given) and keeps newer ones', async () => {
    const now = Date.UTC(2026, 0, 1);
    const store = new LocalBlobStore(root, () => now);
    const left = join(root, 'tmp', 'left-by-a-crash');
    const recent = join(root, 'tmp', 'being-written');
    writeFileSync(left, 'partial');
    writeFileSync(recent, 'partial');
    utimesSync(left, new Date(now - 2 * 3600_000), new Date(now - 2 * 3600_000));
    utimesSync(recent, new Date(now - 600_000), new Date(now - 600_000));
    expect(await store.sweepAbandoned(3600_000)).toBe(1);
    expect(readdirSync(join(root, 'tmp'))).toEqual(['being-written']);
  });
});
