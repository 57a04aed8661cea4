// The blob store in an S3-compatible bucket (`blobs.s3`): each blob is the object
// `<prefix>sha256/<ab>/<digest>`. Known digests (a build's archive) upload straight from their
// file, resumably (s3-multipart-upload.ts); a stream of unknown digest (an engine log) is spooled
// to a local temp file while it is hashed, then uploaded the same way. Agents fetch archives from
// presigned GetObject URLs (directUrl), so build bytes never pass through the control plane.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Logger } from 'pino';
import { checkDigest, checkRange, DEFAULT_ABANDONED_AFTER_MS, removeOldFiles, spoolHashed, type BlobStore, type ByteRange, type StoredBlob } from './blob-store';
import { errorName, httpStatus, uploadFile, type UploadOutcome } from './s3-multipart-upload';

/** How the control plane reaches the bucket (config `blobs.s3`). */
export interface S3Connection {
  /** The service's URL (`https://s3.example.com`); unset: AWS's own endpoint for `region`. */
  endpoint?: string | undefined;
  region: string;
  /** Both or neither; neither: the AWS SDK's default chain (environment, profile, instance role). */
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
  /** `https://host/bucket/key` rather than `https://bucket.host/key` (most self-hosted servers). */
  forcePathStyle: boolean;
}

/** An S3 client for the connection: checksums only where S3 requires them (other servers reject the SDK's newer ones), 3 attempts per request. */
export function createS3Client(c: S3Connection): S3Client {
  return new S3Client({
    region: c.region,
    ...(c.endpoint === undefined ? {} : { endpoint: c.endpoint }),
    forcePathStyle: c.forcePathStyle,
    ...(c.accessKeyId !== undefined && c.secretAccessKey !== undefined ? { credentials: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey } } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    // An answer that sends nothing for a minute is a failed attempt (as the build downloads' stall timeout).
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 60_000 },
  });
}

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /** Put before every key (`pixelfleet/`), to share a bucket; '' for none. */
  prefix: string;
  /** Bytes per multipart part (raised for files that would need more than 10,000). */
  partBytes: number;
  /** Parts uploaded at once. */
  uploadConcurrency: number;
  /** Lifetime of a presigned download URL, in seconds: only its start must fall inside it. */
  presignSeconds: number;
  /** Local folder for write()'s temp files (`<dataDir>/blob-spool`). */
  spoolDir: string;
  /** Epoch ms, against which incomplete uploads' `Initiated` times (the store's real clock) are aged; default Date.now. */
  now?: () => number;
  log: Logger;
}

export class S3BlobStore implements BlobStore {
  private readonly closing = new AbortController();
  /** One upload per digest at a time in this process: a second waits, then finds the object there. */
  private readonly uploading = new Map<string, Promise<unknown>>();
  /** Per digest, the last remove() issued (numbered by removeCount): kept while it runs, or while a write may compare with it. */
  private readonly removals = new Map<string, { seq: number; done: Promise<void>; settled: boolean }>();
  private removeCount = 0;
  private writesInFlight = 0;
  /** What the latest upload did (also logged): parts sent, and parts a previous run had sent. */
  lastUpload: UploadOutcome | undefined;

  constructor(private readonly o: S3BlobStoreOptions) {
    mkdirSync(o.spoolDir, { recursive: true });
  }

  /** Checks that the bucket answers to these credentials (`HeadBucket`). @throws an Error naming the bucket and the cause. */
  async check(): Promise<void> {
    try {
      await this.o.client.send(new HeadBucketCommand({ Bucket: this.o.bucket }), { abortSignal: this.closing.signal });
    } catch (err) {
      const status = httpStatus(err);
      const why =
        status === 404 ? 'the bucket does not exist' : status === 403 ? 'access denied (check accessKeyId / secretAccessKey and the bucket policy)' : `${errorName(err) ?? 'error'}: ${(err as Error).message}`;
      throw new Error(`object storage bucket ${this.o.bucket} cannot be used: ${why}`, { cause: err });
    }
  }

