// What the retention sweep deletes of people's rows, in PostgreSQL, a bounded batch per statement;
// the SQLite twin is ../people-retention.ts.
import type { PostgresPool } from '../../db/postgres-database';
import type { PeopleRetentionRepository } from '../people-retention';
import { changesOf } from './postgres-sql';

export class PostgresPeopleRetentionRepository implements PeopleRetentionRepository {
  constructor(private readonly pool: PostgresPool) {}

  deleteEndedSignIns(nowMs: number, idleCutoffMs: number, limit: number): Promise<number> {
    return changesOf(
      this.pool,
      'DELETE FROM dashboard_sessions WHERE token_hash IN (SELECT token_hash FROM dashboard_sessions WHERE expires_at <= $1 OR last_seen_at <= $2 LIMIT $3)',
      [nowMs, idleCutoffMs, limit],
    );
  }

  deleteDeadLinks(nowMs: number, limit: number): Promise<number> {
    return changesOf(this.pool, 'DELETE FROM user_links WHERE token_hash IN (SELECT token_hash FROM user_links WHERE used_at IS NOT NULL OR expires_at <= $1 LIMIT $2)', [
      nowMs,
      limit,
    ]);
  }

  deleteEndedMailBefore(cutoffMs: number, limit: number): Promise<number> {
    return changesOf(this.pool, 'DELETE FROM mail_outbox WHERE id IN (SELECT id FROM mail_outbox WHERE COALESCE(sent_at, failed_at) < $1 LIMIT $2)', [cutoffMs, limit]);
  }
}
