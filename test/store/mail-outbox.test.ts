// MailOutboxRepository held to one contract in both stores, through its asynchronous interface
// only: mail is due oldest first within a limit, retried at its next time, and once sent or given
// up its body is gone from the database (it may carry a single-use link or an API key).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const NOW = 1_000_000;

const mail = (n: number) => ({ to: `person${n}@example.com`, subject: `Subject ${n}`, body: `Body ${n} with https://example.test/link/${n}` });

describe.each(cases)('MailOutboxRepository ($name)', (store) => {
  let db: OpenedStore;

  beforeEach(async () => {
    db = await store.open();
  });

  afterEach(async () => {
    await db.close();
  });

  const outbox = () => db.repositories.mailOutbox;

  const storedBody = async (id: number) => (await db.rows<{ body: string | null }>('SELECT body FROM mail_outbox WHERE id = ?', [id]))[0]?.body;

  it('enqueue stores a pending mail, due at once, and returns its id', async () => {
    const id = await outbox().enqueue(mail(1), NOW);
    expect(typeof id).toBe('number');
    expect(await outbox().find(id)).toEqual({
      id,
      to: 'person1@example.com',
      subject: 'Subject 1',
      createdAt: NOW,
      attempts: 0,
      state: 'pending',
      endedAt: undefined,
      lastError: undefined,
      bodyKept: true,
    });
    expect(await outbox().due(NOW, 10)).toEqual([{ id, ...mail(1), attempts: 0 }]);
    expect(await outbox().nextDueAt()).toBe(NOW);
  });

  it('gives each mail a new, increasing id', async () => {
    const a = await outbox().enqueue(mail(1), NOW);
    const b = await outbox().enqueue(mail(2), NOW);
    const c = await outbox().enqueue(mail(3), NOW - 5);
    expect(b).toBeGreaterThan(a);
    expect(c).toBeGreaterThan(b);
  });

  it('due answers mail due by then, oldest due first (ties by id), at most limit', async () => {
    const late = await outbox().enqueue(mail(1), NOW + 30);
    const early = await outbox().enqueue(mail(2), NOW + 10);
    const tieA = await outbox().enqueue(mail(3), NOW + 20);
    const tieB = await outbox().enqueue(mail(4), NOW + 20);
    const future = await outbox().enqueue(mail(5), NOW + 1_000);

    expect((await outbox().due(NOW + 30, 10)).map((m) => m.id)).toEqual([early, tieA, tieB, late]);
    expect((await outbox().due(NOW + 30, 2)).map((m) => m.id)).toEqual([early, tieA]);
    expect((await outbox().due(NOW + 20, 10)).map((m) => m.id)).toEqual([early, tieA, tieB]);
    expect(await outbox().due(NOW + 9, 10)).toEqual([]);
    expect((await outbox().due(NOW + 1_000, 10)).map((m) => m.id)).toEqual([early, tieA, tieB, late, future]);
  });

  it('nextDueAt is the earliest time a pending mail is due; undefined with none pending', async () => {
    expect(await outbox().nextDueAt()).toBeUndefined();
    const a = await outbox().enqueue(mail(1), NOW + 50);
    const b = await outbox().enqueue(mail(2), NOW + 20);
    expect(await outbox().nextDueAt()).toBe(NOW + 20);
    await outbox().markSent(b, 1, NOW + 21);
    expect(await outbox().nextDueAt()).toBe(NOW + 50);
    await outbox().markRetry(a, 1, NOW + 500, 'busy');
    expect(await outbox().nextDueAt()).toBe(NOW + 500);
    await outbox().markFailed(a, 2, NOW + 501, 'refused');
    expect(await outbox().nextDueAt()).toBeUndefined();
  });

  it('markRetry counts the attempt, keeps the body and the mail pending, and makes it due at its next time', async () => {
    const id = await outbox().enqueue(mail(1), NOW);
    const other = await outbox().enqueue(mail(2), NOW + 100);
    await outbox().markRetry(id, 1, NOW + 200, '421 try later');

    expect(await outbox().find(id)).toMatchObject({ state: 'pending', attempts: 1, endedAt: undefined, lastError: '421 try later', bodyKept: true });
    expect(await storedBody(id)).toBe(mail(1).body);
    expect((await outbox().due(NOW + 199, 10)).map((m) => m.id)).toEqual([other]);
    expect(await outbox().due(NOW + 200, 10)).toEqual([
      { id: other, ...mail(2), attempts: 0 },
      { id, ...mail(1), attempts: 1 },
    ]);
  });

  it('markSent records the delivery, clears the last error and wipes the body', async () => {
    const id = await outbox().enqueue(mail(1), NOW);
    await outbox().markRetry(id, 1, NOW + 10, '421 try later');
    await outbox().markSent(id, 2, NOW + 20);

    expect(await outbox().find(id)).toEqual({
      id,
      to: 'person1@example.com',
      subject: 'Subject 1',
      createdAt: NOW,
      attempts: 2,
      state: 'sent',
      endedAt: NOW + 20,
      lastError: undefined,
      bodyKept: false,
    });
    expect(await storedBody(id)).toBeNull();
    expect(await outbox().due(NOW + 1_000, 10)).toEqual([]);
  });

  it('markFailed records giving up, with its error, and wipes the body', async () => {
    const id = await outbox().enqueue(mail(1), NOW);
    await outbox().markFailed(id, 1, NOW + 5, '550 no such user');

    expect(await outbox().find(id)).toEqual({
      id,
      to: 'person1@example.com',
      subject: 'Subject 1',
      createdAt: NOW,
      attempts: 1,
      state: 'failed',
      endedAt: NOW + 5,
      lastError: '550 no such user',
      bodyKept: false,
    });
    expect(await storedBody(id)).toBeNull();
    expect(await outbox().due(NOW + 1_000, 10)).toEqual([]);
  });

  it('find answers undefined for an unknown id', async () => {
    expect(await outbox().find(12_345)).toBeUndefined();
  });

  it('list answers every mail, whatever its state, newest first, at most limit', async () => {
    const sent = await outbox().enqueue(mail(1), NOW);
    const failed = await outbox().enqueue(mail(2), NOW + 1);
    const pending = await outbox().enqueue(mail(3), NOW + 2);
    await outbox().markSent(sent, 1, NOW + 10);
    await outbox().markFailed(failed, 3, NOW + 11, 'gave up');

    const all = await outbox().list(10);
    expect(all.map((m) => [m.id, m.state, m.bodyKept])).toEqual([
      [pending, 'pending', true],
      [failed, 'failed', false],
      [sent, 'sent', false],
    ]);
    expect(all[1]).toEqual(await outbox().find(failed));
    expect((await outbox().list(2)).map((m) => m.id)).toEqual([pending, failed]);
    expect(await outbox().list(0)).toEqual([]);
  });

  it('list is empty with no mail', async () => {
    expect(await outbox().list(10)).toEqual([]);
  });
});
