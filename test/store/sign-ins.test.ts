// SignInsRepository held to one contract in both stores, through its asynchronous interface only:
// password hashes, single-use links (used once even when two requests race, dead once expired or
// retired) and dashboard sign-in sessions (found, touched, made operator, ended one or all at once).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const NOW = 1_000_000;
const HOUR = 60 * 60 * 1000;

/** A link of alice's, made at NOW, that works for an hour. */
const link = (tokenHash: string, overrides: Partial<{ userId: string; purpose: 'invitation' | 'passwordReset'; createdAt: number; expiresAt: number }> = {}) => ({
  tokenHash,
  userId: 'usr_alice',
  purpose: 'invitation' as const,
  createdAt: NOW,
  expiresAt: NOW + HOUR,
  ...overrides,
});

/** A sign-in of alice's, made at NOW, for a day. */
const signIn = (overrides: Partial<{ userId: string; createdAt: number; lastSeenAt: number; expiresAt: number }> = {}) => ({
  userId: 'usr_alice',
  createdAt: NOW,
  lastSeenAt: NOW,
  expiresAt: NOW + 24 * HOUR,
  ...overrides,
});

describe.each(cases)('SignInsRepository ($name)', (store) => {
  let db: OpenedStore;

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_alice', email: 'alice@example.com', createdAt: 1 });
    await db.repositories.users.insert({ userId: 'usr_bob', email: 'bob@example.com', createdAt: 2 });
  });

  afterEach(async () => {
    await db.close();
  });

  const signIns = () => db.repositories.signIns;

  const usedAt = async (tokenHash: string) => (await db.rows<{ used_at: number | null }>('SELECT used_at FROM user_links WHERE token_hash = ?', [tokenHash]))[0]?.used_at;

  describe('password hashes', () => {
    it('has none until one is set, then the one set last', async () => {
      expect(await signIns().passwordHash('usr_alice')).toBeUndefined();
      await signIns().setPasswordHash('usr_alice', 'scrypt$one');
      expect(await signIns().passwordHash('usr_alice')).toBe('scrypt$one');
      await signIns().setPasswordHash('usr_alice', 'scrypt$two');
      expect(await signIns().passwordHash('usr_alice')).toBe('scrypt$two');
      expect(await signIns().passwordHash('usr_bob')).toBeUndefined();
    });

    it('has none for an unknown user, and setting one creates no user', async () => {
      await signIns().setPasswordHash('usr_nobody', 'scrypt$x');
      expect(await signIns().passwordHash('usr_nobody')).toBeUndefined();
      expect(await db.repositories.users.findById('usr_nobody')).toBeUndefined();
    });
  });

  describe('links', () => {
    it('findLinkUser answers for a working link without using it', async () => {
      await signIns().insertLink(link('lnk_1'));
      expect(await signIns().findLinkUser('lnk_1', 'invitation', NOW + 1)).toBe('usr_alice');
      expect(await signIns().findLinkUser('lnk_1', 'invitation', NOW + 2)).toBe('usr_alice');
      expect(await usedAt('lnk_1')).toBeNull();
      expect(await signIns().useLink('lnk_1', 'invitation', NOW + 3)).toBe('usr_alice');
    });

    it('a link is used once: the second use finds nothing, and findLinkUser no longer finds it', async () => {
      await signIns().insertLink(link('lnk_1'));
      expect(await signIns().useLink('lnk_1', 'invitation', NOW + 10)).toBe('usr_alice');
      expect(await usedAt('lnk_1')).toBe(NOW + 10);
      expect(await signIns().useLink('lnk_1', 'invitation', NOW + 11)).toBeUndefined();
      expect(await signIns().findLinkUser('lnk_1', 'invitation', NOW + 11)).toBeUndefined();
      expect(await usedAt('lnk_1')).toBe(NOW + 10);
    });

    it('two uses of the same link at once: exactly one gets the user', async () => {
      await signIns().insertLink(link('lnk_1'));
      const answers = await Promise.all([signIns().useLink('lnk_1', 'invitation', NOW + 10), signIns().useLink('lnk_1', 'invitation', NOW + 10)]);
      expect(answers.filter((a) => a === 'usr_alice')).toHaveLength(1);
      expect(answers.filter((a) => a === undefined)).toHaveLength(1);
    });

    it('an expired link does not work (it expires at expiresAt)', async () => {
      await signIns().insertLink(link('lnk_1', { expiresAt: NOW + HOUR }));
      expect(await signIns().findLinkUser('lnk_1', 'invitation', NOW + HOUR - 1)).toBe('usr_alice');
      expect(await signIns().findLinkUser('lnk_1', 'invitation', NOW + HOUR)).toBeUndefined();
      expect(await signIns().useLink('lnk_1', 'invitation', NOW + HOUR)).toBeUndefined();
      expect(await signIns().useLink('lnk_1', 'invitation', NOW + 2 * HOUR)).toBeUndefined();
      expect(await usedAt('lnk_1')).toBeNull();
    });

    it('a link of one purpose does not work for the other, and is not used by trying', async () => {
      await signIns().insertLink(link('lnk_1', { purpose: 'passwordReset' }));
      expect(await signIns().findLinkUser('lnk_1', 'invitation', NOW + 1)).toBeUndefined();
      expect(await signIns().useLink('lnk_1', 'invitation', NOW + 1)).toBeUndefined();
      expect(await signIns().useLink('lnk_1', 'passwordReset', NOW + 2)).toBe('usr_alice');
    });

    it('an unknown link finds no one', async () => {
      expect(await signIns().findLinkUser('lnk_nothing', 'invitation', NOW)).toBeUndefined();
      expect(await signIns().useLink('lnk_nothing', 'invitation', NOW)).toBeUndefined();
    });

    it('refuses a second link with the same token, and one for an unknown user', async () => {
      await signIns().insertLink(link('lnk_1'));
      await expect(signIns().insertLink(link('lnk_1', { userId: 'usr_bob' }))).rejects.toThrow();
      expect(await signIns().findLinkUser('lnk_1', 'invitation', NOW + 1)).toBe('usr_alice');
      await expect(signIns().insertLink(link('lnk_2', { userId: 'usr_nobody' }))).rejects.toThrow();
      expect(await signIns().findLinkUser('lnk_2', 'invitation', NOW + 1)).toBeUndefined();
    });

    it("retireLinks ends the user's unused links of one purpose, and nobody else's", async () => {
      await signIns().insertLink(link('lnk_a1'));
      await signIns().insertLink(link('lnk_a2'));
      await signIns().insertLink(link('lnk_a_used'));
      await signIns().insertLink(link('lnk_a_reset', { purpose: 'passwordReset' }));
      await signIns().insertLink(link('lnk_b', { userId: 'usr_bob' }));
      expect(await signIns().useLink('lnk_a_used', 'invitation', NOW + 5)).toBe('usr_alice');

      await signIns().retireLinks('usr_alice', 'invitation', NOW + 10);

      expect(await signIns().findLinkUser('lnk_a1', 'invitation', NOW + 11)).toBeUndefined();
      expect(await signIns().useLink('lnk_a2', 'invitation', NOW + 11)).toBeUndefined();
      expect(await usedAt('lnk_a1')).toBe(NOW + 10);
      expect(await usedAt('lnk_a_used')).toBe(NOW + 5);
      expect(await signIns().findLinkUser('lnk_a_reset', 'passwordReset', NOW + 11)).toBe('usr_alice');
      expect(await signIns().findLinkUser('lnk_b', 'invitation', NOW + 11)).toBe('usr_bob');
    });
  });

  describe('sessions', () => {
    it('finds a session as it was stored, with no operator time', async () => {
      await signIns().insertSession('ses_1', signIn());
      const found = await signIns().findSession('ses_1');
      expect(found).toEqual(signIn());
      expect(found).not.toHaveProperty('operatorUntil');
      expect(await signIns().findSession('ses_nothing')).toBeUndefined();
    });

    it('touchSession moves lastSeenAt only, of that session only', async () => {
      await signIns().insertSession('ses_1', signIn());
      await signIns().insertSession('ses_2', signIn());
      await signIns().touchSession('ses_1', NOW + 5_000);
      expect(await signIns().findSession('ses_1')).toEqual(signIn({ lastSeenAt: NOW + 5_000 }));
      expect(await signIns().findSession('ses_2')).toEqual(signIn());
    });

    it('setOperatorUntil lets the session act as an operator until then', async () => {
      await signIns().insertSession('ses_1', signIn());
      await signIns().setOperatorUntil('ses_1', NOW + HOUR);
      expect(await signIns().findSession('ses_1')).toEqual({ ...signIn(), operatorUntil: NOW + HOUR });
      await signIns().setOperatorUntil('ses_1', NOW + 2 * HOUR);
      expect((await signIns().findSession('ses_1'))?.operatorUntil).toBe(NOW + 2 * HOUR);
    });

    it('touching, or making operator, an unknown session stores nothing', async () => {
      await signIns().touchSession('ses_nothing', NOW);
      await signIns().setOperatorUntil('ses_nothing', NOW);
      expect(await signIns().findSession('ses_nothing')).toBeUndefined();
    });

    it('refuses a second session with the same token, and one for an unknown user', async () => {
      await signIns().insertSession('ses_1', signIn());
      await expect(signIns().insertSession('ses_1', signIn({ userId: 'usr_bob' }))).rejects.toThrow();
      expect((await signIns().findSession('ses_1'))?.userId).toBe('usr_alice');
      await expect(signIns().insertSession('ses_2', signIn({ userId: 'usr_nobody' }))).rejects.toThrow();
      expect(await signIns().findSession('ses_2')).toBeUndefined();
    });

    it('deleteSession ends that session only', async () => {
      await signIns().insertSession('ses_1', signIn());
      await signIns().insertSession('ses_2', signIn());
      await signIns().deleteSession('ses_1');
      await signIns().deleteSession('ses_nothing');
      expect(await signIns().findSession('ses_1')).toBeUndefined();
      expect(await signIns().findSession('ses_2')).toEqual(signIn());
    });

    it("deleteSessionsOf without keep ends every session of the user, and nobody else's", async () => {
      await signIns().insertSession('ses_a1', signIn());
      await signIns().insertSession('ses_a2', signIn());
      await signIns().insertSession('ses_a3', signIn());
      await signIns().insertSession('ses_b', signIn({ userId: 'usr_bob' }));
      expect(await signIns().deleteSessionsOf('usr_alice')).toBe(3);
      for (const token of ['ses_a1', 'ses_a2', 'ses_a3']) expect(await signIns().findSession(token)).toBeUndefined();
      expect((await signIns().findSession('ses_b'))?.userId).toBe('usr_bob');
      expect(await signIns().deleteSessionsOf('usr_alice')).toBe(0);
    });

    it('deleteSessionsOf with keep ends every other session of the user', async () => {
      await signIns().insertSession('ses_a1', signIn());
      await signIns().insertSession('ses_a2', signIn());
      await signIns().insertSession('ses_a3', signIn());
      await signIns().insertSession('ses_b', signIn({ userId: 'usr_bob' }));
      expect(await signIns().deleteSessionsOf('usr_alice', 'ses_a2')).toBe(2);
      expect(await signIns().findSession('ses_a1')).toBeUndefined();
      expect(await signIns().findSession('ses_a2')).toEqual(signIn());
      expect(await signIns().findSession('ses_a3')).toBeUndefined();
      expect((await signIns().findSession('ses_b'))?.userId).toBe('usr_bob');
      expect(await signIns().deleteSessionsOf('usr_alice', 'ses_a2')).toBe(0);
    });

    it("deleteSessionsOf with another user's token as keep ends all of the user's sessions, and not that one", async () => {
      await signIns().insertSession('ses_a1', signIn());
      await signIns().insertSession('ses_b', signIn({ userId: 'usr_bob' }));
      expect(await signIns().deleteSessionsOf('usr_alice', 'ses_b')).toBe(1);
      expect(await signIns().findSession('ses_a1')).toBeUndefined();
      expect((await signIns().findSession('ses_b'))?.userId).toBe('usr_bob');
    });
  });
});
