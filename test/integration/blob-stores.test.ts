// The blob store's contract run against both implementations: the local folder, and S3 on a real
// S3-compatible server (OpenStack Swift's s3api, started for this file: test/support/s3-server.ts).
// Then what only object storage does: multipart uploads past one part, an upload interrupted and
// resumed after the parts already sent, a failed one aborted, abandoned uploads swept, a delete
// racing a write of the same bytes, and presigned GETs with Range from a plain HTTP client.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortMultipartUploadCommand, CreateMultipartUploadCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListPartsCommand, type S3Client } from '@aws-sdk/client-s3';
import { createLogger } from '@pixelfleet/common';
import { BlobTooLargeError, LocalBlobStore, S3BlobStore, createS3Client, partBytesFor, type BlobStore, type ByteRange } from '@pixelfleet/control-plane/test-support';
import { startS3Server, type S3TestServer } from '../support/s3-server';

const MIB = 1024 ** 2;
const log = createLogger('silent');
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const chunksOf = (...parts: (string | Buffer)[]) => Readable.from(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
const keyOf = (prefix: string, digest: string) => `${prefix}sha256/${digest.slice(0, 2)}/${digest}`;

async function readAll(store: BlobStore, digest: string, range?: ByteRange): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of await store.read(digest, range)) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

let root: string;
let s3: S3TestServer;
let files = 0;
const stores: BlobStore[] = [];
const clients: S3Client[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'pf-blob-stores-'));
  s3 = await startS3Server();
}, 60_000);

