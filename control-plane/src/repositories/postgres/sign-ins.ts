// Dashboard sign-ins in PostgreSQL: password hashes, single-use links and sign-in sessions, all
// tokens as SHA-256 digests; the SQLite twin is ../sign-ins.ts.
import type { PostgresPool } from '../../db/postgres-database';
import type { DashboardSessionRecord, LinkPurpose, SignInsRepository } from '../sign-ins';
import { changesOf, firstRowOf } from './postgres-sql';

interface SessionRow {
  user_id: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  operator_until: number | null;
}

export class PostgresSignInsRepository implements SignInsRepository {
  constructor(private readonly pool: PostgresPool) {}

  async passwordHash(userId: string): Promise<string | undefined> {
    const r = await firstRowOf<{ password_hash: string | null }>(this.pool, 'SELECT password_hash FROM users WHERE id = $1', [userId]);
    return r?.password_hash ?? undefined;
  }

  async setPasswordHash(userId: string, hash: string): Promise<void> {
    await this.pool.query('UPDATE users SET password_hash = $1 WHERE id = $2', [hash, userId]);
  }

  async insertLink(link: { tokenHash: string; userId: string; purpose: LinkPurpose; createdAt: number; expiresAt: number }): Promise<void> {
    await this.pool.query('INSERT INTO user_links (token_hash, user_id, purpose, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)', [
      link.tokenHash,
      link.userId,
      link.purpose,
      link.createdAt,
      link.expiresAt,
    ]);
  }

  async findLinkUser(tokenHash: string, purpose: LinkPurpose, nowMs: number): Promise<string | undefined> {
    const r = await firstRowOf<{ user_id: string }>(
      this.pool,
      'SELECT user_id FROM user_links WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3',
      [tokenHash, purpose, nowMs],
    );
    return r?.user_id;
  }

  async useLink(tokenHash: string, purpose: LinkPurpose, nowMs: number): Promise<string | undefined> {
    // One statement: of two requests using the same link at once, the second finds it used.
    const r = await firstRowOf<{ user_id: string }>(
      this.pool,
      'UPDATE user_links SET used_at = $1 WHERE token_hash = $2 AND purpose = $3 AND used_at IS NULL AND expires_at > $1 RETURNING user_id',
      [nowMs, tokenHash, purpose],
    );
    return r?.user_id;
  }

  async retireLinks(userId: string, purpose: LinkPurpose, nowMs: number): Promise<void> {
    await this.pool.query('UPDATE user_links SET used_at = $1 WHERE user_id = $2 AND purpose = $3 AND used_at IS NULL', [nowMs, userId, purpose]);
  }

  async insertSession(tokenHash: string, s: DashboardSessionRecord): Promise<void> {
    await this.pool.query('INSERT INTO dashboard_sessions (token_hash, user_id, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5)', [
      tokenHash,
      s.userId,
      s.createdAt,
      s.lastSeenAt,
      s.expiresAt,
    ]);
  }

  async findSession(tokenHash: string): Promise<DashboardSessionRecord | undefined> {
    const r = await firstRowOf<SessionRow>(
      this.pool,
      'SELECT user_id, created_at, last_seen_at, expires_at, operator_until FROM dashboard_sessions WHERE token_hash = $1',
      [tokenHash],
    );
    return r === undefined
      ? undefined
      : { userId: r.user_id, createdAt: r.created_at, lastSeenAt: r.last_seen_at, expiresAt: r.expires_at, ...(r.operator_until === null ? {} : { operatorUntil: r.operator_until }) };
  }

  async touchSession(tokenHash: string, nowMs: number): Promise<void> {
    await this.pool.query('UPDATE dashboard_sessions SET last_seen_at = $1 WHERE token_hash = $2', [nowMs, tokenHash]);
  }

  async setOperatorUntil(tokenHash: string, untilMs: number): Promise<void> {
    await this.pool.query('UPDATE dashboard_sessions SET operator_until = $1 WHERE token_hash = $2', [untilMs, tokenHash]);
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await this.pool.query('DELETE FROM dashboard_sessions WHERE token_hash = $1', [tokenHash]);
  }

  deleteSessionsOf(userId: string, keep?: string): Promise<number> {
    return changesOf(this.pool, 'DELETE FROM dashboard_sessions WHERE user_id = $1 AND token_hash IS DISTINCT FROM $2', [userId, keep ?? null]);
  }
}
