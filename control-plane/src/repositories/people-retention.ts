// What the retention sweep deletes of people's rows: sign-ins that are over (expired, or idle past
// the limit), links that can no longer be used (used or expired), and the records of mail sent or
// given up before the cutoff. All three tables are small (live sign-ins, recent links, mail to
// people): each delete scans its table, a bounded batch at a time like every other delete of the sweep.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

export interface PeopleRetentionRepository {
  /** Deletes up to `limit` sign-ins that ended at expiresAt ≤ nowMs or were last seen at or before idleCutoffMs; returns how many. */
  deleteEndedSignIns(nowMs: number, idleCutoffMs: number, limit: number): Promise<number>;
  /** Deletes up to `limit` links used or expired by nowMs. */
  deleteDeadLinks(nowMs: number, limit: number): Promise<number>;
  /** Deletes up to `limit` mail records sent or given up before cutoffMs (pending mail is kept, whatever its age). */
  deleteEndedMailBefore(cutoffMs: number, limit: number): Promise<number>;
}

export class SqlitePeopleRetentionRepository implements Sync<PeopleRetentionRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      signIns: db.prepare('DELETE FROM dashboard_sessions WHERE rowid IN (SELECT rowid FROM dashboard_sessions WHERE expires_at <= ? OR last_seen_at <= ? LIMIT ?)'),
      links: db.prepare('DELETE FROM user_links WHERE rowid IN (SELECT rowid FROM user_links WHERE used_at IS NOT NULL OR expires_at <= ? LIMIT ?)'),
      mail: db.prepare('DELETE FROM mail_outbox WHERE id IN (SELECT id FROM mail_outbox WHERE COALESCE(sent_at, failed_at) < ? LIMIT ?)'),
    };
  }

  deleteEndedSignIns(nowMs: number, idleCutoffMs: number, limit: number): number {
    return this.stmts.signIns.run(nowMs, idleCutoffMs, limit).changes;
  }

  deleteDeadLinks(nowMs: number, limit: number): number {
    return this.stmts.links.run(nowMs, limit).changes;
  }

  deleteEndedMailBefore(cutoffMs: number, limit: number): number {
    return this.stmts.mail.run(cutoffMs, limit).changes;
  }
}
