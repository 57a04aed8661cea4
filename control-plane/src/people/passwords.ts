// Passwords, stored as scrypt hashes (memory-hard: 32 MiB and ~100 ms per guess, on the libuv
// thread pool, never the event loop) in one self-describing string, so its cost can be raised later
// without losing the hashes made before: `scrypt$<log2 N>$<r>$<p>$<salt>$<hash>` (base64url).
// Checked in constant time; a password is never logged or stored in any other form.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** The shortest password accepted, and the longest (anonymous input is bounded). */
export const MIN_PASSWORD_CHARS = 12;
export const MAX_PASSWORD_CHARS = 256;

const LOG2_N = 15;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;

/** Why a new password is refused, in a sentence for the person choosing it; undefined when it is fine. */
export function passwordProblem(password: string, email: string): string | undefined {
  if (password.length < MIN_PASSWORD_CHARS) return `the password must have at least ${MIN_PASSWORD_CHARS} characters`;
  if (password.length > MAX_PASSWORD_CHARS) return `the password must have at most ${MAX_PASSWORD_CHARS} characters`;
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) return 'the password must not be your e-mail address';
  return undefined;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, { N: 2 ** LOG2_N, r: R, p: P });
  return ['scrypt', LOG2_N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** True when the password is the one hashed; false for any other, or for a hash this code cannot read. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [log2N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![log2N, r, p].every((n) => Number.isInteger(n) && n > 0) || log2N > 20 || r > 32 || p > 16) return false;
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (expected.length !== KEY_BYTES || password.length > MAX_PASSWORD_CHARS) return false;
  const key = await derive(password, Buffer.from(parts[4]!, 'base64url'), { N: 2 ** log2N, r, p });
  return timingSafeEqual(key, expected);
}

/**
 * A hash no password matches, checked for people who have none (an unknown address, an invitation
 * not yet taken up), so that a sign-in takes as long whether or not the account exists.
 */
export const UNMATCHABLE_HASH = ['scrypt', LOG2_N, R, P, 'AAAAAAAAAAAAAAAAAAAAAA', 'A'.repeat(43)].join('$');

function derive(password: string, salt: Buffer, cost: ScryptOptions & { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Room for N·r·128 bytes, twice over.
    scrypt(password.normalize('NFKC'), salt, KEY_BYTES, { ...cost, maxmem: 256 * cost.N * cost.r }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}
