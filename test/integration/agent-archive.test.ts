// The agents' archive download on the real control plane (HTTP on 127.0.0.1 port 0, SQLite and
// blob files in a temp data dir): whole and ranged bodies with their hash, HEAD, every refusal
// with its exact message, no token in any log line, links that outlive a restart, shutdown mid-download.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { get, request, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane, type LogCapture, type TestControlPlane } from '../support/control-plane';
import { recordBuildArchive, seedBuild } from '../support/seed';

const TTL_SECONDS = 3_600;
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const clock = new ManualClock(Date.now());
/** Build A's archive: 8 MiB, more than a paused download can hold in socket buffers. */
const archiveA = randomBytes(8 * 1024 * 1024);
const archiveB = randomBytes(1000);
const SHA_A = sha(archiveA);
const SHA_B = sha(archiveB);
let t: TestControlPlane;
let logs: LogCapture;
/** Two enrolled workers: links name the first; the route wants that worker's own token with them. */
let W1: string;
let TOKEN1: string;
let W2: string;
let TOKEN2: string;
const authorization = (token: string) => ({ authorization: `Bearer ${token}` });
/** fetch init as worker 1, the worker every link below names. */
const asWorker = (init: RequestInit = {}, token = TOKEN1): RequestInit => ({ ...init, headers: { ...(init.headers as Record<string, string> | undefined), ...authorization(token) } });
const issuedTokens: string[] = [];

const start = (dataDir?: string) => startTestControlPlane({ clock, logs, ...(dataDir ? { dataDir } : {}), overrides: { distribution: { linkTtlSeconds: TTL_SECONDS } } });

beforeAll(async () => {
  t = await start();
  logs = t.logs;
  ({ workerId: W1, workerToken: TOKEN1 } = t.cp.registry.enroll({ hostname: 'w1', region: 'europe', slots: 1, agentVersion: 'test' }));
  ({ workerId: W2, workerToken: TOKEN2 } = t.cp.registry.enroll({ hostname: 'w2', region: 'europe', slots: 1, agentVersion: 'test' }));
  const owner = await t.cp.accounts.createUser('archive@example.com');
  const { projectId } = await t.cp.accounts.createProject(owner.userId, 'A', 'europe');
  const a = await t.cp.blobs.write(Readable.from([archiveA]), archiveA.length);
  const b = await t.cp.blobs.write(Readable.from([archiveB]), archiveB.length);
  for (const uploadId of ['upl_a', 'upl_b', 'upl_bare']) seedBuild(t.cp, { uploadId, projectId, fileUrl: 'https://files.example.com/b.zip', status: 'Ready' });
  recordBuildArchive(t.cp, 'upl_a', { sha256: a.sha256, bytes: a.size });
  recordBuildArchive(t.cp, 'upl_b', { sha256: b.sha256, bytes: b.size });
});
afterAll(() => t.destroy());

/** A link as the distribution issues it, from the running app. */
function linkFor(workerId: string, uploadId: string, digest: string): string {
  const { url } = t.cp.archiveLinks.issueArchiveLink({ workerId, uploadId, sha256: digest });
  issuedTokens.push(new URL(url).searchParams.get('token') ?? '');
  return url;
}
const body = async (res: Response) => Buffer.from(await res.arrayBuffer());

