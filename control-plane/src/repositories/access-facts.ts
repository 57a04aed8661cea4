// What the API's key and project checks need about one user and one project, read in one
// statement: the user and their live key digest, the project's owner and subscription, and the
// user's membership. Every project read route authorizes from these (http/api/project-read.ts).
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';
import type { MemberAccess } from './projects';

export interface KeyFacts {
  /** Whether `userId` names a user. */
  exists: boolean;
  /** The digest of the user's live key, if any. */
  liveKeyHash: string | undefined;
}

export interface ProjectAccessFacts {
  ownerUserId: string;
  subscriptionStatus: string;
  /** The user's member access, when they are a member. */
  memberAccess: MemberAccess | undefined;
}

export interface AccessFacts {
  key: KeyFacts;
  /** Undefined when no project has that id. */
  project: ProjectAccessFacts | undefined;
}

export interface AccessFactsRepository {
  /** The facts, from one statement (one snapshot); unknown ids give empty facts, not an error. */
  read(userId: string, projectId: string): Promise<AccessFacts>;
}

interface Row {
  user_id: string | null;
  key_hash: string | null;
  owner_user_id: string | null;
  subscription_status: string | null;
  access: MemberAccess | null;
}

/** The tables the facts come from: a write to any of them drops every cached fact. */
const FACT_TABLES = ['users', 'api_keys', 'projects', 'project_members'] as const;
const CHANGED_FUNCTION = 'pixelfleet_access_facts_changed';
/** Cached (user, project) pairs at most (both must exist); past it the cache starts again empty. */
const MAX_CACHED = 10_000;

/** Per connection: what to call when a fact table changes (the SQL function is registered once). */
const changeListeners = new WeakMap<Db, Set<() => void>>();

/**
 * Calls onChange synchronously inside every statement that writes a fact table on this
 * connection — whichever repository, migration or test wrote it — through TEMP triggers that
 * call a JavaScript function. The control plane owns its database file (it also keeps queues and
 * worker links in memory), so writes from other processes are not a case to serve.
 */
function watchFactTables(db: Db, onChange: () => void): void {
  let listeners = changeListeners.get(db);
  if (!listeners) {
    const registered = new Set<() => void>();
    changeListeners.set(db, (listeners = registered));
    db.function(CHANGED_FUNCTION, { deterministic: false }, () => {
      for (const listener of registered) listener();
      return null;
    });
    for (const table of FACT_TABLES) {
      for (const op of ['INSERT', 'UPDATE', 'DELETE'] as const) {
        db.exec(`CREATE TEMP TRIGGER IF NOT EXISTS ${table}_${op.toLowerCase()}_changes_access_facts AFTER ${op} ON main.${table}
                 BEGIN SELECT ${CHANGED_FUNCTION}(); END`);
      }
    }
  }
  listeners.add(onChange);
}

/**
 * Reads the facts in one statement and keeps them until any fact table changes. The polled GET
 * routes ask the same (user, project) pair again and again; an indexed read costs 6 µs in a loop
 * but ~35 µs between HTTP requests (a read transaction's locks on cold caches), a third of a
 * whole request. A rotated key, a removed member or an expired subscription is a write, so the
 * next request reads afresh: "at once" holds.
 *
 * The cache is this connection's, cleared by triggers on this connection: it holds only because
 * every write to the fact tables goes through this one process's connection. A PostgreSQL twin
 * cannot cache the same way: another replica's write (a rotated key, a removed member) fires no
 * trigger here, so it would need a shared invalidation (LISTEN/NOTIFY, a version column) or no cache.
 */
export class SqliteAccessFactsRepository implements Sync<AccessFactsRepository> {
  private readonly stmt;
  private readonly cache = new Map<string, AccessFacts>();

  constructor(db: Db) {
    watchFactTables(db, () => this.cache.clear());
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
    const cacheKey = `${userId}\u0000${projectId}`;
    const cached = this.cache.get(cacheKey);
    if (cached) return cached;
    const facts = this.readRow(userId, projectId);
    // Only pairs that exist are kept: requests with made-up ids must neither fill the cache nor
    // push real users out of it.
    if (!facts.key.exists || facts.project === undefined) return facts;
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(cacheKey, facts);
    return facts;
  }

  private readRow(userId: string, projectId: string): AccessFacts {
    const r = this.stmt.get({ userId, projectId }) as Row;
    // Frozen: the same objects are handed to every later reader of the pair.
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
