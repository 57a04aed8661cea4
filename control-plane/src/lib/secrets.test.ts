import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '@pixelfleet/common';
import { generateSecret, secretMatchesDigest, secretsEqual, sha256Hex } from './secrets';

describe('generateSecret', () => {
  it('is the prefix, an underscore and at least 43 base64url characters (32 random bytes)', () => {
    const s = generateSecret('pfk');
    expect(s).toMatch(/^pfk_[A-Za-z0-9_-]{43,}$/);
    expect(Buffer.from(s.slice('pfk_'.length), 'base64url')).toHaveLength(32);
  });

  it('keeps the given prefix', () => {
    expect(generateSecret('wrk').startsWith('wrk_')).toBe(true);
  });

  // API keys (accounts), viewer tokens (sessions) and worker tokens (registry) are made here.
  it.each(['pfk', 'pfv', 'pfw'])("makes %s secrets the logger's redactUrl removes from a URL's path and query", (prefix) => {
    const s = generateSecret(prefix);
    expect(redactUrl(`/api/v1/${s}/x?userId=${s}`)).toBe('/api/v1/[Redacted]/x?userId=[Redacted]');
  });

  it('never repeats', () => {
    const seen = new Set(Array.from({ length: 200 }, () => generateSecret('pfk')));
    expect(seen.size).toBe(200);
  });
});

describe('sha256Hex', () => {
  it('is the SHA-256 of the UTF-8 bytes as 64 lowercase hex characters', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('é')).toBe(createHash('sha256').update(Buffer.from('é', 'utf8')).digest('hex'));
    expect(sha256Hex('x')).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('secretMatchesDigest', () => {
  it('is true for the secret the digest was made from', () => {
    const secret = generateSecret('pfk');
    expect(secretMatchesDigest(secret, sha256Hex(secret))).toBe(true);
  });

  it('is false for any other secret', () => {
    const secret = generateSecret('pfk');
    const digest = sha256Hex(secret);
    expect(secretMatchesDigest(generateSecret('pfk'), digest)).toBe(false);
    expect(secretMatchesDigest(`${secret}x`, digest)).toBe(false);
    expect(secretMatchesDigest(secret.slice(0, -1), digest)).toBe(false);
    expect(secretMatchesDigest('', digest)).toBe(false);
  });

  it('is false (not a throw) for a digest of the wrong length or not hex', () => {
    const secret = 'some-secret';
    const digest = sha256Hex(secret);
    expect(secretMatchesDigest(secret, digest.slice(0, 62))).toBe(false);
    expect(secretMatchesDigest(secret, `${digest}00`)).toBe(false);
    expect(secretMatchesDigest(secret, '')).toBe(false);
    expect(secretMatchesDigest(secret, 'z'.repeat(64))).toBe(false);
  });
});

describe('secretsEqual', () => {
  it('compares two secrets, including ones of different lengths', () => {
    expect(secretsEqual('admin-token-123456', 'admin-token-123456')).toBe(true);
    expect(secretsEqual('admin-token-123456', 'admin-token-123457')).toBe(false);
    expect(secretsEqual('short', 'admin-token-123456')).toBe(false);
    expect(secretsEqual('', '')).toBe(true);
  });
});
