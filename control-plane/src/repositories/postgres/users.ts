// Users and their API keys in PostgreSQL (only SHA-256 digests are stored); the SQLite twin is
// ../users.ts. Emails compare case-insensitively (ASCII), as SQLite's NOCASE column does, through
// the unique index on lower(email).
import type { PostgresPool } from '../../db/postgres-database';
import type { User, UsersRepository } from '../users';
import { firstRowOf, inTransaction } from './postgres-sql';

interface UserRow {
  id: string;
  email: string;
  created_at: number;
}

const toUser = (r: UserRow): User => ({ userId: r.id, email: r.email, createdAt: r.created_at });

export class PostgresUsersRepository implements UsersRepository {
  constructor(private readonly pool: PostgresPool) {}

  async insert(user: User): Promise<void> {
    await this.pool.query('INSERT INTO users (id, email, created_at) VALUES ($1, $2, $3)', [user.userId, user.email, user.createdAt]);
  }

  async findById(userId: string): Promise<User | undefined> {
    const r = await firstRowOf<UserRow>(this.pool, 'SELECT id, email, created_at FROM users WHERE id = $1', [userId]);
    return r && toUser(r);
  }

  async findByEmail(email: string): Promise<User | undefined> {
    const r = await firstRowOf<UserRow>(this.pool, 'SELECT id, email, created_at FROM users WHERE lower(email) = lower($1 COLLATE "C")', [email]);
    return r && toUser(r);
  }

  async replaceKey(userId: string, keyHash: string, nowMs: number): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      // The user's row first, locked: two rotations at once queue here instead of both revoking
      // the same live key and then colliding on the one-live-key index.
      await tx.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [userId]);
      await tx.query('UPDATE api_keys SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL', [nowMs, userId]);
      await tx.query('INSERT INTO api_keys (user_id, key_hash, created_at) VALUES ($1, $2, $3)', [userId, keyHash, nowMs]);
    });
  }


  async findUserByLiveKeyHash(keyHash: string): Promise<User | undefined> {
    const r = await firstRowOf<UserRow>(
      this.pool,
      `SELECT u.id, u.email, u.created_at FROM api_keys k JOIN users u ON u.id = k.user_id
       WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [keyHash],
    );
    return r && toUser(r);
  }

  async keyHashOf(userId: string): Promise<{ exists: boolean; liveKeyHash: string | undefined }> {
    const r = await firstRowOf<{ id: string; key_hash: string | null }>(
      this.pool,
      'SELECT u.id, k.key_hash FROM users u LEFT JOIN api_keys k ON k.user_id = u.id AND k.revoked_at IS NULL WHERE u.id = $1',
      [userId],
    );
    return { exists: r !== undefined, liveKeyHash: r?.key_hash ?? undefined };
  }
}
