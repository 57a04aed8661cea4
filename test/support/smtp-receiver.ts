// A real SMTP server in the test process (the `smtp-server` package, as a mail provider's would
// answer): it keeps every message it accepted, raw, in arrival order, and can be told to refuse the
// next ones, temporarily (4xx: try later) or for good (5xx on RCPT: no such mailbox). Plain SMTP on
// 127.0.0.1 without STARTTLS: the transport sends plaintext only to a loopback server.
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string | undefined;
  to: string[];
  /** The message as sent: headers, blank line, body. */
  raw: string;
}

type Refusal = { at: 'rcpt' | 'data'; code: number; message: string };

export class SmtpReceiver {
  readonly mails: ReceivedMail[] = [];
  /** Sessions that reached DATA or RCPT and were refused, by their reply code. */
  readonly refused: number[] = [];
  private readonly refusals: Refusal[] = [];
  private readonly waiters: (() => void)[] = [];

  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
  ) {}

  static async start(): Promise<SmtpReceiver> {
    // The server's handlers need the receiver, which needs the server's port: filled in below.
    const made: { receiver?: SmtpReceiver } = {};
    const refuse = (at: Refusal['at']): Error | undefined => {
      const receiver = made.receiver!;
      const next = receiver.refusals[0];
      if (next === undefined || next.at !== at) return undefined;
      receiver.refusals.shift();
      receiver.refused.push(next.code);
      return Object.assign(new Error(next.message), { responseCode: next.code });
    };
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo(_address, _session, callback) {
        callback(refuse('rcpt') ?? null);
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const refusal = refuse('data');
          if (refusal !== undefined) return callback(refusal);
          const from = session.envelope.mailFrom === false ? undefined : session.envelope.mailFrom.address;
          const receiver = made.receiver!;
          receiver.mails.push({ from, to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
          callback();
          for (const wake of receiver.waiters.splice(0)) wake();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.server.address();
    made.receiver = new SmtpReceiver(server, typeof address === 'object' && address !== null ? address.port : 0);
    return made.receiver;
  }

  /** `smtp://127.0.0.1:<port>`, for `mail.smtp.url`. */
  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** The next message's data is answered with `code` (a 4xx is temporary, a 5xx final). */
  refuseNextData(code: number, message = 'Try again later'): void {
    this.refusals.push({ at: 'data', code, message });
  }

  /** The next recipient is refused with `code` (550: no such mailbox). */
  refuseNextRecipient(code: number, message = 'No such mailbox'): void {
    this.refusals.push({ at: 'rcpt', code, message });
  }

  /** Resolves once `count` messages were accepted. */
  async received(count: number, timeoutMs = 10_000): Promise<ReceivedMail[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.mails.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the SMTP server accepted ${this.mails.length} messages, not ${count}, within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.mails.slice(0, count);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A header of a raw message (unfolded), or undefined. */
export function mailHeader(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const line = unfolded.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/** The body of a raw plain-text message (7bit or quoted-printable, as nodemailer writes short ASCII text). */
export function mailBody(raw: string): string {
  const body = raw.split(/\r?\n\r?\n/).slice(1).join('\n\n');
  const qp = /quoted-printable/i.test(mailHeader(raw, 'Content-Transfer-Encoding') ?? '');
  const text = qp ? body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))) : body;
  return text.replace(/\r\n/g, '\n');
}
