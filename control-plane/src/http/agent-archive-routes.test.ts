// The agents' archive download on the real control plane (HTTP on 127.0.0.1 port 0, SQLite and
// blob files in a temp data dir): whole and ranged bodies with their hash, HEAD, every refusal
// with its exact message, no token in any log line, and links that outlive a restart.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { get, request, type IncomingMessage } from 'node:http';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, ManualClock } from '@pixelfleet/signaling';
import { buildControlPlaneWithDb, type ControlPlaneWithDb, type StartedControlPlane } from '../app';
import { LocalBlobStore } from '../blobs/blob-store';
import { ARCHIVE_LINK_KEY_FILE, ArchiveLinks, loadArchiveLinkKey } from '../builds/archive-links';
import { loadControlPlaneConfig } from '../config';
import { SqliteBuildsRepository } from '../repositories/builds';
import { parseRange } from './agent-archive-routes';

const TTL_SECONDS = 3_600;
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

let dataDir: string;
const lines: string[] = [];
const logStream = new Writable({
  write: (chunk: Buffer, _enc, done) => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  },
});
const clock = new ManualClock();
let cp: ControlPlaneWithDb;
let started: StartedControlPlane;
let links: ArchiveLinks;
/** Build A's archive: 8 MiB, enough that a paused download cannot sit whole in socket buffers. */
const archiveA = randomBytes(8 * 1024 * 1024);
const archiveB = randomBytes(1000);
const issuedTokens: string[] = [];

function start(): Promise<StartedControlPlane> {
  const config = loadControlPlaneConfig({
    overrides: {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: 0 },
      dataDir,
      adminToken: 'test-admin-token-0123456789abcdef',
      agentJoinToken: 'test-join-token-0123456789abcdef',
      distribution: { linkTtlSeconds: TTL_SECONDS },
      logLevel: 'debug',
    },
  });
  cp = buildControlPlaneWithDb(config, { clock, logger: createLogger('debug', logStream) });
  return cp.start();
}

/** A link as the distribution would issue it: the data dir's key, this test's clock and the app's agent origin. */
function linkFor(workerId: string, uploadId: string, digest: string): string {
  const { url } = links.issueArchiveLink({ workerId, uploadId, sha256: digest });
  issuedTokens.push(new URL(url).searchParams.get('token') ?? '');
  return url;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pf-archive-'));
  started = await start();
  const blobs = new LocalBlobStore(join(dataDir, 'blobs'));
  const a = await blobs.write(Readable.from([archiveA]), archiveA.length);
  const b = await blobs.write(Readable.from([archiveB]), archiveB.length);
  cp.db.prepare("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'u@example.com', 1)").run();
  cp.db.prepare("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES ('prj_1', 'usr_1', 'p', 'europe', 1)").run();
  const builds = new SqliteBuildsRepository(cp.db);
  for (const uploadId of ['upl_a', 'upl_b', 'upl_bare']) {
    builds.insert({ uploadId, projectId: 'prj_1', fileUrl: 'https://files.example.com/b.zip', status: 'Ready', objection: undefined, autoRelease: false, createdAt: 1, updatedAt: 1 });
  }
  builds.recordArchive('upl_a', { sha256: a.sha256, bytes: a.size });
  builds.recordArchive('upl_b', { sha256: b.sha256, bytes: b.size });
  links = new ArchiveLinks({
    key: loadArchiveLinkKey(dataDir),
    clock,
    linkTtlSeconds: TTL_SECONDS,
    agentsUrl: () => started.publicUrls.agents,
    builds,
    blobs,
  });
});

