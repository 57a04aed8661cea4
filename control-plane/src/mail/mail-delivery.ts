// Mail to people, sent in the background. send() stores the mail in the outbox and returns at once
// (a request never waits for an SMTP server); one loop delivers what is due, oldest first, one mail
// at a time. A failure is tried again with full-jitter backoff (MAIL_BACKOFF) up to
// MAIL_MAX_ATTEMPTS; the server's permanent refusal of the recipient or the message (a 5xx to RCPT
// or DATA: no such mailbox, message refused) is given up at once, since asking again gets the same
// answer. A refused login or an unreachable server is tried again like any outage: the mail waits
// for the operator's fix, and a restart (the outbox is in the database) takes it up again.
import type { Logger } from 'pino';
import { backoffDelayMs, type BackoffOptions, type Clock, type TimerHandle } from '@pixelfleet/common';
import type { MailOutboxRepository, PendingMail } from '../repositories/mail-outbox';

/** A mail to one person: plain text (links and keys read the same in every client). */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

/** Where mail goes: an SMTP server, or the outbox folder without one (smtp-transport.ts, outbox-folder-transport.ts). */
export interface MailTransport {
  /** Where mail goes, for the start line (never an SMTP URL's credentials). */
  readonly description: string;
  /** Delivers one mail; rejects on failure (an SMTP error carries `responseCode` and `code`). */
  deliver(mail: OutgoingMail & { id: number; from: string }): Promise<void>;
  close(): void;
}

/** Attempts before a mail is given up: with MAIL_BACKOFF, about an hour and a half of trying. */
export const MAIL_MAX_ATTEMPTS = 10;
/** The wait before attempt n+1: full jitter below min(max, initial·2^n), at least MIN_RETRY_MS. */
export const MAIL_BACKOFF: BackoffOptions = { initialMs: 10_000, maxMs: 15 * 60_000 };
const MIN_RETRY_MS = 1_000;
/** Pending mails read per query. */
const BATCH = 20;

export interface MailDeliveryDeps {
  outbox: MailOutboxRepository;
  transport: MailTransport;
  /** `mail.from`. */
  from: string;
  clock: Clock;
  log: Logger;
  random?: () => number;
}

export class MailDelivery {
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private wakeAgain = false;
  private closed = false;

  constructor(private readonly d: MailDeliveryDeps) {}

  /** Where mail goes, for the start line. */
  get destination(): string {
    return this.d.transport.description;
  }

  /** Stores the mail and has it sent soon; returns its outbox id. Never waits for the transport. */
  async send(mail: OutgoingMail): Promise<number> {
    const id = await this.d.outbox.enqueue({ to: mail.to, subject: mail.subject, body: mail.text }, this.d.clock.now());
    this.d.log.info({ mailId: id, subject: mail.subject }, 'mail queued');
    this.wake();
    return id;
  }

  /** Takes up the mail a previous run left pending. */
  start(): void {
    this.wake();
  }

  /** Resolves once the loop has nothing to do before its next timer (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  /** Stops the loop after the mail being sent, if any; pending mail waits in the outbox for the next run. */
  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.idle();
    this.d.transport.close();
  }

  private wake(): void {
    if (this.closed) return;
    if (this.running !== undefined) {
      this.wakeAgain = true;
      return;
    }
    this.timer?.cancel();
    this.timer = undefined;
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    });
  }

  /** One run of the loop: what is due, then the timer for the next due mail (unless woken meanwhile). Never rejects. */
  private async run(): Promise<void> {
    try {
      await this.deliverDue();
    } catch (err) {
      this.d.log.error({ err }, 'mail delivery loop failed');
    }
    if (this.wakeAgain) return;
    try {
      await this.armTimer();
    } catch (err) {
      this.d.log.error({ err }, 'mail delivery loop failed');
    }
  }

  private async deliverDue(): Promise<void> {
    for (;;) {
      const due = await this.d.outbox.due(this.d.clock.now(), BATCH);
      for (const mail of due) {
        if (this.closed) return;
        await this.attempt(mail);
      }
      if (due.length < BATCH) return;
    }
  }

  private async armTimer(): Promise<void> {
    if (this.closed) return;
    const next = await this.d.outbox.nextDueAt();
    // close() may have come while the store answered: it waits for this run, and sets no timer after it.
    if (next === undefined || this.closed) return;
    this.timer = this.d.clock.setTimeout(() => {
      this.timer = undefined;
      this.wake();
    }, Math.max(0, next - this.d.clock.now()));
  }

  private async attempt(mail: PendingMail): Promise<void> {
    const { outbox, transport, clock, log } = this.d;
    try {
      await transport.deliver({ id: mail.id, from: this.d.from, to: mail.to, subject: mail.subject, text: mail.body });
      await outbox.markSent(mail.id, mail.attempts + 1, clock.now());
      log.info({ mailId: mail.id, attempts: mail.attempts + 1 }, 'mail sent');
    } catch (err) {
      const attempts = mail.attempts + 1;
      const reason = describeFailure(err);
      if (isPermanentRefusal(err) || attempts >= MAIL_MAX_ATTEMPTS) {
        await outbox.markFailed(mail.id, attempts, clock.now(), reason);
        log.error({ mailId: mail.id, to: mail.to, subject: mail.subject, attempts, err: reason }, 'mail given up: the server refused it for good, or every attempt failed');
        return;
      }
      const retryInMs = Math.max(MIN_RETRY_MS, backoffDelayMs(attempts - 1, MAIL_BACKOFF, this.d.random));
      await outbox.markRetry(mail.id, attempts, clock.now() + retryInMs, reason);
      log.warn({ mailId: mail.id, attempts, retryInMs, err: reason }, 'mail not sent; trying again');
    }
  }
}

/** The SMTP server refused the recipient or the message with a 5xx: the same mail will be refused again. */
function isPermanentRefusal(err: unknown): boolean {
  const e = err as { responseCode?: unknown; code?: unknown };
  return typeof e.responseCode === 'number' && e.responseCode >= 500 && e.responseCode < 600 && (e.code === 'EENVELOPE' || e.code === 'EMESSAGE');
}

/** One line for the outbox record and the log: the server's reply or the network error (no credentials are in either). */
function describeFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.length > 500 ? `${message.slice(0, 500)}…` : message;
}
