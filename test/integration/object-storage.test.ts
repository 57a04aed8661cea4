// The control plane on object storage (`blobs.s3`) against a real S3-compatible server (OpenStack
// Swift's s3api: test/support/s3-server.ts): a build submitted through the API is downloaded,
// scanned and saved into the bucket in parts; an agent's archive link answers 307 to a presigned
// URL of the store, which the agent's own build cache follows without its worker token, resuming
// a kept `.part` with Range; an engine log stored in the bucket goes with retention.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { gunzipSync, gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeadObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, ListPartsCommand, type S3Client } from '@aws-sdk/client-s3';
import { BuildCache } from '@pixelfleet/agent';
import { DEFAULT_ARCHIVE_LIMITS } from '@pixelfleet/build-archive';
import { createLogger, ManualClock } from '@pixelfleet/common';
import { startApiFixture, type ApiFixture } from '../api/api-fixture';
import { writeBuildZip } from '../support/build-zips';
import { sendZip } from '../support/local-server';
import { startS3Server, type S3TestServer } from '../support/s3-server';
import { startTestControlPlane } from '../support/control-plane';
import type { S3BlobStore } from '@pixelfleet/control-plane/test-support';
import { buildRecord } from '../support/seed';
import { seedLogFile, seedSessionHistory } from '../support/analytics-seed';

const MIB = 1024 ** 2;
const DAY_MS = 24 * 3600 * 1000;
const PREFIX = 'pixelfleet/';
const keyOf = (digest: string) => `${PREFIX}sha256/${digest.slice(0, 2)}/${digest}`;

let s3: S3TestServer;
let client: S3Client;
let bucket: string;
let files: string;
let fileServer: Server;
let fileOrigin: string;
let f: ApiFixture;
const clock = new ManualClock(Date.now());

beforeAll(async () => {
  s3 = await startS3Server();
  client = s3.client();
  bucket = await s3.createBucket();
  files = mkdtempSync(join(tmpdir(), 'pf-object-storage-'));
  fileServer = createServer((req, res) => sendZip(req, res, join(files, new URL(req.url ?? '/', 'http://x').pathname.slice(1))));
  await new Promise<void>((resolve) => fileServer.listen(0, '127.0.0.1', resolve));
  fileOrigin = `http://127.0.0.1:${(fileServer.address() as AddressInfo).port}`;
  f = await startApiFixture({ clock, overrides: { blobs: s3.blobsConfig(bucket, { prefix: PREFIX, partSizeMiB: 5, presignSeconds: 120 }), retention: { sessionDays: 10, logDays: 2 } } });
}, 60_000);

afterAll(async () => {
  await f?.close();
  client?.destroy();
  await s3?.stop();
  fileServer?.closeAllConnections();
  fileServer?.close();
  rmSync(files, { recursive: true, force: true });
});

