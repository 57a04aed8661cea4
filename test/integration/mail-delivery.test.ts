// Mail to people through a real SMTP server (smtp-server in this process) and a real SQLite outbox:
// delivered with its headers and text, a temporary refusal tried again, a permanent one given up at
// once, an outage outlived by a restart, and, without SMTP, one private .eml file per mail. A mail's
// body (it may carry a single-use link or a key) does not stay at rest once it is sent or given up.
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { MAIL_MAX_ATTEMPTS, MailDelivery, SqliteMailOutboxRepository, openDatabase, outboxFolderTransport, smtpTransport, sqliteRepositories, type Db } from '@pixelfleet/control-plane/test-support';
import { SmtpReceiver, mailBody, mailHeader } from '../support/smtp-receiver';
import { LogCapture, startTestControlPlane } from '../support/control-plane';

const FROM = 'Pixelfleet <noreply@pixelfleet.test>';
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function smtp(): Promise<SmtpReceiver> {
  const receiver = await SmtpReceiver.start();
  cleanups.push(() => receiver.close());
  return receiver;
}

function database(): { db: Db; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'pf-mail-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'pixelfleet.sqlite');
  const db = openDatabase(path);
  cleanups.push(() => void db.close());
  return { db, path };
}

/** A mail delivery over the database, through the SMTP server, on a manual clock (retries wait for advance()). */
function delivery(db: Db, url: string, clock: ManualClock, logs = new LogCapture()): { mail: MailDelivery; outbox: SqliteMailOutboxRepository; logs: LogCapture } {
  const outbox = new SqliteMailOutboxRepository(db);
  // The delivery gets the store's outbox (answering with promises); the test reads the rows through the SQLite class.
  const mail = new MailDelivery({ outbox: sqliteRepositories(db).mailOutbox, transport: smtpTransport(url), from: FROM, clock, log: pino({ level: 'debug' }, logs.stream), random: () => 0.5 });
  cleanups.push(() => mail.close());
  return { mail, outbox, logs };
}

const INVITATION = { to: 'ada@example.com', subject: 'You are invited to Pixelfleet', text: 'Set your password:\nhttps://pixelfleet.test/dashboard/invitation#token-1\n' };

