// WebhookDeliveriesRepository held to one contract in both stores, through its asynchronous
// interface only: every field of an attempt round-trips (absent ones stay undefined), a project's
// attempts list newest first by the order they were stored, bounded, and only of known projects.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookDelivery } from '@pixelfleet/control-plane/test-support';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

const delivery = (projectId: string, attemptedAt: number, extra: Partial<WebhookDelivery> = {}): WebhookDelivery => ({
  projectId,
  event: 'build.ready',
  uploadId: undefined,
  url: 'https://hooks.example.com/pixelfleet',
  statusCode: 200,
  failure: undefined,
  error: undefined,
  durationMs: 12,
  attemptedAt,
  ...extra,
});

describe.each(cases)('WebhookDeliveriesRepository ($name)', (store) => {
  let db: OpenedStore;

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_1', email: 'u@example.com', createdAt: 1 });
    for (const id of ['prj_1', 'prj_2']) {
      await db.rows('INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES (?, ?, ?, ?, ?) RETURNING 1 AS inserted', [id, 'usr_1', id, 'europe', 1]);
    }
  });

  afterEach(async () => {
    await db.close();
  });

  const deliveries = () => db.repositories.webhookDeliveries;

  it('round-trips every field of an attempt, absent ones as undefined', async () => {
    const answered = delivery('prj_1', 1_700_000_000_123, { uploadId: 'upl_1', statusCode: 503, failure: 'rejected', error: 'HTTP 503 from 10.0.0.7 ✗', durationMs: 2_500 });
    const unanswered = delivery('prj_1', 1_700_000_000_456, { event: 'build.rejected', statusCode: undefined, failure: 'timedOut', error: 'timed out after 5000 ms' });
    const bare = delivery('prj_1', 1_700_000_000_789, { statusCode: undefined, durationMs: 0 });
    for (const d of [answered, unanswered, bare]) await deliveries().insert(d);
    expect(await deliveries().listByProject('prj_1', 10)).toEqual([bare, unanswered, answered]);
  });

  it('keeps each failure kind the catalogue words', async () => {
    const kinds = ['refused', 'unreachable', 'timedOut', 'rejected'] as const;
    for (const [i, failure] of kinds.entries()) await deliveries().insert(delivery('prj_1', i, { failure, statusCode: undefined, error: failure }));
    expect((await deliveries().listByProject('prj_1', 10)).map((d) => d.failure)).toEqual([...kinds].reverse());
  });

  it('lists newest first by the order attempts were stored, not by their attempt time', async () => {
    await deliveries().insert(delivery('prj_1', 300, { event: 'first' }));
    await deliveries().insert(delivery('prj_1', 100, { event: 'second' }));
    await deliveries().insert(delivery('prj_1', 200, { event: 'third' }));
    expect((await deliveries().listByProject('prj_1', 10)).map((d) => d.event)).toEqual(['third', 'second', 'first']);
  });

  it("honours the limit and lists only the project's own attempts", async () => {
    for (let i = 0; i < 5; i++) {
      await deliveries().insert(delivery('prj_1', i, { event: `e${i}` }));
      await deliveries().insert(delivery('prj_2', i, { event: `other${i}` }));
    }
    expect((await deliveries().listByProject('prj_1', 3)).map((d) => d.event)).toEqual(['e4', 'e3', 'e2']);
    expect((await deliveries().listByProject('prj_1', 100)).map((d) => d.event)).toEqual(['e4', 'e3', 'e2', 'e1', 'e0']);
    expect((await deliveries().listByProject('prj_2', 1)).map((d) => d.event)).toEqual(['other4']);
    expect(await deliveries().listByProject('prj_1', 0)).toEqual([]);
    expect(await deliveries().listByProject('prj_none', 10)).toEqual([]);
  });

  it('refuses an attempt for an unknown project', async () => {
    await expect(deliveries().insert(delivery('prj_none', 1))).rejects.toThrow(/foreign key/i);
    expect(await deliveries().listByProject('prj_none', 10)).toEqual([]);
  });
});