describe('GET /agent/builds/<uploadId>/archive', () => {
  it('streams the whole archive with its length, ETag (its SHA-256) and Accept-Ranges', async () => {
    const res = await fetch(linkFor(W1, 'upl_a', SHA_A), asWorker());
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(archiveA.length));
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('etag')).toBe(`"${SHA_A}"`);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(sha(await body(res))).toBe(SHA_A);
  });

  it('answers a range 206 with Content-Range; an open range resumes to the end and the two make the whole', async () => {
    const url = linkFor(W1, 'upl_a', SHA_A);
    const first = await fetch(url, asWorker({ headers: { range: 'bytes=0-3000000' } }));
    expect([first.status, first.headers.get('content-range'), first.headers.get('content-length')]).toEqual([206, `bytes 0-3000000/${archiveA.length}`, '3000001']);
    const head = await body(first);
    const rest = await fetch(url, asWorker({ headers: { range: `bytes=${head.length}-` } }));
    expect([rest.status, rest.headers.get('content-range')]).toEqual([206, `bytes 3000001-${archiveA.length - 1}/${archiveA.length}`]);
    expect(sha(Buffer.concat([head, await body(rest)]))).toBe(SHA_A);
    const suffix = await fetch(url, asWorker({ headers: { range: 'bytes=-10' } }));
    expect([suffix.status, suffix.headers.get('content-range'), await body(suffix)]).toEqual([206, `bytes ${archiveA.length - 10}-${archiveA.length - 1}/${archiveA.length}`, archiveA.subarray(-10)]);
    const clipped = await fetch(url, asWorker({ headers: { range: `bytes=${archiveA.length - 2}-${archiveA.length + 50}` } }));
    expect([clipped.status, await body(clipped)]).toEqual([206, archiveA.subarray(-2)]);
  });

  it('answers an unsatisfiable or malformed range 416 with Content-Range bytes */size and the catalog message', async () => {
    const url = linkFor(W1, 'upl_a', SHA_A);
    for (const range of [`bytes=${archiveA.length}-`, 'bytes=5-2', 'bytes=0-1,5-6', 'items=0-1', 'bytes=-0', 'bytes=x-']) {
      const res = await fetch(url, asWorker({ headers: { range } }));
      expect([res.status, res.headers.get('content-range'), await res.json()], range).toEqual([416, `bytes */${archiveA.length}`, { message: 'Range not satisfiable' }]);
    }
  });

  it('serves the whole archive when If-Range names other bytes, and the range when it names these', async () => {
    const url = linkFor(W1, 'upl_a', SHA_A);
    const stale = await fetch(url, asWorker({ headers: { range: 'bytes=10-19', 'if-range': '"0000"' } }));
    expect([stale.status, stale.headers.get('content-length')]).toEqual([200, String(archiveA.length)]);
    await stale.body?.cancel();
    const same = await fetch(url, asWorker({ headers: { range: 'bytes=10-19', 'if-range': `"${SHA_A}"` } }));
    expect([same.status, await body(same)]).toEqual([206, archiveA.subarray(10, 20)]);
  });

  it('answers HEAD with the headers of GET and not one body byte, for the whole archive and for a range', async () => {
    const head = async (range?: string) => {
      const res: IncomingMessage = await new Promise((resolve, reject) => {
        request(linkFor(W1, 'upl_a', SHA_A), { method: 'HEAD', headers: { ...authorization(TOKEN1), ...(range ? { range } : {}) } }, resolve)
          .once('error', reject)
          .end();
      });
      let received = 0;
      res.on('data', (c: Buffer) => (received += c.length));
      await once(res, 'end');
      return [res.statusCode, res.headers['content-length'], res.headers['content-range'], res.headers.etag, res.headers['accept-ranges'], received];
    };
    expect(await head()).toEqual([200, String(archiveA.length), undefined, `"${SHA_A}"`, 'bytes', 0]);
    expect(await head('bytes=100-')).toEqual([206, String(archiveA.length - 100), `bytes 100-${archiveA.length - 1}/${archiveA.length}`, `"${SHA_A}"`, 'bytes', 0]);
  });
});

