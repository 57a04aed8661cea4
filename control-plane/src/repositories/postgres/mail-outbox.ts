// The mail outbox in PostgreSQL: each mail stored before it is sent, its body wiped once delivered
// or given up; the SQLite twin is ../mail-outbox.ts.
import type { PostgresPool } from '../../db/postgres-database';
import { mailRecordOf, type MailOutboxRepository, type MailRecord, type MailRecordRow, type PendingMail } from '../mail-outbox';
import { firstRowOf, rowsOf } from './postgres-sql';

/** body_kept as 0/1, as SQLite gives it, for the shared mapper. */
const RECORD_COLUMNS = 'id, to_address, subject, created_at, attempts, sent_at, failed_at, last_error, (body IS NOT NULL)::int AS body_kept';

export class PostgresMailOutboxRepository implements MailOutboxRepository {
  constructor(private readonly pool: PostgresPool) {}

  async enqueue(mail: { to: string; subject: string; body: string }, nowMs: number): Promise<number> {
    const r = await firstRowOf<{ id: number }>(
      this.pool,
      'INSERT INTO mail_outbox (to_address, subject, body, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $4) RETURNING id',
      [mail.to, mail.subject, mail.body, nowMs],
    );
    return r!.id;
  }

  async due(nowMs: number, limit: number): Promise<PendingMail[]> {
    const rows = await rowsOf<{ id: number; to_address: string; subject: string; body: string; attempts: number }>(
      this.pool,
      `SELECT id, to_address, subject, body, attempts FROM mail_outbox
       WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= $1 ORDER BY next_attempt_at, id LIMIT $2`,
      [nowMs, limit],
    );
    return rows.map((r) => ({ id: r.id, to: r.to_address, subject: r.subject, body: r.body, attempts: r.attempts }));
  }

  async nextDueAt(): Promise<number | undefined> {
    const r = await firstRowOf<{ at: number | null }>(this.pool, 'SELECT MIN(next_attempt_at) AS at FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL');
    return r?.at ?? undefined;
  }

  async markSent(id: number, attempts: number, nowMs: number): Promise<void> {
    await this.pool.query('UPDATE mail_outbox SET attempts = $1, sent_at = $2, body = NULL, last_error = NULL WHERE id = $3', [attempts, nowMs, id]);
  }

  async markRetry(id: number, attempts: number, nextAttemptAt: number, error: string): Promise<void> {
    await this.pool.query('UPDATE mail_outbox SET attempts = $1, next_attempt_at = $2, last_error = $3 WHERE id = $4', [attempts, nextAttemptAt, error, id]);
  }

  async markFailed(id: number, attempts: number, nowMs: number, error: string): Promise<void> {
    await this.pool.query('UPDATE mail_outbox SET attempts = $1, failed_at = $2, last_error = $3, body = NULL WHERE id = $4', [attempts, nowMs, error, id]);
  }

  async find(id: number): Promise<MailRecord | undefined> {
    const r = await firstRowOf<MailRecordRow>(this.pool, `SELECT ${RECORD_COLUMNS} FROM mail_outbox WHERE id = $1`, [id]);
    return r === undefined ? undefined : mailRecordOf(r);
  }

  async list(limit: number): Promise<MailRecord[]> {
    return (await rowsOf<MailRecordRow>(this.pool, `SELECT ${RECORD_COLUMNS} FROM mail_outbox ORDER BY id DESC LIMIT $1`, [limit])).map(mailRecordOf);
  }
}
