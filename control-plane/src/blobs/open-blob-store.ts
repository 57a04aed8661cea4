// The blob store the config names: an S3-compatible bucket (`blobs.s3`) or, by default, the
// folder `<dataDir>/blobs`; and the start-up check that tells an operator at once when the bucket
// cannot be used (the service still starts: viewers and running builds do not need it).
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ControlPlaneConfig } from '../config';
import { LocalBlobStore, type BlobStore } from './blob-store';
import { createS3Client, S3BlobStore } from './s3-blob-store';

/**
 * The store for the config. Leftovers are aged in real time, not on the app's clock: their ages
 * come from file modification times and the store's `Initiated` stamps, both real.
 */
export function openBlobStore(config: ControlPlaneConfig, log: Logger): BlobStore {
  const s3 = config.blobs.s3;
  if (s3 === undefined) return new LocalBlobStore(join(config.dataDir, 'blobs'));
  return new S3BlobStore({
    client: createS3Client(s3),
    bucket: s3.bucket,
    prefix: s3.prefix,
    partBytes: s3.partSizeMiB * 1024 ** 2,
    uploadConcurrency: s3.uploadConcurrency,
    presignSeconds: s3.presignSeconds,
    spoolDir: join(config.dataDir, 'blob-spool'),
    log,
  });
}

/** Where blobs go, for the start log line: `folder <path>` or `s3 <endpoint>/<bucket>/<prefix>` (no credential). */
export function blobStoreWhere(config: ControlPlaneConfig): string {
  const s3 = config.blobs.s3;
  if (s3 === undefined) return `folder ${join(config.dataDir, 'blobs')}`;
  return `s3 ${s3.endpoint ?? `aws:${s3.region}`}/${s3.bucket}/${s3.prefix}`;
}

/** Checks an S3 bucket once (HeadBucket) and logs the outcome; the folder needs no check. Never rejects. */
export async function checkBlobStore(blobs: BlobStore, where: string, log: Logger): Promise<void> {
  if (!(blobs instanceof S3BlobStore)) return;
  try {
    await blobs.check();
    log.info({ where }, 'object storage answers');
  } catch (err) {
    log.error({ err, where }, 'object storage cannot be used: builds cannot be saved or distributed and engine logs cannot be stored until it answers');
  }
}
