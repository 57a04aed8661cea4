// One file into one S3 object, resumable: a file up to one part goes in a single PutObject; a
// larger one in a multipart upload whose parts are read from the file one at a time (each checked
// by Content-MD5). An upload that a crash or a close() interrupted is found again by its key
// (ListMultipartUploads) and continued after the parts it already holds (ListParts); an upload
// that failed for any other reason is aborted, since nothing will come back to finish it.
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { Logger } from 'pino';

/** S3's own limits: at most 10,000 parts, each at least 5 MiB (but the last) and at most 5 GiB. */
export const S3_MAX_PARTS = 10_000;
export const S3_MIN_PART_BYTES = 5 * 1024 ** 2;
export const S3_MAX_PART_BYTES = 5 * 1024 ** 3;

export interface UploadFileOptions {
  client: S3Client;
  bucket: string;
  key: string;
  /** The file; it must hold `size` bytes whose SHA-256 is `sha256` (stored as the object's `x-amz-meta-sha256`). */
  path: string;
  size: number;
  sha256: string;
  /** Bytes per part (`blobs.s3.partSizeMiB`); raised when the file would need more than 10,000 parts. */
  partBytes: number;
  /** Parts uploaded at once; each holds one part in memory while it is sent. */
  concurrency: number;
  /** Aborted by the store's close(): the upload stops where it stands and is kept for a resume. */
  signal: AbortSignal;
  log: Logger;
}

/** What an upload did: parts sent now, and parts a previous run had sent and this one kept. */
export interface UploadOutcome {
  partsSent: number;
  partsResumed: number;
}

/** The part size an object of `size` bytes gets: `wanted`, raised to stay within 10,000 parts, in whole MiB. */
export function partBytesFor(size: number, wanted: number): number {
  const atLeast = Math.max(wanted, S3_MIN_PART_BYTES, Math.ceil(size / S3_MAX_PARTS));
  return Math.min(S3_MAX_PART_BYTES, Math.ceil(atLeast / 1024 ** 2) * 1024 ** 2);
}

/** Uploads the file to `key` (see the file comment). @throws the S3 error, or an AbortError after close(). */
export async function uploadFile(o: UploadFileOptions): Promise<UploadOutcome> {
  const partBytes = partBytesFor(o.size, o.partBytes);
  if (o.size <= partBytes) {
    const body = await readPart(o.path, 0, o.size);
    await o.client.send(
      new PutObjectCommand({ Bucket: o.bucket, Key: o.key, Body: body, ContentLength: o.size, ContentMD5: md5(body).base64, Metadata: { sha256: o.sha256 } }),
      { abortSignal: o.signal },
    );
    return { partsSent: 1, partsResumed: 0 };
  }
  try {
    return await uploadInParts(o, partBytes);
  } catch (err) {
    // The upload vanished under us (aborted by the abandoned-upload sweep of this or another
    // control plane, as it resumed after a long stop): once more, from a new upload.
    if (errorName(err) !== 'NoSuchUpload' || o.signal.aborted) throw err;
    o.log.info({ key: o.key }, 'the upload to object storage was aborted elsewhere; starting it again');
    return uploadInParts(o, partBytes);
  }
}

async function uploadInParts(o: UploadFileOptions, partBytes: number): Promise<UploadOutcome> {
  const partCount = Math.ceil(o.size / partBytes);
  const found = await findUpload(o);
  let resumed: string | undefined;
  let kept = new Map<number, string>();
  if (found !== undefined) {
    const held = await keptParts(o, found, partBytes, partCount);
    if (held === undefined) {
      // Its parts were cut another way (partSizeMiB changed): they cannot be reused.
      await abort(o, found);
    } else {
      resumed = found;
      kept = held;
    }
  }
  const uploadId = resumed ?? (await createUpload(o));
  if (kept.size > 0) o.log.info({ key: o.key, uploadId, partsKept: kept.size, parts: partCount }, 'resuming an interrupted upload to object storage');
  const etags = new Map(kept);
  try {
    const missing = Array.from({ length: partCount }, (_, i) => i + 1).filter((n) => !etags.has(n));
    let next = 0;
    let failed = false;
    const worker = async (): Promise<void> => {
      // A failed part stops the others after the part each is sending.
      while (next < missing.length && !failed) {
        const partNumber = missing[next++]!;
        try {
          etags.set(partNumber, await sendPart(o, uploadId, partNumber, partBytes));
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    };
    // Every worker has stopped before the upload is completed or aborted.
    const settled = await Promise.allSettled(Array.from({ length: Math.min(o.concurrency, missing.length) }, worker));
    const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    try {
      await o.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: o.bucket,
          Key: o.key,
          UploadId: uploadId,
          MultipartUpload: { Parts: [...etags].sort(([a], [b]) => a - b).map(([PartNumber, ETag]) => ({ PartNumber, ETag })) },
        }),
        { abortSignal: o.signal },
      );
    } catch (err) {
      // Another process holding the same upload (the same content) may have completed it first.
      if (!(errorName(err) === 'NoSuchUpload' && (await objectSize(o)) === o.size)) throw err;
    }
    const stored = await objectSize(o);
    if (stored !== o.size) throw new Error(`object storage holds ${stored ?? 'no'} bytes under ${o.key} after the upload, not ${o.size}`);
    return { partsSent: missing.length, partsResumed: kept.size };
  } catch (err) {
    // Closing keeps the upload for the next run to resume; any other failure ends it here (an
    // upload that is gone already needs no abort).
    if (!o.signal.aborted && errorName(err) !== 'NoSuchUpload') {
      await abort(o, uploadId).catch((abortErr: unknown) => o.log.warn({ err: abortErr, key: o.key, uploadId }, 'an upload to object storage failed and could not be aborted; the abandoned-upload sweep removes it'));
    }
    throw err;
  }
}