afterAll(async () => {
  for (const store of stores) store.close();
  for (const client of clients) client.destroy();
  await s3?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** A file of `data` in the temp folder (a build's download, as the pipeline hands it to adopt). */
function fileOf(data: Buffer): string {
  files += 1;
  const path = join(root, `file-${files}.zip`);
  writeFileSync(path, data);
  return path;
}

interface S3StoreOptions {
  partBytes?: number;
  uploadConcurrency?: number;
  now?: () => number;
  /** Called with the store's client before use (tests add middleware to it). */
  withClient?: (client: S3Client, store: S3BlobStore) => void;
}

/** An S3 store on a new bucket of the Swift server, parts of 5 MiB (S3's least) unless told. */
async function s3Store(o: S3StoreOptions & { bucket?: string; prefix?: string } = {}): Promise<{ store: S3BlobStore; bucket: string; prefix: string; client: S3Client }> {
  const bucket = o.bucket ?? (await s3.createBucket());
  const prefix = o.prefix ?? 'pixelfleet/';
  const client = createS3Client({ endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true });
  clients.push(client);
  const store = new S3BlobStore({
    client,
    bucket,
    prefix,
    partBytes: o.partBytes ?? 5 * MIB,
    uploadConcurrency: o.uploadConcurrency ?? 2,
    presignSeconds: 60,
    spoolDir: mkdtempSync(join(root, 'spool-')),
    ...(o.now === undefined ? {} : { now: o.now }),
    log,
  });
  o.withClient?.(client, store);
  stores.push(store);
  return { store, bucket, prefix, client };
}

const implementations: [string, () => Promise<BlobStore>][] = [
  ['the local folder', () => Promise.resolve(new LocalBlobStore(mkdtempSync(join(root, 'local-'))))],
  ['S3 (Swift s3api)', async () => (await s3Store()).store],
];

describe.each(implementations)('BlobStore contract: %s', (_name, open) => {
  it('stores streamed chunks under the sha256 of all their bytes and reads them back exactly', async () => {
    const store = await open();
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256));
    const blob = await store.write(chunksOf(bytes.subarray(0, 5), bytes.subarray(5, 65_536), bytes.subarray(65_536)), 1_000_000);
    expect(blob).toEqual({ sha256: sha(bytes), size: bytes.length });
    expect(await store.has(blob.sha256)).toBe(true);
    expect((await readAll(store, blob.sha256)).equals(bytes)).toBe(true);
  });

  it('stores an empty blob, one of exactly maxBytes, and the same content twice under one name', async () => {
    const store = await open();
    expect(await store.write(chunksOf(), 10)).toEqual({ sha256: sha(Buffer.alloc(0)), size: 0 });
    expect(await readAll(store, sha(Buffer.alloc(0)))).toEqual(Buffer.alloc(0));
    expect((await store.write(chunksOf('12345', '67890'), 10)).size).toBe(10);
    const a = await store.write(chunksOf('same'), 100);
    expect(await store.write(chunksOf('sa', 'me'), 100)).toEqual(a);
  });

  it('refuses a blob past maxBytes with BlobTooLargeError and stores nothing; a failing source fails the write', async () => {
    const store = await open();
    await expect(store.write(chunksOf('12345678', '12345678'), 10)).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(await store.has(sha(Buffer.from('1234567812345678')))).toBe(false);
    let pulls = 0;
    const failing: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: () => (++pulls === 1 ? Promise.resolve({ value: Buffer.from('partial'), done: false }) : Promise.reject(new Error('upload connection reset'))),
      }),
    };
    await expect(store.write(failing, 100)).rejects.toThrow('upload connection reset');
    expect(await store.has(sha(Buffer.from('partial')))).toBe(false);
  });

  it('reads a range: bytes start..end inclusive, the first and the last byte, an end past the blob clipped', async () => {
    const store = await open();
    const whole = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));
    const { sha256 } = await store.write(chunksOf(whole), 1_000_000);
    expect(await readAll(store, sha256, { start: 0, end: 0 })).toEqual(whole.subarray(0, 1));
    expect(await readAll(store, sha256, { start: 70_000, end: 140_123 })).toEqual(whole.subarray(70_000, 140_124));
    expect(await readAll(store, sha256, { start: 199_999, end: 199_999 })).toEqual(whole.subarray(199_999));
    expect(await readAll(store, sha256, { start: 100, end: 10_000_000 })).toEqual(whole.subarray(100));
    await expect(store.read(sha256, { start: 2, end: 1 })).rejects.toThrow('not a byte range');
  });

  it('rejects the read of a missing blob, and names that are not digests', async () => {
    const store = await open();
    await expect(store.read('a'.repeat(64))).rejects.toThrow();
    expect(await store.has('a'.repeat(64))).toBe(false);
    for (const bad of ['../../etc/passwd', 'A'.repeat(64), '']) {
      await expect(Promise.resolve().then(() => store.has(bad)), bad).rejects.toThrow('not a sha256 digest');
      await expect(Promise.resolve().then(() => store.read(bad)), bad).rejects.toThrow('not a sha256 digest');
    }
  });

  it('removes a blob (a missing one is no error)', async () => {
    const store = await open();
    const { sha256 } = await store.write(chunksOf('to be deleted'), 100);
    await store.remove(sha256);
    expect(await store.has(sha256)).toBe(false);
    await store.remove(sha256);
    await expect(store.read(sha256)).rejects.toThrow();
  });

  it('adopts a hashed file under its digest (the file is gone), keeps one already stored, and refuses a wrong size', async () => {
    const store = await open();
    const data = Buffer.from('PK\x03\x04 a build archive'.repeat(500));
    const path = fileOf(data);
    await store.adopt(path, { sha256: sha(data), size: data.length });
    expect(existsSync(path)).toBe(false);
    expect((await readAll(store, sha(data))).equals(data)).toBe(true);
    const again = fileOf(data);
    await store.adopt(again, { sha256: sha(data), size: data.length });
    expect(existsSync(again)).toBe(false);
    const short = fileOf(Buffer.from('twelve bytes'));
    await expect(store.adopt(short, { sha256: sha(Buffer.from('twelve bytes')), size: 13 })).rejects.toThrow(`adopt: ${short} holds 12 bytes, not the 13 stated`);
    expect(existsSync(short)).toBe(true);
  });
});

describe('the local folder has no direct URL: the control plane serves its bytes', () => {
  it('directUrl is undefined', async () => {
    const store = new LocalBlobStore(mkdtempSync(join(root, 'local-')));
    const { sha256 } = await store.write(chunksOf('x'), 10);
    expect(await store.directUrl(sha256)).toBeUndefined();
  });
});

/** A client hook that closes the store once it has sent `parts` upload parts: a shutdown or a crash mid-upload. */
function closeAfterParts(parts: number): (client: S3Client, store: S3BlobStore) => void {
  let sent = 0;
  return (client, store) =>
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'UploadPartCommand' && ++sent === parts) store.close();
        return out;
      },
      { step: 'initialize' },
    );
}

