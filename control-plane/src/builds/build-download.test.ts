// The build download against a real local HTTP server: hash and size, the ZIP header check, the
// byte cap, retries on the injected clock (no sleeps), Range resumes, redirects checked hop by hop
// (a strict policy refuses a redirect to loopback), abort and resume, and a full disk.
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { checkOutboundUrl, type UrlVerdict } from '../webhooks/url-policy';
import { BuildDownloadError, DownloadAbortedError, downloadBuild, type DownloadBuildOptions, type DownloadProgress, type UrlCheck } from './build-download';

const ZIP_HEAD = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** Bytes that start like a ZIP archive, then random (the download checks the header only). */
const zipLike = (size: number) => Buffer.concat([ZIP_HEAD, randomBytes(size - 4)]);
const allowPrivate: UrlCheck = (raw) => checkOutboundUrl(raw, { allowPrivateUrls: true, resolve: () => Promise.resolve([]) });

interface Seen {
  url: string;
  range: string | undefined;
  ifRange: string | undefined;
}
type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

let dir: string;
let servers: Server[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-download-'));
});
afterEach(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  servers = [];
  rmSync(dir, { recursive: true, force: true });
});

/** A real HTTP server on 127.0.0.1; `seen` records each request's path and Range headers; `requests` emits 'request' with the count. */
async function serve(handler: Handler) {
  const seen: Seen[] = [];
  const requests = new EventEmitter();
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined });
    handler(req, res, seen.length);
    requests.emit('request', seen.length);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { base: `http://127.0.0.1:${port}`, port, seen, requests };
}

/** Answers a Range request with 206 and the rest from its start, any other with 200 and the whole body. */
function sendRanged(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const start = m ? Number(m[1]) : 0;
  const headers = { 'content-type': 'application/zip', 'accept-ranges': 'bytes', etag: '"v1"' };
  if (m) res.writeHead(206, { ...headers, 'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` });
  else res.writeHead(200, { ...headers, 'content-length': body.length });
  res.end(body.subarray(start));
}

/** Sends the first `cut` bytes of a 200 answer promising the whole body, then closes the connection. */
function sendThenCut(res: ServerResponse, body: Buffer, cut: number, acceptRanges = true): void {
  res.writeHead(200, { 'content-type': 'application/zip', 'content-length': body.length, ...(acceptRanges ? { 'accept-ranges': 'bytes', etag: '"v1"' } : {}) });
  res.write(body.subarray(0, cut), () => res.socket?.destroy());
}

/** A logger whose lines are kept; each retry advances the clock by its delay once the backoff timer is set. */
function harness(clock = new ManualClock()) {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'debug' },
    {
      write(line: string) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        lines.push(entry);
        // The backoff timer is set in the same turn, right after this line: advance on the next microtask.
        if (entry.msg === 'build download failed; retrying') void Promise.resolve().then(() => clock.advance(entry.delayMs as number));
      },
    },
  );
  const retries = () => lines.filter((l) => l.msg === 'build download failed; retrying');
  return { clock, log, lines, retries };
}

function options(url: string, extra: Partial<DownloadBuildOptions> = {}): DownloadBuildOptions {
  const { clock, log } = harness();
  return { url, destPath: join(dir, 'build.zip'), checkUrl: allowPrivate, maxBytes: 64 * 1024 * 1024, clock, random: () => 0.5, log, ...extra };
}

async function failure(p: Promise<unknown>): Promise<BuildDownloadError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BuildDownloadError);
  return err as BuildDownloadError;
}

function expectNothingOnDisk(): void {
  expect(existsSync(join(dir, 'build.zip'))).toBe(false);
  expect(existsSync(join(dir, 'build.zip.part'))).toBe(false);
}

