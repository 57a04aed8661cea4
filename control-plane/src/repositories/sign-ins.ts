// What signing in to the dashboard stores: a person's password hash, the single-use links mailed to
// them (invitation, password reset) and their sign-in sessions. Tokens are stored as SHA-256
// digests only; the links and cookies that carry them are the only copies.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

export type LinkPurpose = 'invitation' | 'passwordReset';

export interface DashboardSessionRecord {
  userId: string;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  /** Until when the sign-in may act as an operator (it was shown the admin token); undefined: never. */
  operatorUntil?: number;
}

export interface SignInsRepository {
  passwordHash(userId: string): Promise<string | undefined>;
  setPasswordHash(userId: string, hash: string): Promise<void>;
  insertLink(link: { tokenHash: string; userId: string; purpose: LinkPurpose; createdAt: number; expiresAt: number }): Promise<void>;
  /** The user a link that still works is for (it is not used by this). */
  findLinkUser(tokenHash: string, purpose: LinkPurpose, nowMs: number): Promise<string | undefined>;
  /** Uses the link once: the user it was for, or undefined when it is unknown, used, expired or for another purpose. */
  useLink(tokenHash: string, purpose: LinkPurpose, nowMs: number): Promise<string | undefined>;
  /** The user's links of a purpose that were never used stop working (a newer one replaces them, or the password was set). */
  retireLinks(userId: string, purpose: LinkPurpose, nowMs: number): Promise<void>;
  insertSession(tokenHash: string, s: DashboardSessionRecord): Promise<void>;
  findSession(tokenHash: string): Promise<DashboardSessionRecord | undefined>;
  touchSession(tokenHash: string, nowMs: number): Promise<void>;
  /** Lets the sign-in act as an operator until untilMs. */
  setOperatorUntil(tokenHash: string, untilMs: number): Promise<void>;
  deleteSession(tokenHash: string): Promise<void>;
  /** Ends every sign-in of the user, but `keep` (the one asking); returns how many ended. */
  deleteSessionsOf(userId: string, keep?: string): Promise<number>;
}

interface SessionRow {
  user_id: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  operator_until: number | null;
}

export class SqliteSignInsRepository implements Sync<SignInsRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      passwordHash: db.prepare('SELECT password_hash FROM users WHERE id = ?'),
      setPasswordHash: db.prepare('UPDATE users SET password_hash = ? WHERE id = ?'),
      insertLink: db.prepare('INSERT INTO user_links (token_hash, user_id, purpose, created_at, expires_at) VALUES (?, ?, ?, ?, ?)'),
      findLinkUser: db.prepare('SELECT user_id FROM user_links WHERE token_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?'),
      useLink: db.prepare('UPDATE user_links SET used_at = ? WHERE token_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ? RETURNING user_id'),
      retireLinks: db.prepare('UPDATE user_links SET used_at = ? WHERE user_id = ? AND purpose = ? AND used_at IS NULL'),
      insertSession: db.prepare('INSERT INTO dashboard_sessions (token_hash, user_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)'),
      findSession: db.prepare('SELECT user_id, created_at, last_seen_at, expires_at, operator_until FROM dashboard_sessions WHERE token_hash = ?'),
      setOperatorUntil: db.prepare('UPDATE dashboard_sessions SET operator_until = ? WHERE token_hash = ?'),
      touchSession: db.prepare('UPDATE dashboard_sessions SET last_seen_at = ? WHERE token_hash = ?'),
      deleteSession: db.prepare('DELETE FROM dashboard_sessions WHERE token_hash = ?'),
      deleteSessionsOf: db.prepare('DELETE FROM dashboard_sessions WHERE user_id = ? AND token_hash IS NOT ?'),
    };
  }

  passwordHash(userId: string): string | undefined {
    return (this.stmts.passwordHash.get(userId) as { password_hash: string | null } | undefined)?.password_hash ?? undefined;
  }

  setPasswordHash(userId: string, hash: string): void {
    this.stmts.setPasswordHash.run(hash, userId);
  }

  insertLink(link: { tokenHash: string; userId: string; purpose: LinkPurpose; createdAt: number; expiresAt: number }): void {
    this.stmts.insertLink.run(link.tokenHash, link.userId, link.purpose, link.createdAt, link.expiresAt);
  }

  findLinkUser(tokenHash: string, purpose: LinkPurpose, nowMs: number): string | undefined {
    return (this.stmts.findLinkUser.get(tokenHash, purpose, nowMs) as { user_id: string } | undefined)?.user_id;
  }

  useLink(tokenHash: string, purpose: LinkPurpose, nowMs: number): string | undefined {
    return (this.stmts.useLink.get(nowMs, tokenHash, purpose, nowMs) as { user_id: string } | undefined)?.user_id;
  }

  retireLinks(userId: string, purpose: LinkPurpose, nowMs: number): void {
    this.stmts.retireLinks.run(nowMs, userId, purpose);
  }

  insertSession(tokenHash: string, s: DashboardSessionRecord): void {
    this.stmts.insertSession.run(tokenHash, s.userId, s.createdAt, s.lastSeenAt, s.expiresAt);
  }

  findSession(tokenHash: string): DashboardSessionRecord | undefined {
    const r = this.stmts.findSession.get(tokenHash) as SessionRow | undefined;
    return r === undefined
      ? undefined
      : { userId: r.user_id, createdAt: r.created_at, lastSeenAt: r.last_seen_at, expiresAt: r.expires_at, ...(r.operator_until === null ? {} : { operatorUntil: r.operator_until }) };
  }

  setOperatorUntil(tokenHash: string, untilMs: number): void {
    this.stmts.setOperatorUntil.run(untilMs, tokenHash);
  }

  touchSession(tokenHash: string, nowMs: number): void {
    this.stmts.touchSession.run(nowMs, tokenHash);
  }

  deleteSession(tokenHash: string): void {
    this.stmts.deleteSession.run(tokenHash);
  }

  deleteSessionsOf(userId: string, keep?: string): number {
    return this.stmts.deleteSessionsOf.run(userId, keep ?? null).changes;
  }
}