/** The newest incomplete upload of exactly `key`, if any. */
async function findUpload(o: UploadFileOptions): Promise<string | undefined> {
  let newest: { uploadId: string; at: number } | undefined;
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  for (;;) {
    const page = await o.client.send(new ListMultipartUploadsCommand({ Bucket: o.bucket, Prefix: o.key, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }), { abortSignal: o.signal });
    for (const u of page.Uploads ?? []) {
      if (u.Key !== o.key || u.UploadId === undefined) continue;
      const at = u.Initiated?.getTime() ?? 0;
      if (newest === undefined || at >= newest.at) newest = { uploadId: u.UploadId, at };
    }
    if (page.IsTruncated !== true) return newest?.uploadId;
    keyMarker = page.NextKeyMarker;
    uploadIdMarker = page.NextUploadIdMarker;
  }
}

/**
 * The parts of an earlier upload worth keeping, by number → ETag: each must have the size this
 * cut gives it and, when its ETag is an MD5 (no server-side KMS encryption), the MD5 of the file's
 * bytes there. undefined when the upload was cut into parts of another size.
 */
async function keptParts(o: UploadFileOptions, uploadId: string, partBytes: number, partCount: number): Promise<Map<number, string> | undefined> {
  const kept = new Map<number, string>();
  let marker: string | undefined;
  for (;;) {
    const page = await o.client.send(new ListPartsCommand({ Bucket: o.bucket, Key: o.key, UploadId: uploadId, PartNumberMarker: marker }), { abortSignal: o.signal });
    for (const p of page.Parts ?? []) {
      const n = p.PartNumber ?? 0;
      if (n < 1 || n > partCount || p.ETag === undefined) continue;
      if (p.Size !== partLength(n, partBytes, o.size)) return undefined;
      const etag = p.ETag.replace(/"/g, '').toLowerCase();
      if (/^[0-9a-f]{32}$/.test(etag) && md5(await readPart(o.path, (n - 1) * partBytes, p.Size)).hex !== etag) continue;
      kept.set(n, p.ETag);
    }
    if (page.IsTruncated !== true) return kept;
    marker = page.NextPartNumberMarker;
  }
}

async function createUpload(o: UploadFileOptions): Promise<string> {
  const created = await o.client.send(new CreateMultipartUploadCommand({ Bucket: o.bucket, Key: o.key, Metadata: { sha256: o.sha256 } }), { abortSignal: o.signal });
  if (created.UploadId === undefined) throw new Error(`object storage started an upload to ${o.key} without an upload id`);
  return created.UploadId;
}

/** Reads part `n` of the file and sends it; resolves with its ETag. */
async function sendPart(o: UploadFileOptions, uploadId: string, partNumber: number, partBytes: number): Promise<string> {
  const body = await readPart(o.path, (partNumber - 1) * partBytes, partLength(partNumber, partBytes, o.size));
  const sum = md5(body);
  const sent = await o.client.send(
    new UploadPartCommand({ Bucket: o.bucket, Key: o.key, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length, ContentMD5: sum.base64 }),
    { abortSignal: o.signal },
  );
  if (sent.ETag === undefined) throw new Error(`object storage returned no ETag for part ${partNumber} of ${o.key}`);
  return sent.ETag;
}

function abort(o: UploadFileOptions, uploadId: string): Promise<unknown> {
  return o.client.send(new AbortMultipartUploadCommand({ Bucket: o.bucket, Key: o.key, UploadId: uploadId }));
}

/** The stored object's size, or undefined when there is none. */
async function objectSize(o: UploadFileOptions): Promise<number | undefined> {
  try {
    return (await o.client.send(new HeadObjectCommand({ Bucket: o.bucket, Key: o.key }), { abortSignal: o.signal })).ContentLength;
  } catch (err) {
    if (httpStatus(err) === 404) return undefined;
    throw err;
  }
}

function partLength(partNumber: number, partBytes: number, size: number): number {
  return Math.min(partBytes, size - (partNumber - 1) * partBytes);
}

/** `length` bytes of the file from `offset`, read whole (an SDK retry sends the same buffer again). */
async function readPart(path: string, offset: number, length: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await file.read(buffer, filled, length - filled, offset + filled);
      if (bytesRead === 0) throw new Error(`${path} ended at ${offset + filled} bytes, before the ${offset + length} the upload needs`);
      filled += bytesRead;
    }
    return buffer;
  } finally {
    await file.close();
  }
}

function md5(data: Buffer): { hex: string; base64: string } {
  const digest = createHash('md5').update(data).digest();
  return { hex: digest.toString('hex'), base64: digest.toString('base64') };
}

/** An SDK error's HTTP status, when it has one. */
export function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

/** An SDK error's S3 code (`NoSuchUpload`, `NoSuchBucket`, …). */
export function errorName(err: unknown): string | undefined {
  return (err as { name?: string } | undefined)?.name;
}