describe('downloadBuild', () => {
  it('streams the file into place with the size and SHA-256 of the served bytes, leaving no .part', async () => {
    const body = zipLike(3 * 1024 * 1024 + 17);
    const { base } = await serve((req, res) => sendRanged(req, res, body));
    const result = await downloadBuild(options(`${base}/build.zip`));
    expect(result).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(readFileSync(join(dir, 'build.zip')).equals(body)).toBe(true);
    expect(existsSync(join(dir, 'build.zip.part'))).toBe(false);
  });

  it('accepts an empty archive (PK\\x05\\x06)', async () => {
    const empty = Buffer.concat([Buffer.from([0x50, 0x4b, 0x05, 0x06]), Buffer.alloc(18)]);
    const { base } = await serve((_req, res) => res.end(empty));
    expect(await downloadBuild(options(`${base}/empty.zip`))).toEqual({ bytes: 22, sha256: sha(empty) });
  });

  it('rejects an HTML page at once, naming it, without retrying', async () => {
    const { base, seen } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!DOCTYPE html><html><body>Your download will start shortly…</body></html>');
    });
    const err = await failure(downloadBuild(options(`${base}/share/abc`)));
    expect(err).toMatchObject({ outcome: 'Reject', reason: 'not-zip', objection: 'the URL returned an HTML page, not a .zip archive' });
    expect(seen).toHaveLength(1);
    expectNothingOnDisk();
  });

  it('names an HTML page by its first bytes when the content type is wrong', async () => {
    const { base } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end('\n  <html lang="en"><head>');
    });
    expect((await failure(downloadBuild(options(`${base}/x`)))).objection).toBe('the URL returned an HTML page, not a .zip archive');
  });

  it('rejects an empty body', async () => {
    const { base } = await serve((_req, res) => res.end());
    const err = await failure(downloadBuild(options(`${base}/x.zip`)));
    expect(err).toMatchObject({ outcome: 'Reject', reason: 'not-zip', objection: 'the URL returned an empty file, not a .zip archive' });
    expectNothingOnDisk();
  });

  it('rejects other content, saying its type and first bytes', async () => {
    const { base, seen } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"error":"bucket is private"}');
    });
    const err = await failure(downloadBuild(options(`${base}/x.zip`)));
    expect(err).toMatchObject({ outcome: 'Reject', objection: 'the URL returned application/json content, not a .zip archive (it starts with "{"error":"bucket…")' });
    expect(seen).toHaveLength(1);
    const { base: binary } = await serve((_req, res) => res.end(Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01])));
    expect((await failure(downloadBuild(options(`${binary}/x.tar.gz`)))).objection).toBe('the URL returned a file, not a .zip archive (it starts with 1f 8b 08 00 01)');
    expectNothingOnDisk();
  });

  it('rejects a file whose Content-Length is over the cap before reading its body', async () => {
    const body = zipLike(4096);
    const { base, seen } = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': body.length });
      res.end(body);
    });
    const err = await failure(downloadBuild(options(`${base}/big.zip`, { maxBytes: 2048 })));
    expect(err).toMatchObject({ outcome: 'Reject', reason: 'too-large', objection: 'the file is 4 KiB, larger than the 2 KiB build size cap' });
    expect(seen).toHaveLength(1);
    expectNothingOnDisk();
  });

  it('rejects a file without Content-Length once the bytes streamed pass the cap', async () => {
    const { base } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/zip' }); // chunked: no length given
      res.write(zipLike(1500));
      res.end(randomBytes(1500));
    });
    const err = await failure(downloadBuild(options(`${base}/big.zip`, { maxBytes: 2048 })));
    expect(err).toMatchObject({ outcome: 'Reject', reason: 'too-large', objection: 'the file is larger than the 2 KiB build size cap' });
    expectNothingOnDisk();
  });

  it('fails at once on 403 (an expired presigned URL), in words, without retrying', async () => {
    const { base, seen } = await serve((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/xml' });
      res.end('<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>');
    });
    const h = harness();
    const err = await failure(downloadBuild(options(`${base}/b.zip?X-Amz-Signature=abc`, { clock: h.clock, log: h.log })));
    expect(err).toMatchObject({ outcome: 'Download Failed', reason: 'http-status', objection: 'the server answered 403 Forbidden: the link may have expired' });
    expect(seen).toHaveLength(1);
    expect(h.retries()).toHaveLength(0);
    expectNothingOnDisk();
  });

  it('retries 503 with full-jitter backoff on the clock, then downloads', async () => {
    const body = zipLike(100_000);
    const { base, seen } = await serve((req, res, n) => {
      if (n <= 2) {
        res.writeHead(503);
        res.end('busy');
      } else sendRanged(req, res, body);
    });
    const h = harness();
    const result = await downloadBuild(options(`${base}/b.zip`, { clock: h.clock, log: h.log, random: () => 0.5 }));
    expect(result).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(seen).toHaveLength(3);
    // Ceilings 1 s then 2 s (doubling from retryBaseMs), times the random draw.
    expect(h.retries().map((l) => [l.delayMs, l.error])).toEqual([
      [500, 'the server answered 503 Service Unavailable'],
      [1000, 'the server answered 503 Service Unavailable'],
    ]);
  });

  it('gives up after maxAttempts failures in a row, naming the last error', async () => {
    const { base, seen } = await serve((_req, res) => {
      res.writeHead(502);
      res.end();
    });
    const h = harness();
    const err = await failure(downloadBuild(options(`${base}/b.zip`, { clock: h.clock, log: h.log, retry: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 30_000 } })));
    expect(err).toMatchObject({ outcome: 'Download Failed', reason: 'http-status', objection: 'the download failed 3 times in a row; last error: the server answered 502 Bad Gateway' });
    expect(seen).toHaveLength(3);
  });

  it('says the connection was reset when every attempt is cut before an answer', async () => {
    const { base } = await serve((req) => req.socket.destroy());
    const h = harness();
    const err = await failure(downloadBuild(options(`${base}/b.zip`, { clock: h.clock, log: h.log, retry: { maxAttempts: 5, baseDelayMs: 10, maxDelayMs: 100 } })));
    expect(err).toMatchObject({ outcome: 'Download Failed', reason: 'network', objection: 'the download failed 5 times in a row; last error: the connection was reset' });
    expectNothingOnDisk();
  });

  it('resumes with Range after a connection reset mid-body, and the hash covers both parts', async () => {
    const body = zipLike(2 * 1024 * 1024);
    const half = 1024 * 1024 + 3;
    const { base, seen } = await serve((req, res, n) => (n === 1 ? sendThenCut(res, body, half) : sendRanged(req, res, body)));
    const h = harness();
    const result = await downloadBuild(options(`${base}/b.zip`, { clock: h.clock, log: h.log }));
    expect(result).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(seen.map((s) => [s.range, s.ifRange])).toEqual([
      [undefined, undefined],
      [`bytes=${half}-`, '"v1"'],
    ]);
    expect(h.retries()[0]?.error).toBe(`the connection was reset`);
    expect(readFileSync(join(dir, 'build.zip')).equals(body)).toBe(true);
  });

  it('starts over from zero when the server answers a Range request with the whole file (200)', async () => {
    const body = zipLike(2 * 1024 * 1024);
    const { base, seen } = await serve((_req, res, n) => {
      if (n === 1) sendThenCut(res, body, 700_000);
      else {
        res.writeHead(200, { 'content-length': body.length }); // ignores Range
        res.end(body);
      }
    });
    const h = harness();
    const result = await downloadBuild(options(`${base}/b.zip`, { clock: h.clock, log: h.log }));
    expect(seen[1]?.range).toBe('bytes=700000-');
    expect(seen).toHaveLength(2); // the 200 itself is the restart, not another failure
    expect(result).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(readFileSync(join(dir, 'build.zip')).equals(body)).toBe(true);
  });

  it('does not send Range to a server that did not advertise Accept-Ranges', async () => {
    const body = zipLike(1024 * 1024);
    const { base, seen } = await serve((req, res, n) => (n === 1 ? sendThenCut(res, body, 300_000, false) : sendRanged(req, res, body)));
    const h = harness();
    expect(await downloadBuild(options(`${base}/b.zip`, { clock: h.clock, log: h.log }))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(seen.map((s) => s.range)).toEqual([undefined, undefined]);
  });

  it('fails a stalled attempt after stallTimeoutMs on the clock and resumes', async () => {
    const body = zipLike(1024 * 1024);
    const half = 400_000;
    const { base, seen } = await serve((req, res, n) => {
      if (n === 1) {
        res.writeHead(200, { 'content-length': body.length, 'accept-ranges': 'bytes' });
        res.write(body.subarray(0, half)); // then nothing, connection held open
      } else sendRanged(req, res, body);
    });
    const h = harness();
    const progress: DownloadProgress[] = [];
    const got = new EventEmitter();
    const download = downloadBuild(
      options(`${base}/b.zip`, {
        clock: h.clock,
        log: h.log,
        progressIntervalMs: 0,
        stallTimeoutMs: 30_000,
        onProgress: (p) => {
          progress.push(p);
          if (p.bytes === half) got.emit('half');
        },
      }),
    );
    await once(got, 'half');
    h.clock.advance(30_000);
    expect(await download).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(h.retries()[0]?.error).toBe('the server sent nothing for 30 s');
    expect(seen[1]?.range).toBe(`bytes=${half}-`);
  });

  it('reports progress at most every progressIntervalMs of the clock, with rate and ETA', async () => {
    const body = zipLike(1024 * 1024);
    const first = 256 * 1024;
    const { base, requests } = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': body.length });
      res.write(body.subarray(0, first));
      requests.once('more', () => res.end(body.subarray(first)));
    });
    const h = harness();
    const progress: DownloadProgress[] = [];
    const download = downloadBuild(options(`${base}/b.zip`, { clock: h.clock, log: h.log, progressIntervalMs: 2_000, onProgress: (p) => progress.push(p) }));
    await once(requests, 'request');
    h.clock.advance(2_000);
    requests.emit('more');
    await download;
    // Chunks before the advance come 0 ms after the start (no report); the first after it reports,
    // then no other within 2 s.
    expect(progress).toHaveLength(1);
    const p = progress[0]!;
    expect(p.totalBytes).toBe(body.length);
    expect(p.bytes).toBeGreaterThan(0);
    expect(p.bytesPerSecond).toBe(Math.round(p.bytes / 2));
    expect(p.etaSeconds).toBe(Math.ceil((body.length - p.bytes) / p.bytesPerSecond));
    expect(h.lines.some((l) => l.msg === 'build download progress' && l.bytes === p.bytes)).toBe(true);
  });

  it('checks every redirect hop with the URL policy and follows the chain', async () => {
    const body = zipLike(50_000);
    const { base, seen } = await serve((req, res) => {
      if (req.url === '/a') res.writeHead(302, { location: '/b' }).end();
      else if (req.url === '/b') res.writeHead(301, { location: `${base}/c?sig=1` }).end();
      else sendRanged(req, res, body);
    });
    const checked: string[] = [];
    const checkUrl: UrlCheck = (raw) => {
      checked.push(raw);
      return allowPrivate(raw);
    };
    expect(await downloadBuild(options(`${base}/a`, { checkUrl }))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(checked).toEqual([`${base}/a`, `${base}/b`, `${base}/c?sig=1`]);
    expect(seen.map((s) => s.url)).toEqual(['/a', '/b', '/c?sig=1']);
  });

  it('refuses a redirect to a private address under the strict policy (first hop pinned to a checked address)', async () => {
    const { port, seen } = await serve((req, res) => {
      if (req.url === '/to-private-name') res.writeHead(302, { location: `https://internal.example.test:${port}/build.zip` }).end();
      else res.writeHead(307, { location: `https://127.0.0.1:${port}/build.zip` }).end();
    });
    // The stand-in for a public CDN: this one name is pinned to the local server, as checkOutboundUrl
    // pins a public name to the addresses it checked; every redirect gets the real strict policy.
    const strict = { allowPrivateUrls: false, resolve: (host: string) => Promise.resolve(host === 'internal.example.test' ? ['10.0.0.8', '127.0.0.1'] : ['93.184.216.34']) };
    const checkUrl: UrlCheck = (raw): Promise<UrlVerdict> =>
      new URL(raw).hostname === 'cdn.example.test' ? Promise.resolve({ ok: true, url: new URL(raw), addresses: ['127.0.0.1'] }) : checkOutboundUrl(raw, strict);
    const byName = await failure(downloadBuild(options(`http://cdn.example.test:${port}/to-private-name`, { checkUrl })));
    expect(byName).toMatchObject({
      outcome: 'Download Failed',
      reason: 'refused-url',
      objection: `the URL redirected to internal.example.test:${port}, which is refused: it must point to a public address (private, loopback and link-local addresses are refused)`,
    });
    const byAddress = await failure(downloadBuild(options(`http://cdn.example.test:${port}/to-loopback`, { checkUrl })));
    expect(byAddress.objection).toBe(`the URL redirected to 127.0.0.1:${port}, which is refused: it must point to a public address (private, loopback and link-local addresses are refused)`);
    // Each refused target was never requested: the server saw only the two first hops.
    expect(seen.map((s) => s.url)).toEqual(['/to-private-name', '/to-loopback']);
    expectNothingOnDisk();
  });

  it('refuses the URL itself when the policy does', async () => {
    const err = await failure(downloadBuild(options('http://127.0.0.1:9/b.zip', { checkUrl: (raw) => checkOutboundUrl(raw, { allowPrivateUrls: false, resolve: () => Promise.resolve([]) }) })));
    expect(err).toMatchObject({ outcome: 'Download Failed', reason: 'refused-url', objection: 'the URL is refused: it must be an https URL' });
  });

  it('stops after maxRedirects redirects', async () => {
    const { base, seen } = await serve((req, res) => res.writeHead(302, { location: `/r${seen.length}` }).end());
    const err = await failure(downloadBuild(options(`${base}/r0`)));
    expect(err).toMatchObject({ outcome: 'Download Failed', reason: 'too-many-redirects', objection: 'the URL redirected more than 10 times' });
    expect(seen).toHaveLength(11);
  });

  it('keeps the .part on abort, and a second call resumes it with Range to the right hash', async () => {
    const body = zipLike(2 * 1024 * 1024);
    const half = 1024 * 1024;
    const { base, seen } = await serve((req, res, n) => {
      if (n === 1) {
        res.writeHead(200, { 'content-length': body.length, 'accept-ranges': 'bytes', etag: '"v1"' });
        res.write(body.subarray(0, half)); // then holds the connection open
      } else sendRanged(req, res, body);
    });
    const abort = new AbortController();
    const first = downloadBuild(
      options(`${base}/b.zip`, {
        signal: abort.signal,
        progressIntervalMs: 0,
        onProgress: (p) => {
          if (p.bytes === half) abort.abort();
        },
      }),
    );
    const err = await first.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DownloadAbortedError);
    expect((err as DownloadAbortedError).partialBytes).toBe(half);
    expect(statSync(join(dir, 'build.zip.part')).size).toBe(half);
    expect(existsSync(join(dir, 'build.zip'))).toBe(false);
    // A restarted pipeline calls again with the same destPath.
    expect(await downloadBuild(options(`${base}/b.zip`))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(seen[1]?.range).toBe(`bytes=${half}-`);
    expect(readFileSync(join(dir, 'build.zip')).equals(body)).toBe(true);
  });

  it('discards a leftover .part that is not the start of a ZIP archive', async () => {
    writeFileSync(join(dir, 'build.zip.part'), 'garbage from somewhere else');
    const body = zipLike(10_000);
    const { base, seen } = await serve((req, res) => sendRanged(req, res, body));
    expect(await downloadBuild(options(`${base}/b.zip`))).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(seen[0]?.range).toBeUndefined();
  });

  it.runIf(existsSync('/dev/full'))('ends with a clear objection when the disk is full, and removes the .part', async () => {
    const body = zipLike(256 * 1024);
    const { base, seen } = await serve((req, res) => sendRanged(req, res, body));
    // Writes to /dev/full fail with ENOSPC, as on a full disk.
    symlinkSync('/dev/full', join(dir, 'build.zip.part'));
    const err = await failure(downloadBuild(options(`${base}/b.zip`)));
    expect(err.outcome).toBe('Download Failed');
    expect(err.reason).toBe('no-space');
    expect(err.objection).toMatch(/^the service ran out of disk space after .* of the download; please submit the build again later$/);
    expect(seen).toHaveLength(1);
    expectNothingOnDisk();
  });
});
