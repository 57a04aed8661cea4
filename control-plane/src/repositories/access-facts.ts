// What the API's key and project checks need about one user and one project, read in one
// statement: the user and their live key digest, the project's owner and subscription, and the
// user's membership. For the polled GET routes, where three reads per request add up.
import type { Db } from '../db/database';
import type { MemberAccess, ProjectAccessFacts } from './projects';

export interface KeyFacts {
  /** Whether `userId` names a user. */
  exists: boolean;
  /** The digest of the user's live key, if any. */
  liveKeyHash: string | undefined;
}

export interface AccessFacts {
  key: KeyFacts;
  /** Undefined when no project has that id. */
  project: ProjectAccessFacts | undefined;
}

export interface AccessFactsRepository {
  /** The facts, from one statement (one snapshot); unknown ids give empty facts, not an error. */
  read(userId: string, projectId: string): AccessFacts;
}

interface Row {
  user_id: string | null;
  key_hash: string | null;
  owner_user_id: string | null;
  subscription_status: string | null;
  access: MemberAccess | null;
}

export class SqliteAccessFactsRepository implements AccessFactsRepository {
  private readonly stmt;

  constructor(db: Db) {
    // Always one row: the parameters are the driving row and everything else is a LEFT JOIN.
    this.stmt = db.prepare(
      `SELECT u.id AS user_id, k.key_hash, p.owner_user_id, p.subscription_status, m.access
       FROM (SELECT @userId AS user_id, @projectId AS project_id) q
       LEFT JOIN users u ON u.id = q.user_id
       LEFT JOIN api_keys k ON k.user_id = u.id AND k.revoked_at IS NULL
       LEFT JOIN projects p ON p.id = q.project_id
       LEFT JOIN project_members m ON m.project_id = p.id AND m.user_id = q.user_id`,
    );
  }

  read(userId: string, projectId: string): AccessFacts {
    const r = this.stmt.get({ userId, projectId }) as Row;
    return {
      key: { exists: r.user_id !== null, liveKeyHash: r.key_hash ?? undefined },
      // subscription_status is NOT NULL: a project row always has one.
      project:
        r.owner_user_id === null || r.subscription_status === null
          ? undefined
          : { ownerUserId: r.owner_user_id, subscriptionStatus: r.subscription_status, memberAccess: r.access ?? undefined },
    };
  }
}
