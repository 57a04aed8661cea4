// Mail without an SMTP server (the demo, a machine offline): each mail is written as an RFC 5322
// .eml file in the outbox folder, readable by the service's account only (a mail may carry a
// single-use link or a key), named by its outbox id so a mail tried twice overwrites itself.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTransport } from 'nodemailer';
import type { Logger } from 'pino';
import type { MailTransport } from './mail-delivery';

export function outboxFolderTransport(dir: string, log: Logger): MailTransport {
  // nodemailer composes the message (headers, encoding) and hands it back instead of sending it.
  const composer = createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    description: `the outbox folder ${dir} (mail.smtp.url is not set: nothing is sent)`,
    async deliver(mail) {
      const composed = await composer.sendMail({ from: mail.from, to: mail.to, subject: mail.subject, text: mail.text });
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const file = join(dir, `mail-${String(mail.id).padStart(6, '0')}.eml`);
      await writeFile(file, composed.message as Buffer, { mode: 0o600 });
      log.info({ mailId: mail.id, file }, 'mail written to the outbox folder');
    },
    close() {
      composer.close();
    },
  };
}
