import { describe, expect, it } from 'vitest';
import { MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS, UNMATCHABLE_HASH, hashPassword, passwordProblem, verifyPassword } from './passwords';

describe('passwords', () => {
  it('hashes with scrypt (N 2^15, r 8, p 1) and a fresh salt, and verifies only the same password', async () => {
    const first = await hashPassword('correct horse battery');
    const second = await hashPassword('correct horse battery');
    expect(first).toMatch(/^scrypt\$15\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(second).not.toBe(first);
    expect(first).not.toContain('correct');
    expect(await verifyPassword('correct horse battery', first)).toBe(true);
    expect(await verifyPassword('correct horse battery', second)).toBe(true);
    expect(await verifyPassword('correct horse batterY', first)).toBe(false);
    expect(await verifyPassword('', first)).toBe(false);
  });

  it('reads a hash of another cost, so the cost can be raised later', async () => {
    const stored = await hashPassword('correct horse battery');
    // The same password and salt at N 2^14: a hash this code did not make, read by its own parameters.
    const { scryptSync } = await import('node:crypto');
    const salt = stored.split('$')[4]!;
    const key = scryptSync('correct horse battery', Buffer.from(salt, 'base64url'), 32, { N: 2 ** 14, r: 8, p: 1 }).toString('base64url');
    expect(await verifyPassword('correct horse battery', `scrypt$14$8$1$${salt}$${key}`)).toBe(true);
  });

  it('matches nothing with the unmatchable hash or a hash it cannot read', async () => {
    expect(await verifyPassword('', UNMATCHABLE_HASH)).toBe(false);
    expect(await verifyPassword('anything at all', UNMATCHABLE_HASH)).toBe(false);
    for (const bad of ['', 'plain', 'bcrypt$1$2$3$4$5', 'scrypt$40$8$1$AAAA$AAAA', 'scrypt$15$8$1$AAAAAAAAAAAAAAAAAAAAAA$short']) expect(await verifyPassword('x', bad)).toBe(false);
  });

  it('refuses short, overlong and e-mail-address passwords with a sentence', () => {
    expect(passwordProblem('a'.repeat(MIN_PASSWORD_CHARS - 1), 'ada@example.com')).toBe(`the password must have at least ${MIN_PASSWORD_CHARS} characters`);
    expect(passwordProblem('a'.repeat(MAX_PASSWORD_CHARS + 1), 'ada@example.com')).toBe(`the password must have at most ${MAX_PASSWORD_CHARS} characters`);
    expect(passwordProblem('adalovelace@example.com', 'AdaLovelace@example.com')).toBe('the password must not be your e-mail address');
    expect(passwordProblem('correct horse battery', 'ada@example.com')).toBeUndefined();
  });
});
