// AccessFactsRepository held to one contract in both stores: one answer whatever exists (a user,
// their live key, the project, the membership), frozen, and every change (key rotation,
// membership, subscription), also one written outside the repositories, seen by the next read.
// (SQLite's cache and the triggers that clear it are control-plane/src/repositories/access-facts.test.ts's;
// the PostgreSQL twin keeps no cache.)
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeCases, type OpenedStore } from '../support/store-cases';

const cases = storeCases();

describe.each(cases)('AccessFactsRepository ($name)', (store) => {
  let db: OpenedStore;

  /** Runs a write; SQL both dialects read alike (RETURNING so SQLite's probe, which reads rows, accepts it). */
  const write = (sql: string, values: readonly unknown[]) => db.rows(`${sql} RETURNING 1 AS written`, values);

  beforeEach(async () => {
    db = await store.open();
    await db.repositories.users.insert({ userId: 'usr_owner', email: 'owner@example.com', createdAt: 1 });
    await db.repositories.users.insert({ userId: 'usr_member', email: 'member@example.com', createdAt: 1 });
    await db.repositories.users.replaceKey('usr_owner', 'digest-1', 1);
    await write("INSERT INTO projects (id, owner_user_id, name, region, created_at) VALUES (?, 'usr_owner', 'One', 'europe', 1)", ['prj_1']);
  });

  afterEach(async () => {
    await db.close();
  });

  const facts = () => db.repositories.accessFacts;

  it('reads the user, their live key, the project and the membership in one answer', async () => {
    expect(await facts().read('usr_owner', 'prj_1')).toEqual({
      key: { exists: true, liveKeyHash: 'digest-1' },
      project: { ownerUserId: 'usr_owner', subscriptionStatus: 'active', memberAccess: undefined },
    });
    await write("INSERT INTO project_members (project_id, user_id, access, created_at) VALUES (?, ?, 'FULL', 2)", ['prj_1', 'usr_member']);
    expect(await facts().read('usr_member', 'prj_1')).toEqual({
      key: { exists: true, liveKeyHash: undefined },
      project: { ownerUserId: 'usr_owner', subscriptionStatus: 'active', memberAccess: 'FULL' },
    });
  });

  it('answers unknown users and projects with empty facts rather than no answer', async () => {
    expect(await facts().read('usr_nobody', 'prj_none')).toEqual({ key: { exists: false, liveKeyHash: undefined }, project: undefined });
    expect((await facts().read('usr_member', 'prj_1')).key).toEqual({ exists: true, liveKeyHash: undefined });
    expect((await facts().read('usr_nobody', 'prj_1')).project?.ownerUserId).toBe('usr_owner');
    expect(await facts().read('usr_owner', 'prj_none')).toEqual({ key: { exists: true, liveKeyHash: 'digest-1' }, project: undefined });
  });

  it('compares ids exactly: another case is another id', async () => {
    expect(await facts().read('USR_OWNER', 'PRJ_1')).toEqual({ key: { exists: false, liveKeyHash: undefined }, project: undefined });
  });

  it('sees a rotated key, a membership change and a subscription change at once', async () => {
    expect((await facts().read('usr_owner', 'prj_1')).key.liveKeyHash).toBe('digest-1');
    expect((await facts().read('usr_member', 'prj_1')).project?.memberAccess).toBeUndefined();
    await db.repositories.users.replaceKey('usr_owner', 'digest-2', 2);
    expect((await facts().read('usr_owner', 'prj_1')).key.liveKeyHash).toBe('digest-2');
    await write("INSERT INTO project_members (project_id, user_id, access, created_at) VALUES (?, ?, 'READONLY', 2)", ['prj_1', 'usr_member']);
    expect((await facts().read('usr_member', 'prj_1')).project?.memberAccess).toBe('READONLY');
    await write("UPDATE project_members SET access = 'FULL' WHERE project_id = ? AND user_id = ?", ['prj_1', 'usr_member']);
    expect((await facts().read('usr_member', 'prj_1')).project?.memberAccess).toBe('FULL');
    await write('DELETE FROM project_members WHERE project_id = ? AND user_id = ?', ['prj_1', 'usr_member']);
    expect((await facts().read('usr_member', 'prj_1')).project?.memberAccess).toBeUndefined();
    await write('UPDATE projects SET subscription_status = ? WHERE id = ?', ['past_due', 'prj_1']);
    expect((await facts().read('usr_owner', 'prj_1')).project?.subscriptionStatus).toBe('past_due');
  });

  it('sees a revoked key, a deleted project and a user created later on the next read', async () => {
    expect((await facts().read('usr_owner', 'prj_1')).key.liveKeyHash).toBe('digest-1');
    expect((await facts().read('usr_later', 'prj_1')).key.exists).toBe(false);
    await write('UPDATE api_keys SET revoked_at = 5 WHERE user_id = ?', ['usr_owner']);
    expect((await facts().read('usr_owner', 'prj_1')).key.liveKeyHash).toBeUndefined();
    await write('INSERT INTO users (id, email, created_at) VALUES (?, ?, ?)', ['usr_later', 'later@example.com', 4]);
    expect((await facts().read('usr_later', 'prj_1')).key.exists).toBe(true);
    await write('DELETE FROM projects WHERE id = ?', ['prj_1']);
    expect((await facts().read('usr_owner', 'prj_1')).project).toBeUndefined();
  });

  it('hands out facts that cannot be changed by a caller', async () => {
    const read = await facts().read('usr_owner', 'prj_1');
    expect(Object.isFrozen(read) && Object.isFrozen(read.key) && Object.isFrozen(read.project)).toBe(true);
    const unknown = await facts().read('usr_nobody', 'prj_none');
    expect(Object.isFrozen(unknown) && Object.isFrozen(unknown.key)).toBe(true);
  });
});