describe('S3: multipart uploads', () => {
  it('uploads a file larger than one part in parts (ETag "-3"), with its sha256 as metadata, and reads it back whole', async () => {
    const { store, bucket, prefix, client } = await s3Store();
    const data = randomBytes(12 * MIB);
    const digest = sha(data);
    await store.adopt(fileOf(data), { sha256: digest, size: data.length });
    expect(store.lastUpload).toEqual({ partsSent: 3, partsResumed: 0 });
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(prefix, digest) }));
    expect([head.ContentLength, head.ETag?.endsWith('-3"'), head.Metadata?.sha256]).toEqual([data.length, true, digest]);
    expect(sha(await readAll(store, digest))).toBe(digest);
    expect(sha(await readAll(store, digest, { start: 5 * MIB - 10, end: 10 * MIB + 9 }))).toBe(sha(data.subarray(5 * MIB - 10, 10 * MIB + 10)));
  });

  it('resumes an upload the store was closed in the middle of: only the parts not yet sent go, and nothing is left over', async () => {
    const bucket = await s3.createBucket();
    const data = randomBytes(16 * MIB);
    const digest = sha(data);
    const path = fileOf(data);
    const { store: first, prefix, client } = await s3Store({
      bucket,
      uploadConcurrency: 1,
      // A shutdown (or a crash) after the second of four parts.
      withClient: closeAfterParts(2),
    });
    await expect(first.adopt(path, { sha256: digest, size: data.length })).rejects.toThrow();
    expect(existsSync(path)).toBe(true);
    const { Uploads = [] } = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: keyOf(prefix, digest) }));
    expect(Uploads).toHaveLength(1);
    const { Parts = [] } = await client.send(new ListPartsCommand({ Bucket: bucket, Key: keyOf(prefix, digest), UploadId: Uploads[0]!.UploadId }));
    expect(Parts.map((p) => [p.PartNumber, p.Size])).toEqual([
      [1, 5 * MIB],
      [2, 5 * MIB],
    ]);

    const { store: second } = await s3Store({ bucket, prefix });
    await second.adopt(path, { sha256: digest, size: data.length });
    expect(second.lastUpload).toEqual({ partsSent: 2, partsResumed: 2 });
    expect(existsSync(path)).toBe(false);
    expect(sha(await readAll(second, digest))).toBe(digest);
    expect((await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads ?? []).toEqual([]);
  });

  it('starts over when the parts left were cut to another size (partSizeMiB changed between runs)', async () => {
    const bucket = await s3.createBucket();
    const data = randomBytes(13 * MIB);
    const digest = sha(data);
    const path = fileOf(data);
    const { store: first, prefix, client } = await s3Store({
      bucket,
      uploadConcurrency: 1,
      withClient: closeAfterParts(1),
    });
    await expect(first.adopt(path, { sha256: digest, size: data.length })).rejects.toThrow();
    const { store: second } = await s3Store({ bucket, prefix, partBytes: 6 * MIB });
    await second.adopt(path, { sha256: digest, size: data.length });
    expect(second.lastUpload).toEqual({ partsSent: 3, partsResumed: 0 });
    expect(sha(await readAll(second, digest))).toBe(digest);
    expect((await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads ?? []).toEqual([]);
  });

  it('aborts an upload that failed for another reason than a close (nothing would resume it) and keeps the file', async () => {
    const { store, bucket, prefix, client } = await s3Store({
      uploadConcurrency: 1,
      withClient: (c) =>
        c.middlewareStack.add(
          (next, context) => async (args) => {
            if (context.commandName === 'UploadPartCommand' && (args.input as { PartNumber?: number }).PartNumber === 2) throw new Error('the store refused part 2');
            return next(args);
          },
          { step: 'initialize' },
        ),
    });
    const data = randomBytes(11 * MIB);
    const path = fileOf(data);
    await expect(store.adopt(path, { sha256: sha(data), size: data.length })).rejects.toThrow('the store refused part 2');
    expect(existsSync(path)).toBe(true);
    expect((await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads ?? []).toEqual([]);
  });

  it('starts a new upload when its own vanished while it ran (aborted by the abandoned-upload sweep of another process)', async () => {
    const other = s3.client();
    clients.push(other);
    let parts = 0;
    const { store, bucket, prefix, client } = await s3Store({
      uploadConcurrency: 1,
      withClient: (c) =>
        c.middlewareStack.add(
          (next, context) => async (args) => {
            const input = args.input as { Bucket: string; Key: string; UploadId: string };
            if (context.commandName === 'UploadPartCommand' && ++parts === 2) await other.send(new AbortMultipartUploadCommand(input));
            return next(args);
          },
          { step: 'initialize' },
        ),
    });
    const data = randomBytes(11 * MIB);
    const digest = sha(data);
    await store.adopt(fileOf(data), { sha256: digest, size: data.length });
    expect(store.lastUpload).toEqual({ partsSent: 3, partsResumed: 0 });
    expect(sha(await readAll(store, digest))).toBe(digest);
    expect((await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads ?? []).toEqual([]);
  });

  it('sweepAbandoned aborts incomplete uploads older than the age given (a crash left them) and keeps newer ones', async () => {
    let now = Date.now();
    const { store, bucket, prefix, client } = await s3Store({ now: () => now });
    const key = keyOf(prefix, sha(Buffer.from('never finished')));
    await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    expect(await store.sweepAbandoned()).toBe(0);
    now += 25 * 3600_000;
    expect(await store.sweepAbandoned()).toBe(1);
    expect((await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads ?? []).toEqual([]);
  });

  it('raises the part size so that no object needs more than 10,000 parts (24 GiB in 16 MiB parts: 1,536)', () => {
    expect(partBytesFor(24 * 1024 * MIB, 16 * MIB)).toBe(16 * MIB);
    expect(partBytesFor(500 * 1024 * MIB, 16 * MIB)).toBe(52 * MIB);
    expect(partBytesFor(1 * MIB, 1)).toBe(5 * MIB);
  });
});

describe('S3: a delete racing a write of the same bytes', () => {
  it('a remove issued while a write of the digest is under way (after it found the object there) is followed by the write storing it again', async () => {
    const content = Buffer.from('identical engine log bytes');
    const digest = sha(content);
    let removal: Promise<void> | undefined;
    let armed = false;
    const { store } = await s3Store({
      withClient: (c, s) =>
        c.middlewareStack.add(
          (next, context) => async (args) => {
            const out = await next(args);
            // The write's existence check has answered "there": the retention sweep deletes it now.
            if (armed && context.commandName === 'HeadObjectCommand') {
              armed = false;
              removal = s.remove(digest);
            }
            return out;
          },
          { step: 'initialize' },
        ),
    });
    await store.write(chunksOf(content), 1000);
    armed = true;
    await store.write(chunksOf(content), 1000);
    expect(removal).toBeDefined();
    await removal;
    expect(await store.has(digest)).toBe(true);
    expect(await readAll(store, digest)).toEqual(content);
  });
});

describe('S3: presigned GET, as an agent downloads', () => {
  it('serves the whole object and a Range (206 with Content-Range) to a plain HTTP client without credentials', async () => {
    const { store } = await s3Store();
    const data = randomBytes(11 * MIB);
    const digest = sha(data);
    await store.adopt(fileOf(data), { sha256: digest, size: data.length });
    const url = await store.directUrl(digest);
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('60');
    const whole = await fetch(url);
    expect([whole.status, whole.headers.get('content-length')]).toEqual([200, String(data.length)]);
    expect(sha(Buffer.from(await whole.arrayBuffer()))).toBe(digest);
    const resumed = await fetch(url, { headers: { range: `bytes=${7 * MIB}-` } });
    expect([resumed.status, resumed.headers.get('content-range')]).toEqual([206, `bytes ${7 * MIB}-${data.length - 1}/${data.length}`]);
    expect(Buffer.from(await resumed.arrayBuffer()).equals(data.subarray(7 * MIB))).toBe(true);
  });

  it('refuses a presigned URL whose signature was tampered with, and one for another key', async () => {
    const { store } = await s3Store();
    const { sha256 } = await store.write(chunksOf('secret build'), 100);
    const url = new URL(await store.directUrl(sha256));
    const signature = url.searchParams.get('X-Amz-Signature')!;
    url.searchParams.set('X-Amz-Signature', `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`);
    expect((await fetch(url)).status).toBe(403);
    const other = new URL(await store.directUrl(sha256));
    other.pathname = other.pathname.replace(sha256, 'b'.repeat(64)).replace(`/${sha256.slice(0, 2)}/`, '/bb/');
    expect((await fetch(other)).status).toBe(403);
  });
});

describe('S3: the spool folder of write()', () => {
  it('is empty after writes, whether they succeeded or not', async () => {
    const { store } = await s3Store();
    await store.write(chunksOf('a log'), 100);
    await expect(store.write(chunksOf('far too long for the cap'), 5)).rejects.toBeInstanceOf(BlobTooLargeError);
    const spool = (store as unknown as { o: { spoolDir: string } }).o.spoolDir;
    expect(readdirSync(spool)).toEqual([]);
  });
});
