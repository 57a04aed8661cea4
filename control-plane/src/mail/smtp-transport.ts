// Mail through an SMTP server (`mail.smtp.url`). smtps:// speaks TLS from the start; smtp:// upgrades
// with STARTTLS when the server offers it, and must when the server is not on this machine, so the
// login and the mail (single-use links, keys) never cross a network in plaintext. The server's
// certificate is verified. The URL's credentials stay in nodemailer; descriptions name the host only.
import { createTransport } from 'nodemailer';
import { isLoopbackHost } from '@pixelfleet/common';
import type { MailTransport } from './mail-delivery';

/** How long connecting, the greeting and a silent socket may take, ms. */
const CONNECTION_TIMEOUT_MS = 30_000;
const GREETING_TIMEOUT_MS = 30_000;
const SOCKET_TIMEOUT_MS = 60_000;

/** How nodemailer connects to the server the URL names. */
export function smtpConnectionOptions(smtpUrl: string): { url: string; secure: boolean; requireTLS: boolean; connectionTimeout: number; greetingTimeout: number; socketTimeout: number } {
  const url = new URL(smtpUrl);
  const secure = url.protocol === 'smtps:';
  return {
    url: smtpUrl,
    secure,
    requireTLS: !secure && !isLoopbackHost(url.hostname),
    connectionTimeout: CONNECTION_TIMEOUT_MS,
    greetingTimeout: GREETING_TIMEOUT_MS,
    socketTimeout: SOCKET_TIMEOUT_MS,
  };
}

export function smtpTransport(smtpUrl: string): MailTransport {
  const url = new URL(smtpUrl);
  const transporter = createTransport(smtpConnectionOptions(smtpUrl));
  return {
    description: `SMTP server ${url.protocol}//${url.host}`,
    async deliver(mail) {
      await transporter.sendMail({ from: mail.from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close() {
      transporter.close();
    },
  };
}