  async write(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob> {
    const tmp = join(this.o.spoolDir, randomBytes(12).toString('hex'));
    const blob = await spoolHashed(chunks, maxBytes, tmp, 0o600);
    try {
      await this.adopt(tmp, blob);
      return blob;
    } finally {
      rmSync(tmp, { force: true });
    }
  }

  async adopt(path: string, blob: StoredBlob): Promise<void> {
    checkDigest(blob.sha256);
    const size = (await stat(path)).size;
    if (size !== blob.size) throw new Error(`adopt: ${path} holds ${size} bytes, not the ${blob.size} stated`);
    this.writesInFlight += 1;
    try {
      for (;;) {
        const seen = this.removeCount;
        // A delete of this digest issued before this write lands first; the blob then goes up again.
        await this.removals.get(blob.sha256)?.done;
        await this.onePerDigest(blob.sha256, async () => {
          if (!(await this.has(blob.sha256))) await this.upload(path, blob);
        });
        // A delete issued while this write ran may land after it: then the blob is put once more.
        if ((this.removals.get(blob.sha256)?.seq ?? 0) <= seen) break;
      }
    } finally {
      this.writesInFlight -= 1;
      this.forgetRemovals();
    }
    rmSync(path, { force: true });
  }

  async read(sha256: string, range?: ByteRange): Promise<Readable> {
    checkRange(range);
    const answer = await this.o.client.send(
      new GetObjectCommand({ Bucket: this.o.bucket, Key: this.keyOf(sha256), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
      { abortSignal: this.closing.signal },
    );
    if (answer.Body === undefined) throw new Error(`object storage answered GetObject ${this.keyOf(sha256)} without a body`);
    // In Node the SDK's body is the response stream itself (an http.IncomingMessage).
    return answer.Body as unknown as Readable;
  }

  async has(sha256: string): Promise<boolean> {
    try {
      await this.o.client.send(new HeadObjectCommand({ Bucket: this.o.bucket, Key: this.keyOf(sha256) }), { abortSignal: this.closing.signal });
      return true;
    } catch (err) {
      if (httpStatus(err) === 404) return false;
      throw err;
    }
  }

  remove(sha256: string): Promise<void> {
    const key = this.keyOf(sha256);
    // Registered before the first await: a write of this digest not yet resolved sees it (adopt's loop).
    const removal = { seq: ++this.removeCount, done: Promise.resolve(), settled: false };
    const done = this.o.client
      .send(new DeleteObjectCommand({ Bucket: this.o.bucket, Key: key }), { abortSignal: this.closing.signal })
      .then(() => undefined)
      .finally(() => {
        removal.settled = true;
        this.forgetRemovals();
      });
    removal.done = done.catch(() => undefined);
    this.removals.set(sha256, removal);
    return done;
  }

  async directUrl(sha256: string): Promise<string> {
    return getSignedUrl(this.o.client, new GetObjectCommand({ Bucket: this.o.bucket, Key: this.keyOf(sha256) }), { expiresIn: this.o.presignSeconds });
  }

  async sweepAbandoned(olderThanMs = DEFAULT_ABANDONED_AFTER_MS): Promise<number> {
    const prefix = `${this.o.prefix}sha256/`;
    const cutoff = (this.o.now ?? Date.now)() - olderThanMs;
    let aborted = removeOldFiles(this.o.spoolDir, cutoff);
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.o.client.send(
        new ListMultipartUploadsCommand({ Bucket: this.o.bucket, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
        { abortSignal: this.closing.signal },
      );
      for (const u of page.Uploads ?? []) {
        if (u.Key === undefined || u.UploadId === undefined || (u.Initiated?.getTime() ?? 0) > cutoff) continue;
        // An upload this process is sending is not abandoned, however long it has run.
        if (this.uploading.has(u.Key.slice(u.Key.lastIndexOf('/') + 1))) continue;
        await this.o.client.send(new AbortMultipartUploadCommand({ Bucket: this.o.bucket, Key: u.Key, UploadId: u.UploadId }), { abortSignal: this.closing.signal });
        this.o.log.info({ key: u.Key, uploadId: u.UploadId, initiated: u.Initiated }, 'abandoned upload to object storage aborted');
        aborted += 1;
      }
      if (page.IsTruncated !== true) return aborted;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }

  close(): void {
    if (this.closing.signal.aborted) return;
    this.closing.abort(new Error('the blob store is closed'));
    // Its keep-alive sockets go too; requests after this fail at once on the aborted signal.
    this.o.client.destroy();
  }

  private async upload(path: string, blob: StoredBlob): Promise<void> {
    const key = this.keyOf(blob.sha256);
    this.lastUpload = await uploadFile({
      client: this.o.client,
      bucket: this.o.bucket,
      key,
      path,
      size: blob.size,
      sha256: blob.sha256,
      partBytes: this.o.partBytes,
      concurrency: this.o.uploadConcurrency,
      signal: this.closing.signal,
      log: this.o.log,
    });
    this.o.log.info({ key, bytes: blob.size, ...this.lastUpload }, 'blob stored in object storage');
  }

  /** Runs `task` once no other task of this digest runs (one upload of a digest at a time). */
  private async onePerDigest(sha256: string, task: () => Promise<void>): Promise<void> {
    for (let running = this.uploading.get(sha256); running !== undefined; running = this.uploading.get(sha256)) await running.catch(() => undefined);
    const mine = task();
    this.uploading.set(sha256, mine);
    try {
      await mine;
    } finally {
      this.uploading.delete(sha256);
    }
  }

  /** With no write in flight, a finished removal matters to nobody: its record goes (the map stays small). */
  private forgetRemovals(): void {
    if (this.writesInFlight > 0) return;
    for (const [sha256, removal] of this.removals) if (removal.settled) this.removals.delete(sha256);
  }

  private keyOf(sha256: string): string {
    checkDigest(sha256);
    return `${this.o.prefix}sha256/${sha256.slice(0, 2)}/${sha256}`;
  }
}
