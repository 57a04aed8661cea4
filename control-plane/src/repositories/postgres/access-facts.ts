// What the API's key and project checks need about one user and one project, in PostgreSQL; the
// SQLite twin is ../access-facts.ts. No cache here, unlike SQLite's: the control planes sharing
// this database write the fact tables too, and another replica's write (a rotated key, a removed
// member) fires no trigger in this process, so a cached fact could outlive it. Every read is one
// statement, each of its joins a primary-key or unique-index probe: a revoked key or a removed
// member is seen by the next request, whichever replica made the change.
import type { PostgresPool } from '../../db/postgres-database';
import type { AccessFacts, AccessFactsRepository } from '../access-facts';
import type { MemberAccess } from '../projects';
import { firstRowOf } from './postgres-sql';

interface Row {
  user_id: string | null;
  key_hash: string | null;
  owner_user_id: string | null;
  subscription_status: string | null;
  access: MemberAccess | null;
}

/** Always one row: the parameters are the driving row and everything else is a LEFT JOIN (as in SQLite). */
const FACTS = `SELECT u.id AS user_id, k.key_hash, p.owner_user_id, p.subscription_status, m.access
  FROM (SELECT $1::text AS user_id, $2::text AS project_id) q
  LEFT JOIN users u ON u.id = q.user_id
  LEFT JOIN api_keys k ON k.user_id = u.id AND k.revoked_at IS NULL
  LEFT JOIN projects p ON p.id = q.project_id
  LEFT JOIN project_members m ON m.project_id = p.id AND m.user_id = q.user_id`;

export class PostgresAccessFactsRepository implements AccessFactsRepository {
  constructor(private readonly pool: PostgresPool) {}

  async read(userId: string, projectId: string): Promise<AccessFacts> {
    const r = (await firstRowOf<Row>(this.pool, FACTS, [userId, projectId]))!;
    // Frozen, as the SQLite twin hands them out: no caller can change what another reads.
    return Object.freeze({
      key: Object.freeze({ exists: r.user_id !== null, liveKeyHash: r.key_hash ?? undefined }),
      // subscription_status is NOT NULL: a project row always has one.
      project:
        r.owner_user_id === null || r.subscription_status === null
          ? undefined
          : Object.freeze({ ownerUserId: r.owner_user_id, subscriptionStatus: r.subscription_status, memberAccess: r.access ?? undefined }),
    });
  }
}