describe('refused archive links', () => {
  const refused = async (url: string, status: number, message: string) => {
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(url, asWorker({ method }));
      expect(res.status, `${method} ${url}`).toBe(status);
      if (method === 'GET') expect(await res.json()).toEqual({ message });
    }
  };
  const origin = () => t.started.publicUrls.agents;

  it("wants the named worker's own token with the link: none or a wrong one 401, another worker's 403", async () => {
    const url = linkFor(W1, 'upl_b', SHA_B);
    const answer = async (init: RequestInit) => {
      const res = await fetch(url, init);
      return [res.status, (await res.json()) as unknown];
    };
    expect(await answer({})).toEqual([401, { message: 'Worker credential is missing' }]);
    expect(await answer({ headers: { authorization: `Basic ${TOKEN1}` } })).toEqual([401, { message: 'Worker credential is missing' }]);
    expect(await answer(asWorker({}, `${TOKEN1}x`))).toEqual([401, { message: 'Worker credential is not valid' }]);
    expect(await answer(asWorker({}, TOKEN2))).toEqual([403, { message: 'Archive link is for another worker' }]);
    const own = await fetch(url, asWorker());
    expect([own.status, sha(await body(own))]).toEqual([200, SHA_B]);
  });

  it('refuses a missing or garbled token 403', async () => {
    await refused(`${origin()}/agent/builds/upl_a/archive`, 403, 'Archive link token is missing');
    await refused(`${origin()}/agent/builds/upl_a/archive?token=`, 403, 'Archive link token is missing');
    await refused(`${origin()}/agent/builds/upl_a/archive?token=garbage`, 403, 'Archive link is not valid');
    await refused(`${linkFor(W1, 'upl_a', SHA_A)}&token=twice`, 403, 'Archive link is not valid');
  });

  it('refuses a tampered token 403: another worker, a later expiry, another digest, a changed signature', async () => {
    const url = new URL(linkFor(W1, 'upl_a', SHA_A));
    const parts = (url.searchParams.get('token') ?? '').split('.');
    const tampered = (i: number, value: string) => {
      const copy = [...parts];
      copy[i] = value;
      return `${url.origin}${url.pathname}?token=${copy.join('.')}`;
    };
    const mac = parts[5] ?? '';
    for (const [i, value] of [[1, W2], [3, SHA_B], [4, String(Number(parts[4]) + 1_000_000)], [5, `${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`]] as const) {
      await refused(tampered(i, value), 403, 'Archive link is not valid');
    }
  });

  it("refuses another build's token from the same worker, and a token naming another archive, 403", async () => {
    const ofB = new URL(linkFor(W1, 'upl_b', SHA_B));
    await refused(`${origin()}/agent/builds/upl_a/archive${ofB.search}`, 403, 'Archive link is for another build');
    await refused(linkFor(W1, 'upl_a', SHA_B), 403, 'Archive link is for another build');
  });

  it('serves a link until its lifetime has passed on the clock, then refuses it 403', async () => {
    const url = linkFor(W1, 'upl_b', SHA_B);
    clock.advance(TTL_SECONDS * 1000 - 1);
    const last = await fetch(url, asWorker());
    expect([last.status, sha(await body(last))]).toEqual([200, SHA_B]);
    clock.advance(1);
    await refused(url, 403, 'Archive link expired');
  });

  it('answers 404 for an unknown build and for a build without an archive, only behind a valid token', async () => {
    await refused(linkFor(W1, 'upl_unknown', SHA_A), 404, 'Upload not found');
    await refused(linkFor(W1, 'upl_bare', SHA_A), 404, 'Build has no archive');
    await refused(`${origin()}/agent/builds/upl_unknown/archive?token=x`, 403, 'Archive link is not valid');
  });

  it('never logs a token: every request line shows token=[Redacted], the download line names worker and build', () => {
    expect(issuedTokens.length).toBeGreaterThan(10);
    const text = logs.text();
    for (const token of issuedTokens) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(token.split('.').at(-1));
    }
    const requestLines = logs.lines.filter((l) => l.includes('/agent/builds/') && l.includes('token='));
    expect(requestLines.length).toBeGreaterThan(10);
    for (const l of requestLines) expect(l).toMatch(/token=\[Redacted\]/);
    expect(logs.lines.some((l) => l.includes('"msg":"archive download"') && l.includes(`"workerId":"${W1}"`) && l.includes('"uploadId":"upl_a"'))).toBe(true);
  });
});

describe('restarts and shutdown', () => {
  it('keeps serving a link issued before a restart (same data dir) until it expires', async () => {
    const url = linkFor(W1, 'upl_b', SHA_B);
    await t.stop();
    t = await start(t.dataDir);
    const res = await fetch(url.replace(/^http:\/\/[^/]+/, t.started.publicUrls.agents), asWorker());
    expect([res.status, sha(await body(res))]).toEqual([200, SHA_B]);
  });

  it('cuts a download in flight when the app closes instead of waiting for it (the agent resumes with Range)', async () => {
    const res: IncomingMessage = await new Promise((resolve, reject) => get(linkFor(W1, 'upl_a', SHA_A), { headers: authorization(TOKEN1) }, resolve).once('error', reject));
    expect(res.statusCode).toBe(200);
    res.pause();
    const ended = new Promise<string>((resolve) => {
      res.once('aborted', () => resolve('aborted'));
      res.once('error', () => resolve('aborted'));
      res.once('end', () => resolve('complete'));
    });
    await t.stop();
    res.resume();
    expect(await ended).toBe('aborted');
  });
});