describe('a build through the pipeline, saved to object storage', () => {
  let uploadId: string;
  let archive: Buffer;
  let sha256: string;
  let projectId: string;

  beforeAll(async () => {
    archive = readFileSync(await writeBuildZip(files, 'linux', { fileName: 'big.zip', pakBytes: 12 * MIB }));
    sha256 = createHash('sha256').update(archive).digest('hex');
    const a = await f.account();
    projectId = a.projectId;
    const res = await f.post('/projects/upload-file', { apiKey: a.apiKey, userId: a.userId, projectId, fileUrl: `${fileOrigin}/big.zip`, autoRelease: false });
    expect(res.statusCode).toBe(201);
    uploadId = res.json<{ uploadId: string }>().uploadId;
    await f.t.cp.builds.pipeline?.idle();
    expect(buildRecord(f.t.cp, uploadId).status).toBe('Ready');
  }, 60_000);

  it('stores the archive as one object of its size, in parts, named by its digest, and keeps no copy on disk', async () => {
    expect(buildRecord(f.t.cp, uploadId).archive).toMatchObject({ sha256, bytes: archive.length });
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(sha256) }));
    expect([head.ContentLength, head.Metadata?.sha256, /-3"$/.test(head.ETag ?? '')]).toEqual([archive.length, sha256, true]);
    const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: PREFIX }));
    expect(listed.Contents?.map((o) => o.Key)).toContain(keyOf(sha256));
    expect(() => statSync(join(f.t.dataDir, 'blobs', 'sha256', sha256.slice(0, 2), sha256))).toThrow();
    expect(f.t.logs.text()).toContain('"blobs":"s3 ');
    expect(f.t.logs.text()).not.toContain(s3.secretAccessKey);
  });

  describe("an agent's archive link", () => {
    let workerId: string;
    let workerToken: string;
    beforeAll(() => {
      ({ workerId, workerToken } = f.t.cp.registry.enroll({ hostname: 's3-worker', region: 'europe', slots: 1, agentVersion: 'test' }));
    });
    const link = () => f.t.cp.archiveLinks.issueArchiveLink({ workerId, uploadId, sha256 }).url;

    it('answers the worker 307 to a short-lived presigned URL of the store, and HEAD from the record', async () => {
      const res = await fetch(link(), { headers: { authorization: `Bearer ${workerToken}` }, redirect: 'manual' });
      expect([res.status, res.headers.get('cache-control')]).toEqual([307, 'private, no-store']);
      const location = new URL(res.headers.get('location') ?? '');
      expect([location.origin, location.pathname, location.searchParams.get('X-Amz-Expires')]).toEqual([s3.endpoint, `/${bucket}/${keyOf(sha256)}`, '120']);
      const ranged = await fetch(location, { headers: { range: 'bytes=0-3' } });
      expect([ranged.status, Buffer.from(await ranged.arrayBuffer()).toString('latin1')]).toEqual([206, 'PK\x03\x04']);
      const head = await fetch(link(), { method: 'HEAD', headers: { authorization: `Bearer ${workerToken}` }, redirect: 'manual' });
      expect([head.status, head.headers.get('content-length'), head.headers.get('etag')]).toEqual([200, String(archive.length), `"${sha256}"`]);
      expect(f.t.logs.text()).not.toContain(location.searchParams.get('X-Amz-Signature'));
    });

    it('sends no one to the store without the worker token the link names', async () => {
      const tries: Record<string, string>[] = [{}, { authorization: 'Bearer pfw_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG' }];
      for (const headers of tries) {
        const res = await fetch(link(), { headers, redirect: 'manual' });
        expect(res.status).not.toBe(307);
        expect(res.headers.get('location')).toBeNull();
      }
    });

    it("is downloaded by the agent's build cache from the store, resuming a kept .part with Range, and extracted", async () => {
      const dir = mkdtempSync(join(files, 'agent-'));
      mkdirSync(join(dir, 'builds'));
      // A download a restart cut after 7 MiB: the rest comes from the store.
      writeFileSync(join(dir, 'builds', `${uploadId}.zip.part`), archive.subarray(0, 7 * MIB));
      const cache = new BuildCache({
        dir: join(dir, 'builds'),
        maxBytes: 1024 ** 4,
        clock: new ManualClock(),
        log: createLogger('silent'),
        random: () => 0.5,
        limits: { ...DEFAULT_ARCHIVE_LIMITS, freeSpaceMarginBytes: 0 },
        workerToken: () => workerToken,
      });
      try {
        const record = await cache.prepare({ kind: 'prepareBuild', uploadId, projectId, downloadUrl: link(), sizeBytes: archive.length, sha256 });
        expect(record).toMatchObject({ uploadId, sha256, archiveBytes: archive.length });
      } finally {
        await cache.close();
      }
      const sent = f.t.logs.lines.filter((l) => l.includes('archive download sent to object storage')).map((l) => JSON.parse(l) as { workerId: string; range?: string });
      expect(sent.at(-1)).toMatchObject({ workerId, range: `bytes=${7 * MIB}-` });
    });
  });
});