afterAll(async () => {
  await cp.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function body(res: Response): Promise<Buffer> {
  return Buffer.from(await res.arrayBuffer());
}

describe('GET /agent/builds/<uploadId>/archive', () => {
  it('streams the whole archive with its length, ETag (its SHA-256) and Accept-Ranges', async () => {
    const res = await fetch(linkFor('wrk_1', 'upl_a', sha(archiveA)));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(archiveA.length));
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('etag')).toBe(`"${sha(archiveA)}"`);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(sha(await body(res))).toBe(sha(archiveA));
  });

  it('answers a range with 206 and Content-Range, and an open range resumes to the end (the two make the whole)', async () => {
    const url = linkFor('wrk_1', 'upl_a', sha(archiveA));
    const first = await fetch(url, { headers: { range: 'bytes=0-3000000' } });
    expect([first.status, first.headers.get('content-range'), first.headers.get('content-length')]).toEqual([206, `bytes 0-3000000/${archiveA.length}`, '3000001']);
    const head = await body(first);
    const rest = await fetch(url, { headers: { range: `bytes=${head.length}-` } });
    expect([rest.status, rest.headers.get('content-range')]).toEqual([206, `bytes 3000001-${archiveA.length - 1}/${archiveA.length}`]);
    expect(sha(Buffer.concat([head, await body(rest)]))).toBe(sha(archiveA));
    const suffix = await fetch(url, { headers: { range: 'bytes=-10' } });
    expect([suffix.status, suffix.headers.get('content-range')]).toEqual([206, `bytes ${archiveA.length - 10}-${archiveA.length - 1}/${archiveA.length}`]);
    expect(await body(suffix)).toEqual(archiveA.subarray(archiveA.length - 10));
    const clipped = await fetch(url, { headers: { range: `bytes=${archiveA.length - 2}-${archiveA.length + 50}` } });
    expect([clipped.status, (await body(clipped)).length]).toEqual([206, 2]);
  });

  it('answers an unsatisfiable or malformed range 416 with Content-Range bytes */size and the catalog message', async () => {
    const url = linkFor('wrk_1', 'upl_a', sha(archiveA));
    for (const range of [`bytes=${archiveA.length}-`, 'bytes=5-2', 'bytes=0-1,5-6', 'items=0-1', 'bytes=-0', 'bytes=x-']) {
      const res = await fetch(url, { headers: { range } });
      expect([res.status, res.headers.get('content-range'), await res.json()], range).toEqual([416, `bytes */${archiveA.length}`, { message: 'Range not satisfiable' }]);
    }
  });

  it('serves the whole archive when If-Range names other bytes, and the range when it names these', async () => {
    const url = linkFor('wrk_1', 'upl_a', sha(archiveA));
    const stale = await fetch(url, { headers: { range: 'bytes=10-19', 'if-range': '"0000"' } });
    expect([stale.status, stale.headers.get('content-length')]).toEqual([200, String(archiveA.length)]);
    await stale.body?.cancel();
    const same = await fetch(url, { headers: { range: 'bytes=10-19', 'if-range': `"${sha(archiveA)}"` } });
    expect([same.status, await body(same)]).toEqual([206, archiveA.subarray(10, 20)]);
  });

  it('answers HEAD with the headers of GET and no body, for the whole archive and for a range', async () => {
    const url = linkFor('wrk_1', 'upl_a', sha(archiveA));
    const whole = await fetch(url, { method: 'HEAD' });
    expect([whole.status, whole.headers.get('content-length'), whole.headers.get('etag'), whole.headers.get('accept-ranges')]).toEqual([200, String(archiveA.length), `"${sha(archiveA)}"`, 'bytes']);
    expect((await body(whole)).length).toBe(0);
    const part = await fetch(url, { method: 'HEAD', headers: { range: 'bytes=100-' } });
    expect([part.status, part.headers.get('content-length'), part.headers.get('content-range')]).toEqual([206, String(archiveA.length - 100), `bytes 100-${archiveA.length - 1}/${archiveA.length}`]);
  });
});

