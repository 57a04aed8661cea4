// Users and their API keys (only SHA-256 digests are stored).
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

export interface User {
  userId: string;
  email: string;
  createdAt: number;
}

export interface UsersRepository {
  insert(user: User): Promise<void>;
  findById(userId: string): Promise<User | undefined>;
  findByEmail(email: string): Promise<User | undefined>;
  /** Revokes the user's live key (if any) and stores the new digest, atomically. */
  replaceKey(userId: string, keyHash: string, nowMs: number): Promise<void>;
  /** The owner of a live key with this digest, if any. */
  findUserByLiveKeyHash(keyHash: string): Promise<User | undefined>;
  /** Whether the user exists and the digest of their live key, in one read (the hot auth path). */
  keyHashOf(userId: string): Promise<{ exists: boolean; liveKeyHash: string | undefined }>;
}

interface UserRow {
  id: string;
  email: string;
  created_at: number;
}

const toUser = (r: UserRow): User => ({ userId: r.id, email: r.email, createdAt: r.created_at });

export class SqliteUsersRepository implements Sync<UsersRepository> {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare('INSERT INTO users (id, email, created_at) VALUES (?, ?, ?)'),
      byId: db.prepare('SELECT id, email, created_at FROM users WHERE id = ?'),
      byEmail: db.prepare('SELECT id, email, created_at FROM users WHERE email = ?'),
      revoke: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL'),
      insertKey: db.prepare('INSERT INTO api_keys (user_id, key_hash, created_at) VALUES (?, ?, ?)'),
      keyHashOf: db.prepare(
        `SELECT u.id, k.key_hash FROM users u LEFT JOIN api_keys k ON k.user_id = u.id AND k.revoked_at IS NULL WHERE u.id = ?`,
      ),
      byKey: db.prepare(
        `SELECT u.id, u.email, u.created_at FROM api_keys k JOIN users u ON u.id = k.user_id
         WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
      ),
    };
  }

  insert(user: User): void {
    this.stmts.insert.run(user.userId, user.email, user.createdAt);
  }

  findById(userId: string): User | undefined {
    const r = this.stmts.byId.get(userId) as UserRow | undefined;
    return r && toUser(r);
  }

  findByEmail(email: string): User | undefined {
    const r = this.stmts.byEmail.get(email) as UserRow | undefined;
    return r && toUser(r);
  }

  replaceKey(userId: string, keyHash: string, nowMs: number): void {
    this.db.transaction(() => {
      this.stmts.revoke.run(nowMs, userId);
      this.stmts.insertKey.run(userId, keyHash, nowMs);
    })();
  }


  findUserByLiveKeyHash(keyHash: string): User | undefined {
    const r = this.stmts.byKey.get(keyHash) as UserRow | undefined;
    return r && toUser(r);
  }

  keyHashOf(userId: string): { exists: boolean; liveKeyHash: string | undefined } {
    const r = this.stmts.keyHashOf.get(userId) as { id: string; key_hash: string | null } | undefined;
    return { exists: r !== undefined, liveKeyHash: r?.key_hash ?? undefined };
  }
}
