// Archive link tokens on a ManualClock: what a link carries, each refusal (missing, invalid,
// another build, expired at the exact millisecond), and the link key file in the data dir.
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, redactUrl } from '@pixelfleet/common';
import { ARCHIVE_LINK_KEY_FILE, ArchiveLinks, loadArchiveLinkKey } from './archive-links';

const SHA_A = 'a'.repeat(64);
const SHA_B = 'b'.repeat(64);
const TTL_SECONDS = 600;
let dir: string;
let clock: ManualClock;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-archive-links-'));
  clock = new ManualClock();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Links under the data dir's key; builds and blobs are not consulted by issue and verify. */
function linksOf(key = loadArchiveLinkKey(dir), listening = true) {
  return new ArchiveLinks({
    key,
    clock,
    linkTtlSeconds: TTL_SECONDS,
    agentsUrl: () => (listening ? 'https://cp.example.com' : undefined),
    builds: { findById: () => Promise.resolve(undefined) },
    blobs: { has: () => Promise.resolve(false), read: () => Promise.reject(new Error('not read here')), directUrl: () => Promise.resolve(undefined) },
  });
}
const tokenOf = (url: string) => new URL(url).searchParams.get('token') ?? '';

describe('issueArchiveLink and verifyArchiveToken', () => {
  it('issues a URL on the agents origin whose token verifies for its build until expiresAt', () => {
    const links = linksOf();
    const { url, expiresAt } = links.issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_1', sha256: SHA_A });
    expect(url.startsWith('https://cp.example.com/agent/builds/upl_1/archive?token=v1.wrk_1.upl_1.')).toBe(true);
    expect(expiresAt).toBe(clock.now() + TTL_SECONDS * 1000);
    expect(links.verifyArchiveToken(tokenOf(url), 'upl_1')).toEqual({ ok: true, workerId: 'wrk_1', sha256: SHA_A, expiresAt });
    clock.advance(TTL_SECONDS * 1000 - 1);
    expect(links.verifyArchiveToken(tokenOf(url), 'upl_1').ok).toBe(true);
    clock.advance(1);
    expect(links.verifyArchiveToken(tokenOf(url), 'upl_1')).toEqual({ ok: false, refusal: 'expired' });
  });

  it("issues tokens the logger's redactUrl recognizes wherever they are pasted", () => {
    const { url } = linksOf().issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_1', sha256: SHA_A });
    const token = tokenOf(url);
    const path = new URL(url).pathname;
    for (const logged of [`${path}?token=${token}`, `${path}?t=${token}`, `${path}/${token}`, `/${token}/archive`]) {
      expect(redactUrl(logged)).not.toContain(token.split('.').at(-1));
      expect(redactUrl(logged)).toContain('[Redacted]');
    }
  });

  it('refuses a missing token, a garbled one, one changed in any field, and one under another key', () => {
    const links = linksOf();
    const token = tokenOf(links.issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_1', sha256: SHA_A }).url);
    expect(links.verifyArchiveToken(undefined, 'upl_1')).toEqual({ ok: false, refusal: 'missing' });
    expect(links.verifyArchiveToken('', 'upl_1')).toEqual({ ok: false, refusal: 'missing' });
    for (const garbled of ['garbage', ['a', 'b'], `${token}x`, token.replace(/^v1/, 'v2')]) {
      expect(links.verifyArchiveToken(garbled, 'upl_1')).toEqual({ ok: false, refusal: 'invalid' });
    }
    const parts = token.split('.');
    const changes: [number, string][] = [[1, 'wrk_2'], [2, 'upl_2'], [3, SHA_B], [4, String(Number(parts[4]) + 1)], [5, `${parts[5]?.startsWith('A') ? 'B' : 'A'}${parts[5]?.slice(1) ?? ''}`]];
    for (const [i, value] of changes) {
      const copy = [...parts];
      copy[i] = value;
      expect(links.verifyArchiveToken(copy.join('.'), copy[2] ?? ''), `field ${i}`).toEqual({ ok: false, refusal: 'invalid' });
    }
    expect(linksOf(Buffer.alloc(32, 7)).verifyArchiveToken(token, 'upl_1')).toEqual({ ok: false, refusal: 'invalid' });
  });

  it("refuses another build's genuine token as being for another build, even once expired", () => {
    const links = linksOf();
    const token = tokenOf(links.issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_2', sha256: SHA_B }).url);
    expect(links.verifyArchiveToken(token, 'upl_1')).toEqual({ ok: false, refusal: 'otherBuild' });
    clock.advance(TTL_SECONDS * 1000);
    expect(links.verifyArchiveToken(token, 'upl_1')).toEqual({ ok: false, refusal: 'otherBuild' });
  });

  it('refuses to issue before the HTTP server listens, for ids a token cannot carry, and for a digest that is not SHA-256', () => {
    expect(() => linksOf(undefined, false).issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_1', sha256: SHA_A })).toThrow('HTTP server listening');
    expect(() => linksOf().issueArchiveLink({ workerId: 'wrk.1', uploadId: 'upl_1', sha256: SHA_A })).toThrow('archive link ids');
    expect(() => linksOf().issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl/1', sha256: SHA_A })).toThrow('archive link ids');
    expect(() => linksOf().issueArchiveLink({ workerId: 'wrk_1', uploadId: 'upl_1', sha256: 'ABC' })).toThrow('not a sha256 digest');
  });
});

describe('loadArchiveLinkKey', () => {
  it('makes a 32-byte owner-only key once and reads the same key after', () => {
    const key = loadArchiveLinkKey(dir);
    expect(key.length).toBe(32);
    if (process.platform !== 'win32') expect(statSync(join(dir, ARCHIVE_LINK_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(loadArchiveLinkKey(dir)).toEqual(key);
  });

  it.skipIf(process.platform === 'win32')('narrows a key file others can read to 0600', () => {
    const key = loadArchiveLinkKey(dir);
    chmodSync(join(dir, ARCHIVE_LINK_KEY_FILE), 0o644);
    expect(loadArchiveLinkKey(dir)).toEqual(key);
    expect(statSync(join(dir, ARCHIVE_LINK_KEY_FILE)).mode & 0o777).toBe(0o600);
  });

  it('refuses a key file of the wrong length, saying how to recover', () => {
    writeFileSync(join(dir, ARCHIVE_LINK_KEY_FILE), 'short');
    expect(() => loadArchiveLinkKey(dir)).toThrow('must hold 32 bytes (delete it to make a new key, which revokes every archive link)');
  });
});