describe('refused archive links', () => {
  const refused = async (url: string, status: number, message: string) => {
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(url, { method });
      expect(res.status, `${method} ${url}`).toBe(status);
      if (method === 'GET') expect(await res.json()).toEqual({ message });
    }
  };
  const origin = () => started.publicUrls.agents;

  it('refuses a missing or garbled token 403', async () => {
    await refused(`${origin()}/agent/builds/upl_a/archive`, 403, 'Archive link token is missing');
    await refused(`${origin()}/agent/builds/upl_a/archive?token=`, 403, 'Archive link token is missing');
    await refused(`${origin()}/agent/builds/upl_a/archive?token=garbage`, 403, 'Archive link is not valid');
    const url = linkFor('wrk_1', 'upl_a', sha(archiveA));
    await refused(`${url}&token=twice`, 403, 'Archive link is not valid');
  });

  it('refuses a tampered token 403: another worker, a later expiry, a changed signature', async () => {
    const url = new URL(linkFor('wrk_1', 'upl_a', sha(archiveA)));
    const parts = (url.searchParams.get('token') ?? '').split('.');
    const tampered = (i: number, value: string) => {
      const copy = [...parts];
      copy[i] = value;
      return `${url.origin}${url.pathname}?token=${copy.join('.')}`;
    };
    await refused(tampered(1, 'wrk_2'), 403, 'Archive link is not valid');
    await refused(tampered(4, String(Number(parts[4]) + 1_000_000)), 403, 'Archive link is not valid');
    const mac = parts[5] ?? '';
    await refused(tampered(5, `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`), 403, 'Archive link is not valid');
    await refused(tampered(3, sha(archiveB)), 403, 'Archive link is not valid');
  });

  it("refuses another build's token from the same worker, and a token naming another archive, 403", async () => {
    const ofB = new URL(linkFor('wrk_1', 'upl_b', sha(archiveB)));
    await refused(`${origin()}/agent/builds/upl_a/archive${ofB.search}`, 403, 'Archive link is for another build');
    await refused(linkFor('wrk_1', 'upl_a', sha(archiveB)), 403, 'Archive link is for another build');
  });

  it('refuses an expired link 403 once its lifetime has passed on the clock, and serves it until then', async () => {
    const url = linkFor('wrk_1', 'upl_b', sha(archiveB));
    clock.advance(TTL_SECONDS * 1000 - 1);
    const last = await fetch(url);
    expect([last.status, sha(await body(last))]).toEqual([200, sha(archiveB)]);
    clock.advance(1);
    await refused(url, 403, 'Archive link expired');
  });

  it('answers 404 for an unknown build and for a build without an archive, only behind a valid token', async () => {
    await refused(linkFor('wrk_1', 'upl_unknown', sha(archiveA)), 404, 'Upload not found');
    await refused(linkFor('wrk_1', 'upl_bare', sha(archiveA)), 404, 'Build has no archive');
    await refused(`${origin()}/agent/builds/upl_unknown/archive?token=x`, 403, 'Archive link is not valid');
  });

  it('never logs a token: every request line shows token=[Redacted]', () => {
    expect(issuedTokens.length).toBeGreaterThan(10);
    const text = lines.join('\n');
    for (const token of issuedTokens) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(token.split('.').at(-1));
    }
    const requestLines = lines.filter((l) => l.includes('/agent/builds/') && l.includes('token='));
    expect(requestLines.length).toBeGreaterThan(10);
    for (const l of requestLines) expect(l).toMatch(/token=\[Redacted\]/);
    expect(text).toContain('"msg":"archive download"');
  });
});

describe('parseRange', () => {
  it.each([
    [undefined, 100, { kind: 'whole' }],
    ['bytes=0-0', 100, { kind: 'range', start: 0, end: 0 }],
    ['bytes=10-', 100, { kind: 'range', start: 10, end: 99 }],
    ['bytes=-30', 100, { kind: 'range', start: 70, end: 99 }],
    ['bytes=-300', 100, { kind: 'range', start: 0, end: 99 }],
    ['BYTES=5-500', 100, { kind: 'range', start: 5, end: 99 }],
    ['bytes=100-', 100, { kind: 'unsatisfiable' }],
    ['bytes=0-', 0, { kind: 'unsatisfiable' }],
    ['bytes=-5', 0, { kind: 'unsatisfiable' }],
    ['bytes=-', 100, { kind: 'unsatisfiable' }],
    ['bytes=99999999999999999999-', 100, { kind: 'unsatisfiable' }],
    ['bytes= 1-2', 100, { kind: 'unsatisfiable' }],
  ] as const)('%s of %i bytes', (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });
});

