// The mail outbox: each mail to a person, stored before it is sent and kept as the record of its
// delivery. A mail's body is wiped once it is delivered or given up (it may carry a single-use
// link or an API key), so what stays at rest is who was written to, about what, and what happened.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

/** A mail waiting to be sent. */
export interface PendingMail {
  id: number;
  to: string;
  subject: string;
  body: string;
  /** Failed attempts so far. */
  attempts: number;
}

/** A mail's record, whatever its state (the body is not part of it). */
export interface MailRecord {
  id: number;
  to: string;
  subject: string;
  createdAt: number;
  attempts: number;
  state: 'pending' | 'sent' | 'failed';
  /** Delivered, or given up, at. */
  endedAt: number | undefined;
  lastError: string | undefined;
  /** The body is still stored (only while pending). */
  bodyKept: boolean;
}

export interface MailOutboxRepository {
  /** Stores a mail to be sent at once; returns its id. */
  enqueue(mail: { to: string; subject: string; body: string }, nowMs: number): Promise<number>;
  /** Pending mails due by nowMs, oldest due first. */
  due(nowMs: number, limit: number): Promise<PendingMail[]>;
  /** When the next pending mail is due (undefined: none pending). */
  nextDueAt(): Promise<number | undefined>;
  /** Delivered at the attempts-th attempt: the body is wiped. */
  markSent(id: number, attempts: number, nowMs: number): Promise<void>;
  /** A failed attempt to be tried again at nextAttemptAt. */
  markRetry(id: number, attempts: number, nextAttemptAt: number, error: string): Promise<void>;
  /** Given up: the body is wiped. */
  markFailed(id: number, attempts: number, nowMs: number, error: string): Promise<void>;
  find(id: number): Promise<MailRecord | undefined>;
  /** Newest first. */
  list(limit: number): Promise<MailRecord[]>;
}

/** A record's row as the stores read it (body_kept 0/1), shared by the SQLite and PostgreSQL outboxes. */
export interface MailRecordRow {
  id: number;
  to_address: string;
  subject: string;
  created_at: number;
  attempts: number;
  sent_at: number | null;
  failed_at: number | null;
  last_error: string | null;
  body_kept: number;
}

const RECORD_COLUMNS = 'id, to_address, subject, created_at, attempts, sent_at, failed_at, last_error, body IS NOT NULL AS body_kept';

export class SqliteMailOutboxRepository implements Sync<MailOutboxRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      enqueue: db.prepare('INSERT INTO mail_outbox (to_address, subject, body, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?)'),
      due: db.prepare(
        `SELECT id, to_address, subject, body, attempts FROM mail_outbox
         WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`,
      ),
      nextDueAt: db.prepare('SELECT MIN(next_attempt_at) AS at FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL'),
      sent: db.prepare('UPDATE mail_outbox SET attempts = ?, sent_at = ?, body = NULL, last_error = NULL WHERE id = ?'),
      retry: db.prepare('UPDATE mail_outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?'),
      failed: db.prepare('UPDATE mail_outbox SET attempts = ?, failed_at = ?, last_error = ?, body = NULL WHERE id = ?'),
      find: db.prepare(`SELECT ${RECORD_COLUMNS} FROM mail_outbox WHERE id = ?`),
      list: db.prepare(`SELECT ${RECORD_COLUMNS} FROM mail_outbox ORDER BY id DESC LIMIT ?`),
    };
  }

  enqueue(mail: { to: string; subject: string; body: string }, nowMs: number): number {
    return Number(this.stmts.enqueue.run(mail.to, mail.subject, mail.body, nowMs, nowMs).lastInsertRowid);
  }

  due(nowMs: number, limit: number): PendingMail[] {
    const rows = this.stmts.due.all(nowMs, limit) as { id: number; to_address: string; subject: string; body: string; attempts: number }[];
    return rows.map((r) => ({ id: r.id, to: r.to_address, subject: r.subject, body: r.body, attempts: r.attempts }));
  }

  nextDueAt(): number | undefined {
    return (this.stmts.nextDueAt.get() as { at: number | null }).at ?? undefined;
  }

  markSent(id: number, attempts: number, nowMs: number): void {
    this.stmts.sent.run(attempts, nowMs, id);
  }

  markRetry(id: number, attempts: number, nextAttemptAt: number, error: string): void {
    this.stmts.retry.run(attempts, nextAttemptAt, error, id);
  }

  markFailed(id: number, attempts: number, nowMs: number, error: string): void {
    this.stmts.failed.run(attempts, nowMs, error, id);
  }

  find(id: number): MailRecord | undefined {
    const row = this.stmts.find.get(id) as MailRecordRow | undefined;
    return row === undefined ? undefined : mailRecordOf(row);
  }

  list(limit: number): MailRecord[] {
    return (this.stmts.list.all(limit) as MailRecordRow[]).map(mailRecordOf);
  }
}

/** The record of a row. */
export function mailRecordOf(r: MailRecordRow): MailRecord {
  return {
    id: r.id,
    to: r.to_address,
    subject: r.subject,
    createdAt: r.created_at,
    attempts: r.attempts,
    state: r.sent_at !== null ? 'sent' : r.failed_at !== null ? 'failed' : 'pending',
    endedAt: r.sent_at ?? r.failed_at ?? undefined,
    lastError: r.last_error ?? undefined,
    bodyKept: r.body_kept === 1,
  };
}
