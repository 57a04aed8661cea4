// The shared archive download against a real local HTTP server, in its neutral terms: the hop
// policy per hop, expected size and SHA-256 (a wrong hash downloads once more), `assumed` ranges,
// the failure count reset by progress, stalls on the ManualClock, and every counted byte on disk
// when an attempt breaks (the offset a resume starts from is the file's size).
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { ArchiveDownloadError, downloadArchive, type ArchiveDownloadOptions, type DownloadFailure, type DownloadLog, type HopPolicy } from './index';

const MIB = 1024 * 1024;
const ZIP_HEAD = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const zipLike = (size: number) => Buffer.concat([ZIP_HEAD, randomBytes(size - 4)]);
const anyHop: HopPolicy = (raw) => Promise.resolve({ ok: true, url: new URL(raw) });
const quiet: DownloadLog = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-archive-download-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A real HTTP server on 127.0.0.1, closed when the test ends; `ranges` and `paths` record each request. */
async function serve(handler: Handler) {
  const ranges: (string | undefined)[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    ranges.push(req.headers.range);
    paths.push(req.url ?? '');
    handler(req, res, ranges.length);
  });
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ranges, paths };
}

/** Writes the head of an answer to a GET (206 from its Range's start, else 200); never says Accept-Ranges. Returns the start. */
function answerHead(req: IncomingMessage, res: ServerResponse, body: Buffer): number {
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const start = m ? Number(m[1]) : 0;
  if (m) res.writeHead(206, { 'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` });
  else res.writeHead(200, { 'content-length': body.length });
  return start;
}

/** Sends the body from the Range's start (as the agent test server: no Accept-Ranges). */
function sendPlain(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  res.end(body.subarray(answerHead(req, res, body)));
}

/** Sends `count` bytes from the Range's start, then cuts the connection. */
function sendCut(req: IncomingMessage, res: ServerResponse, body: Buffer, count: number): void {
  const start = answerHead(req, res, body);
  res.write(body.subarray(start, start + count), () => res.socket?.destroy());
}

function options(url: string, extra: Partial<ArchiveDownloadOptions> = {}): ArchiveDownloadOptions {
  const clock = new ManualClock();
  return {
    url,
    destPath: join(dir, 'b.zip'),
    hopPolicy: anyHop,
    maxRedirects: 5,
    ranges: 'assumed',
    clock,
    random: () => 0.5,
    log: quiet,
    // Each backoff runs at once on the manual clock.
    onBackoff: (delayMs) => clock.advance(delayMs),
    durable: false,
    ...extra,
  };
}

/** The ArchiveDownloadError the download ends with (anything else fails the test). */
async function failureOf(p: Promise<unknown>): Promise<ArchiveDownloadError> {
  const err = await p.then(() => new Error('expected an ArchiveDownloadError, the download succeeded'), (e: unknown) => e);
  if (err instanceof ArchiveDownloadError) return err;
  throw err;
}

describe('downloadArchive', () => {
  it('checks the expected size and SHA-256 and renames the file into place', async () => {
    const body = zipLike(2 * MIB + 5);
    const { base } = await serve((req, res) => sendPlain(req, res, body));
    expect(await downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length, expectedSha256: sha(body) }))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(readFileSync(join(dir, 'b.zip')).equals(body)).toBe(true);
    expect(existsSync(join(dir, 'b.zip.part'))).toBe(false);
  });

  it('with ranges "assumed", resumes with Range from a server that never advertised it', async () => {
    const body = zipLike(MIB);
    const { base, ranges } = await serve((req, res, n) => (n === 1 ? sendCut(req, res, body, 300_000) : sendPlain(req, res, body)));
    expect(await downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length }))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(ranges).toEqual([undefined, 'bytes=300000-']);
  });

  it('downloads the whole file once more on a wrong SHA-256, then fails hash-mismatch and removes the .part', async () => {
    const body = zipLike(100_000);
    const { base, ranges } = await serve((req, res) => sendPlain(req, res, body));
    const wrong = 'ab'.repeat(32);
    const err = await failureOf(downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length, expectedSha256: wrong })));
    expect(err.failure).toEqual({ kind: 'hash-mismatch', expected: wrong, actual: sha(body) });
    expect(ranges).toEqual([undefined, undefined]);
    expect(existsSync(join(dir, 'b.zip.part'))).toBe(false);
    expect(existsSync(join(dir, 'b.zip'))).toBe(false);
  });

  it('takes a whole kept .part as the first download: hashed without a request, and if wrong, downloaded once', async () => {
    const body = zipLike(100_000);
    const corrupt = Buffer.from(body);
    corrupt[50] = corrupt[50]! ^ 0xff;
    writeFileSync(join(dir, 'b.zip.part'), corrupt);
    const { base, ranges } = await serve((req, res) => sendPlain(req, res, body));
    expect(await downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length, expectedSha256: sha(body) }))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(ranges).toEqual([undefined]);
  });

  it('an abort while a kept .part is being re-hashed keeps the .part whole for the next run', async () => {
    const body = zipLike(8 * MIB);
    writeFileSync(join(dir, 'b.zip.part'), body.subarray(0, 6 * MIB));
    const { base } = await serve((req, res) => sendPlain(req, res, body));
    const controller = new AbortController();
    controller.abort(new Error('the agent is stopping'));
    const failure = await failureOf(downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length, signal: controller.signal })));
    expect(failure.failure.kind).toBe('aborted');
    expect(statSync(join(dir, 'b.zip.part')).size).toBe(6 * MIB);
  });

  it('fails size-mismatch when the announced size differs, and when the body runs past the expected size', async () => {
    const body = zipLike(10_000);
    const { base } = await serve((req, res) => sendPlain(req, res, body));
    expect((await failureOf(downloadArchive(options(`${base}/b.zip`, { expectedBytes: 9_999 })))).failure).toEqual({ kind: 'size-mismatch', expectedBytes: 9_999, servedBytes: 10_000 });
    const { base: chunked } = await serve((_req, res) => {
      res.writeHead(200); // no length: only the bytes tell
      res.end(body);
    });
    expect((await failureOf(downloadArchive(options(`${chunked}/b.zip`, { expectedBytes: 9_999 })))).failure).toEqual({ kind: 'size-mismatch', expectedBytes: 9_999, servedBytes: undefined });
  });

  it('retries a body that ends short of the expected size (cut-short) and resumes it', async () => {
    const body = zipLike(50_000);
    const { base, ranges } = await serve((req, res, n) => {
      if (n > 1) return sendPlain(req, res, body);
      res.writeHead(200); // chunked, ends early
      res.end(body.subarray(0, 20_000));
    });
    const warnings: object[] = [];
    const log = { ...quiet, warn: (fields: object) => void warnings.push(fields) };
    expect(await downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length, log }))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(ranges).toEqual([undefined, 'bytes=20000-']);
    expect(warnings).toMatchObject([{ failures: 1, error: 'the connection closed before the whole file arrived (19.5 KiB of 48.8 KiB)' }]);
  });

  it('asks the hop policy about every hop, with its number, and never requests a refused one', async () => {
    const body = zipLike(10_000);
    const { base, paths } = await serve((req, res) => {
      if (req.url === '/a') res.writeHead(302, { location: '/b' }).end();
      else if (req.url === '/b') res.writeHead(302, { location: 'http://localhost:9/elsewhere' }).end();
      else sendPlain(req, res, body);
    });
    const asked: [string, number][] = [];
    const sameOrigin: HopPolicy = (raw, hop) => {
      asked.push([raw, hop]);
      return Promise.resolve(new URL(raw).origin === base ? { ok: true, url: new URL(raw) } : { ok: false, reason: 'another host' });
    };
    const err = await failureOf(downloadArchive(options(`${base}/a`, { hopPolicy: sameOrigin })));
    expect(err.failure).toEqual({ kind: 'refused-url', hop: 2, url: 'http://localhost:9/elsewhere', reason: 'another host' });
    expect(err.failedAttempts).toBe(0);
    expect(asked).toEqual([
      [`${base}/a`, 0],
      [`${base}/b`, 1],
      ['http://localhost:9/elsewhere', 2],
    ]);
    expect(paths).toEqual(['/a', '/b']);
  });

  it('starts the failure count again after an attempt that brought at least 1 MiB', async () => {
    const body = zipLike(8 * MIB);
    // Every answer sends 2 MiB, then the link drops (a reset may cost the client some of the tail,
    // never a whole MiB): failure after failure, none without progress.
    const { base, ranges } = await serve((req, res) => sendCut(req, res, body, 2 * MIB));
    const result = await downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length, retry: { maxAttempts: 2, initialMs: 1_000, maxMs: 30_000 } }));
    expect(result).toEqual({ bytes: body.length, sha256: sha(body) });
    // More failed attempts than maxAttempts, yet it finished.
    expect(ranges.length).toBeGreaterThan(3);
  });

  it('gives up after maxAttempts failures in a row, saying how many, with every counted byte on disk', async () => {
    const body = zipLike(2 * MIB);
    const { base } = await serve((req, res, n) => (n === 1 ? sendCut(req, res, body, 700_000) : sendCut(req, res, body, 0)));
    const err = await failureOf(downloadArchive(options(`${base}/b.zip`, { expectedBytes: body.length, retry: { maxAttempts: 3, initialMs: 10, maxMs: 100 } })));
    expect(err.failure.kind).toBe('network');
    expect(err.failedAttempts).toBe(3);
    expect(err.message).toBe('the connection was reset');
    // The .part is kept, and holds exactly what was counted: a later resume starts at its size.
    expect(err.bytes).toBeGreaterThan(0);
    expect(statSync(join(dir, 'b.zip.part')).size).toBe(err.bytes);
    expect(readFileSync(join(dir, 'b.zip.part')).equals(body.subarray(0, err.bytes))).toBe(true);
  });

  it('fails a request that gets no answer after stallTimeoutMs on the clock (stalled), and retries it', async () => {
    const body = zipLike(10_000);
    const clock = new ManualClock();
    let held: ServerResponse | undefined;
    const { base, ranges } = await serve((req, res, n) => {
      if (n === 1) {
        held = res; // no answer at all
        clock.advance(20_000);
      } else sendPlain(req, res, body);
    });
    const warnings: { error?: string }[] = [];
    const log = { ...quiet, warn: (fields: object) => void warnings.push(fields) };
    const result = await downloadArchive(options(`${base}/b.zip`, { clock, onBackoff: (d) => clock.advance(d), stallTimeoutMs: 20_000, log }));
    expect(result.bytes).toBe(body.length);
    expect(ranges).toHaveLength(2);
    expect(warnings.map((w) => w.error)).toEqual(['the server sent nothing for 20 s']);
    held?.end();
  });

  it('ends at once with a 4xx (http-status), and keeps no empty .part', async () => {
    const { base, ranges } = await serve((_req, res) => res.writeHead(404).end('no'));
    const err = await failureOf(downloadArchive(options(`${base}/b.zip`)));
    expect(err.failure).toEqual({ kind: 'http-status', status: 404 } satisfies DownloadFailure);
    expect(err.message).toBe('the server answered 404 Not Found');
    expect(ranges).toHaveLength(1);
    expect(existsSync(join(dir, 'b.zip.part'))).toBe(false);
  });

  it.runIf(existsSync('/dev/full'))('tells a full disk (disk, ENOSPC) from a network error, without retrying', async () => {
    const body = zipLike(256 * 1024);
    const { base, ranges } = await serve((req, res) => sendPlain(req, res, body));
    symlinkSync('/dev/full', join(dir, 'b.zip.part'));
    const err = await failureOf(downloadArchive(options(`${base}/b.zip`)));
    expect(err.failure).toEqual({ kind: 'disk', code: 'ENOSPC' });
    expect(ranges).toHaveLength(1);
  });
});
