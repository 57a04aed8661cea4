// Secrets (API keys, worker tokens, admin token): generation, SHA-256 digests for storage,
// constant-time comparison, and reading a bearer credential. High-entropy secrets need no slow
// hash; a digest is enough.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new secret: `<prefix>_` + 32 random bytes in base64url. */
export function generateSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** SHA-256 of the secret's UTF-8 bytes, as 64 hex characters. */
export function sha256Hex(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Compares a presented secret with a stored SHA-256 hex digest in constant time. */
export function secretMatchesDigest(presented: string, storedDigestHex: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = Buffer.from(storedDigestHex, 'hex');
  return b.length === a.length && timingSafeEqual(a, b);
}

/** Compares two secrets in constant time (both are hashed first so lengths never leak). */
export function secretsEqual(presented: string, expected: string): boolean {
  return secretMatchesDigest(presented, sha256Hex(expected));
}

/**
 * The token of an `Authorization` value `Bearer <token>` (the scheme in any case, RFC 9110 §11.1;
 * the token 1–512 visible ASCII characters), or undefined when absent or malformed.
 */
export function bearerCredential(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  return /^bearer ([\x21-\x7e]{1,512})$/i.exec(authorization)?.[1];
}