describe('mail delivery', () => {
  it('sends a mail through the SMTP server with its sender, recipient, subject and text, and keeps no body once sent', async () => {
    const receiver = await smtp();
    const { db } = database();
    const { mail, outbox } = delivery(db, receiver.url, new ManualClock());
    const id = await mail.send(INVITATION);
    expect(outbox.find(id)).toMatchObject({ state: 'pending', bodyKept: true });

    const [received] = await receiver.received(1);
    await mail.idle();
    expect(received!.from).toBe('noreply@pixelfleet.test');
    expect(received!.to).toEqual(['ada@example.com']);
    expect(mailHeader(received!.raw, 'Subject')).toBe(INVITATION.subject);
    expect(mailHeader(received!.raw, 'From')).toBe(FROM);
    expect(mailBody(received!.raw).trim()).toBe(INVITATION.text.trim());
    expect(outbox.find(id)).toMatchObject({ state: 'sent', attempts: 1, bodyKept: false, lastError: undefined });
    expect(db.prepare('SELECT body FROM mail_outbox WHERE id = ?').get(id)).toEqual({ body: null }); // the column under test
  });

  it('tries a temporarily refused mail again after its backoff, and delivers it once', async () => {
    const receiver = await smtp();
    receiver.refuseNextData(421);
    const clock = new ManualClock();
    const { db } = database();
    const { mail, outbox, logs } = delivery(db, receiver.url, clock);
    const id = await mail.send(INVITATION);
    await mail.idle();
    expect(receiver.refused).toEqual([421]);
    expect(outbox.find(id)).toMatchObject({ state: 'pending', attempts: 1, bodyKept: true });
    expect(outbox.find(id)?.lastError).toContain('421');
    const warn = logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'mail not sent; trying again');
    expect(warn).toMatchObject({ level: 40, mailId: id, attempts: 1 });
    expect(receiver.mails).toHaveLength(0);

    // Nothing happens before the backoff is over; then the mail goes, once.
    clock.advance((warn!.retryInMs as number) - 1);
    await mail.idle();
    expect(receiver.mails).toHaveLength(0);
    clock.advance(1);
    await receiver.received(1);
    await mail.idle();
    expect(outbox.find(id)).toMatchObject({ state: 'sent', attempts: 2, bodyKept: false });
    expect(receiver.mails).toHaveLength(1);
  });

  it('gives up at once a recipient the server refuses for good (550), with the reason kept and the body wiped', async () => {
    const receiver = await smtp();
    receiver.refuseNextRecipient(550, 'No such user here');
    const { db } = database();
    const { mail, outbox, logs } = delivery(db, receiver.url, new ManualClock());
    const id = await mail.send({ ...INVITATION, to: 'nobody@example.com' });
    const next = await mail.send(INVITATION);
    await receiver.received(1);
    await mail.idle();
    expect(outbox.find(id)).toMatchObject({ state: 'failed', attempts: 1, bodyKept: false });
    expect(outbox.find(id)?.lastError).toContain('No such user here');
    expect(outbox.find(next)).toMatchObject({ state: 'sent' });
    expect(receiver.mails.map((m) => m.to)).toEqual([['ada@example.com']]);
    const error = logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'mail given up: the server refused it for good, or every attempt failed');
    expect(error).toMatchObject({ level: 50, mailId: id, to: 'nobody@example.com', attempts: 1 });
  });

  it(`gives up after ${MAIL_MAX_ATTEMPTS} failed attempts, each after its backoff`, async () => {
    const receiver = await smtp();
    for (let i = 0; i < MAIL_MAX_ATTEMPTS; i += 1) receiver.refuseNextData(451);
    const clock = new ManualClock();
    const { db } = database();
    const { mail, outbox } = delivery(db, receiver.url, clock);
    const id = await mail.send(INVITATION);
    await mail.idle();
    for (let attempt = 2; attempt <= MAIL_MAX_ATTEMPTS; attempt += 1) {
      clock.runNext();
      await mail.idle();
      expect(receiver.refused).toHaveLength(attempt);
    }
    expect(outbox.find(id)).toMatchObject({ state: 'failed', attempts: MAIL_MAX_ATTEMPTS, bodyKept: false });
    expect(clock.pending).toBe(0);
  });

  it('outlives an SMTP outage and a restart: the mail stored while the server was down is sent by the next run', async () => {
    const receiver = await smtp();
    const downUrl = 'smtp://127.0.0.1:1'; // nothing listens there: connection refused
    const clock = new ManualClock();
    const { path } = database();
    const first = openDatabase(path);
    const before = delivery(first, downUrl, clock);
    const id = await before.mail.send(INVITATION);
    await before.mail.idle();
    expect(before.outbox.find(id)).toMatchObject({ state: 'pending', attempts: 1 });
    expect(before.outbox.find(id)?.lastError).toContain('ECONNREFUSED');
    await before.mail.close();
    first.close();

    // The next run, with the server back: the mail goes once its backoff is over.
    const again = openDatabase(path);
    cleanups.push(() => void again.close());
    const after = delivery(again, receiver.url, clock);
    after.mail.start();
    await after.mail.idle();
    expect(receiver.mails).toHaveLength(0);
    clock.runNext();
    const [received] = await receiver.received(1);
    await after.mail.idle();
    expect(mailBody(received!.raw)).toContain('token-1');
    expect(after.outbox.find(id)).toMatchObject({ state: 'sent', attempts: 2 });
  });
});

describe('the control plane and its mail', () => {
  it('with mail.smtp.url: sends through that server, from mail.from', async () => {
    const receiver = await smtp();
    const started = await startTestControlPlane({ overrides: { mail: { smtp: { url: receiver.url }, from: FROM } } });
    cleanups.push(() => started.destroy());
    const { cp, logs } = started;
    await cp.mail.send(INVITATION);
    const [received] = await receiver.received(1);
    expect(mailHeader(received!.raw, 'From')).toBe(FROM);
    expect(logs.text()).toContain(`"destination":"SMTP server smtp://127.0.0.1:${receiver.port}"`);
  });

  it('without SMTP: each mail is an .eml file in the outbox folder that only the service may read, and nothing is sent', async () => {
    const started = await startTestControlPlane();
    cleanups.push(() => started.destroy());
    const { cp, dataDir } = started;
    const id = await cp.mail.send(INVITATION);
    await cp.mail.idle();
    const outbox = join(dataDir, 'outbox');
    expect(readdirSync(outbox)).toEqual([`mail-${String(id).padStart(6, '0')}.eml`]);
    const file = join(outbox, readdirSync(outbox)[0]!);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(outbox).mode & 0o777).toBe(0o700);
    const raw = readFileSync(file, 'utf8');
    expect(mailHeader(raw, 'To')).toBe('ada@example.com');
    expect(mailBody(raw)).toContain('https://pixelfleet.test/dashboard/invitation#token-1');
  });
});

// The transports alone, for a failure the outbox folder can have.
describe('the outbox folder transport', () => {
  it('fails (and the mail is tried again) when the folder cannot be written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-outbox-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const blocked = join(dir, 'file');
    writeFileSync(blocked, 'not a folder');
    const transport = outboxFolderTransport(join(blocked, 'outbox'), pino({ level: 'silent' }));
    await expect(transport.deliver({ id: 1, from: FROM, ...INVITATION })).rejects.toThrow(/ENOTDIR|EEXIST/);
  });
});
