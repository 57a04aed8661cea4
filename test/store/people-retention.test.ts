// PeopleRetentionRepository held to one contract in both stores, through its asynchronous
// interface only: ended sign-ins, dead links and mail ended before the cutoff go, a bounded batch
// per call with the count returned; live sign-ins, working links and pending mail stay.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const NOW = 10_000_000;
const IDLE_CUTOFF = NOW - 100_000;

describe.each(cases)('PeopleRetentionRepository ($name)', (store) => {
  let db: OpenedStore;

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_alice', email: 'alice@example.com', createdAt: 1 });
  });

  afterEach(async () => {
    await db.close();
  });

  const retention = () => db.repositories.peopleRetention;
  const signIns = () => db.repositories.signIns;
  const outbox = () => db.repositories.mailOutbox;

  const column = async (sql: string) => (await db.rows<{ v: string | number }>(sql)).map((r) => r.v);

  const session = (tokenHash: string, lastSeenAt: number, expiresAt: number) =>
    signIns().insertSession(tokenHash, { userId: 'usr_alice', createdAt: 1, lastSeenAt, expiresAt });

  describe('deleteEndedSignIns', () => {
    it('deletes sign-ins expired by now or idle since the cutoff, and keeps live ones', async () => {
      await session('expired', NOW - 1, NOW - 1);
      await session('expires_now', NOW - 1, NOW);
      await session('idle_at_cutoff', IDLE_CUTOFF, NOW + 1_000);
      await session('idle_before_cutoff', IDLE_CUTOFF - 1, NOW + 1_000);
      await session('live', IDLE_CUTOFF + 1, NOW + 1);

      expect(await retention().deleteEndedSignIns(NOW, IDLE_CUTOFF, 100)).toBe(4);
      expect(await column('SELECT token_hash AS v FROM dashboard_sessions ORDER BY token_hash')).toEqual(['live']);
      expect(await signIns().findSession('live')).toBeDefined();
      expect(await retention().deleteEndedSignIns(NOW, IDLE_CUTOFF, 100)).toBe(0);
    });

    it('deletes at most limit a call', async () => {
      for (let i = 0; i < 5; i++) await session(`ended_${i}`, NOW - 1, NOW - 1);
      await session('live', NOW, NOW + 1);
      expect(await retention().deleteEndedSignIns(NOW, IDLE_CUTOFF, 2)).toBe(2);
      expect(await retention().deleteEndedSignIns(NOW, IDLE_CUTOFF, 2)).toBe(2);
      expect(await retention().deleteEndedSignIns(NOW, IDLE_CUTOFF, 2)).toBe(1);
      expect(await retention().deleteEndedSignIns(NOW, IDLE_CUTOFF, 2)).toBe(0);
      expect(await column('SELECT token_hash AS v FROM dashboard_sessions')).toEqual(['live']);
    });
  });

  describe('deleteDeadLinks', () => {
    const link = (tokenHash: string, expiresAt: number) =>
      signIns().insertLink({ tokenHash, userId: 'usr_alice', purpose: 'passwordReset', createdAt: 1, expiresAt });

    it('deletes links used or expired by now, and keeps the ones that still work', async () => {
      await link('expired', NOW - 1);
      await link('expires_now', NOW);
      await link('used', NOW + 1_000);
      await link('working', NOW + 1);
      expect(await signIns().useLink('used', 'passwordReset', NOW - 10)).toBe('usr_alice');

      expect(await retention().deleteDeadLinks(NOW, 100)).toBe(3);
      expect(await column('SELECT token_hash AS v FROM user_links')).toEqual(['working']);
      expect(await signIns().findLinkUser('working', 'passwordReset', NOW)).toBe('usr_alice');
      expect(await retention().deleteDeadLinks(NOW, 100)).toBe(0);
    });

    it('deletes at most limit a call', async () => {
      for (let i = 0; i < 3; i++) await link(`dead_${i}`, NOW - 1);
      await link('working', NOW + 1);
      expect(await retention().deleteDeadLinks(NOW, 2)).toBe(2);
      expect(await retention().deleteDeadLinks(NOW, 2)).toBe(1);
      expect(await retention().deleteDeadLinks(NOW, 2)).toBe(0);
      expect(await column('SELECT token_hash AS v FROM user_links')).toEqual(['working']);
    });
  });

  describe('deleteEndedMailBefore', () => {
    const CUTOFF = NOW - 1_000;
    const mail = (n: number) => ({ to: `p${n}@example.com`, subject: 's', body: 'b' });

    it('deletes mail sent or given up before the cutoff, and keeps pending mail whatever its age', async () => {
      const sentBefore = await outbox().enqueue(mail(1), 1);
      const failedBefore = await outbox().enqueue(mail(2), 1);
      const sentAtCutoff = await outbox().enqueue(mail(3), 1);
      const failedAfter = await outbox().enqueue(mail(4), 1);
      const pendingOld = await outbox().enqueue(mail(5), 1);
      const retriedOld = await outbox().enqueue(mail(6), 1);
      await outbox().markSent(sentBefore, 1, CUTOFF - 1);
      await outbox().markFailed(failedBefore, 5, CUTOFF - 1, 'gave up');
      await outbox().markSent(sentAtCutoff, 1, CUTOFF);
      await outbox().markFailed(failedAfter, 5, CUTOFF + 1, 'gave up');
      await outbox().markRetry(retriedOld, 3, 2, 'busy');

      expect(await retention().deleteEndedMailBefore(CUTOFF, 100)).toBe(2);
      expect(await outbox().find(sentBefore)).toBeUndefined();
      expect(await outbox().find(failedBefore)).toBeUndefined();
      expect((await outbox().list(10)).map((m) => m.id)).toEqual([retriedOld, pendingOld, failedAfter, sentAtCutoff]);
      expect((await outbox().due(NOW, 10)).map((m) => m.id)).toEqual([pendingOld, retriedOld]);
      expect(await retention().deleteEndedMailBefore(CUTOFF, 100)).toBe(0);
    });

    it('deletes at most limit a call', async () => {
      for (let i = 0; i < 5; i++) await outbox().markSent(await outbox().enqueue(mail(i), 1), 1, 2);
      const pending = await outbox().enqueue(mail(9), 1);
      expect(await retention().deleteEndedMailBefore(CUTOFF, 3)).toBe(3);
      expect(await retention().deleteEndedMailBefore(CUTOFF, 3)).toBe(2);
      expect(await retention().deleteEndedMailBefore(CUTOFF, 3)).toBe(0);
      expect((await outbox().list(10)).map((m) => m.id)).toEqual([pending]);
    });
  });
});