describe('engine logs in object storage and retention', () => {
  it('a log file stored in the bucket is read back, and deleted from it with its record past retention.logDays', async () => {
    const a = await f.account();
    const sessionId = seedSessionHistory(f.t.cp, { projectId: a.projectId, statuses: [['Enqueued', clock.now() - 1000], ['Terminated', clock.now()]] });
    const text = `LogInit: Display: an engine log kept in object storage ${Date.now()}\n`;
    await seedLogFile(f.t.cp, { sessionId, projectId: a.projectId, fileName: 'App.log', text, uploadedAt: clock.now() });
    const digest = createHash('sha256').update(gzipSync(Buffer.from(text))).digest('hex');
    const stored: Buffer[] = [];
    for await (const chunk of await f.t.cp.blobs.read(digest)) stored.push(chunk as Buffer);
    expect(gunzipSync(Buffer.concat(stored)).toString('utf8')).toBe(text);
    expect((await client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(digest) }))).ContentLength).toBe(Buffer.concat(stored).length);
    clock.advance(3 * DAY_MS);
    const swept = await f.t.cp.retention.sweep();
    expect(swept).toMatchObject({ logFiles: 1, logBlobs: 1 });
    await expect(client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(digest) }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
    expect(await f.t.cp.blobs.has(digest)).toBe(false);
  });
});

describe('a control plane stopped while it saves a build to object storage', () => {
  it('continues the upload after the parts already sent when it starts again, and the build ends Ready', async () => {
    const restartBucket = await s3.createBucket();
    const overrides = { blobs: s3.blobsConfig(restartBucket, { prefix: PREFIX, partSizeMiB: 5, uploadConcurrency: 1 }) };
    const first = await startApiFixture({ overrides });
    const archive = readFileSync(await writeBuildZip(files, 'linux', { fileName: 'restart.zip', pakBytes: 40 * MIB }));
    const digest = createHash('sha256').update(archive).digest('hex');
    const a = await first.account();
    const res = await first.post('/projects/upload-file', { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, fileUrl: `${fileOrigin}/restart.zip`, autoRelease: false });
    expect(res.statusCode).toBe(201);
    const uploadId = res.json<{ uploadId: string }>().uploadId;
    const partsSent = async (): Promise<number> => {
      const { Uploads = [] } = await client.send(new ListMultipartUploadsCommand({ Bucket: restartBucket, Prefix: keyOf(digest) }));
      if (Uploads[0] === undefined) return 0;
      return (await client.send(new ListPartsCommand({ Bucket: restartBucket, Key: keyOf(digest), UploadId: Uploads[0].UploadId }))).Parts?.length ?? 0;
    };
    // Stopped (as for an upgrade) once two of its nine parts are in the bucket.
    await expect.poll(partsSent, { timeout: 30_000, interval: 5 }).toBeGreaterThanOrEqual(2);
    await first.t.stop();
    const kept = await partsSent();
    expect(kept).toBeGreaterThanOrEqual(2);
    expect(kept).toBeLessThan(9);

    const again = await startTestControlPlane({ dataDir: first.t.dataDir, overrides });
    try {
      await again.cp.builds.pipeline?.idle();
      expect(buildRecord(again.cp, uploadId).status).toBe('Ready');
      // A part whose bytes had all gone out when the first run stopped may still have landed after the count above.
      const { partsResumed, partsSent: sentNow } = (again.cp.blobs as S3BlobStore).lastUpload ?? { partsResumed: 0, partsSent: 0 };
      expect([partsResumed >= kept, partsResumed < 9, partsResumed + sentNow]).toEqual([true, true, 9]);
      expect(again.logs.text()).toContain('resuming an interrupted upload to object storage');
      const head = await client.send(new HeadObjectCommand({ Bucket: restartBucket, Key: keyOf(digest) }));
      expect(head.ContentLength).toBe(archive.length);
      const stored: Buffer[] = [];
      for await (const chunk of await again.cp.blobs.read(digest)) stored.push(chunk as Buffer);
      expect(createHash('sha256').update(Buffer.concat(stored)).digest('hex')).toBe(digest);
      expect((await client.send(new ListMultipartUploadsCommand({ Bucket: restartBucket, Prefix: PREFIX }))).Uploads ?? []).toEqual([]);
    } finally {
      await again.destroy();
    }
  }, 60_000);
});