describe('the link key and restarts', () => {
  it('keeps the key in the data dir, owner-only, and a link issued before a restart works after it', async () => {
    const url = linkFor('wrk_1', 'upl_b', sha(archiveB));
    if (process.platform !== 'win32') expect(statSync(join(dataDir, ARCHIVE_LINK_KEY_FILE)).mode & 0o777).toBe(0o600);
    await cp.close();
    started = await start();
    const res = await fetch(url.replace(/^http:\/\/[^/]+/, started.publicUrls.agents));
    expect([res.status, sha(await body(res))]).toEqual([200, sha(archiveB)]);
  });

  it('loads the same key again, narrows a key file others can read, and refuses a key file of the wrong length', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-archive-key-'));
    try {
      const key = loadArchiveLinkKey(dir);
      expect(key.length).toBe(32);
      if (process.platform !== 'win32') {
        chmodSync(join(dir, ARCHIVE_LINK_KEY_FILE), 0o644);
        expect(loadArchiveLinkKey(dir)).toEqual(key);
        expect(statSync(join(dir, ARCHIVE_LINK_KEY_FILE)).mode & 0o777).toBe(0o600);
      }
      writeFileSync(join(dir, ARCHIVE_LINK_KEY_FILE), 'short');
      expect(() => loadArchiveLinkKey(dir)).toThrow('must hold 32 bytes');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('closing the app cuts a download in flight instead of waiting for it (the agent resumes with Range)', async () => {
    const url = linkFor('wrk_1', 'upl_a', sha(archiveA));
    const res: IncomingMessage = await new Promise((resolve, reject) => get(url, resolve).once('error', reject));
    expect(res.statusCode).toBe(200);
    res.pause();
    const ended = new Promise<string>((resolve) => {
      res.once('aborted', () => resolve('aborted'));
      res.once('error', () => resolve('aborted'));
      res.once('end', () => resolve('complete'));
    });
    await cp.close();
    res.resume();
    expect(await ended).toBe('aborted');
    started = await start();
  });
});

describe('issueArchiveLink', () => {
  it('points at publicUrls.agents with the token in the query, expiring after linkTtlSeconds', () => {
    const { url, expiresAt } = links.issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_a', sha256: sha(archiveA) });
    expect(url.startsWith(`${started.publicUrls.agents}/agent/builds/upl_a/archive?token=v1.wrk_1.upl_a.`)).toBe(true);
    expect(expiresAt).toBe(clock.now() + TTL_SECONDS * 1000);
    issuedTokens.push(new URL(url).searchParams.get('token') ?? '');
  });

  it('refuses ids a token cannot carry and digests that are not SHA-256', () => {
    expect(() => links.issueArchiveLink({ workerId: 'wrk.1', uploadId: 'upl_a', sha256: sha(archiveA) })).toThrow('archive link ids');
    expect(() => links.issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_a', sha256: 'abc' })).toThrow('not a sha256 digest');
  });
});

// `request` is the HEAD path a plain node client takes (fetch may add its own headers).
describe('HEAD through node:http', () => {
  it('sends no body bytes at all', async () => {
    const url = new URL(linkFor('wrk_1', 'upl_a', sha(archiveA)));
    const res: IncomingMessage = await new Promise((resolve, reject) => request(url, { method: 'HEAD' }, resolve).once('error', reject).end());
    let received = 0;
    res.on('data', (c: Buffer) => (received += c.length));
    await once(res, 'end');
    expect([res.statusCode, res.headers['content-length'], received]).toEqual([200, String(archiveA.length), 0]);
  });
});
