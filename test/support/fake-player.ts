// A fake browser for signalling tests: a real WebSocket client that records every message the
// server sends and lets the test await the next one of a type, or the close.
import WebSocket from 'ws';
import { MessageInbox, type ServerMessage } from './message-inbox';

export type { ServerMessage } from './message-inbox';

export class FakePlayer {
  readonly errors: Error[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly inbox = new MessageInbox();

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => this.inbox.push(JSON.parse(data.toString('utf8')) as ServerMessage));
    this.closed = new Promise((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    // A reset after the server closed is not the test's business; the close code is.
    socket.on('error', (err) => this.errors.push(err));
  }

  /** headers: extra request headers of the upgrade (e.g. X-Forwarded-For as a proxy would add it). */
  static async connect(url: string, headers?: Record<string, string>): Promise<FakePlayer> {
    const socket = new WebSocket(url, headers ? { headers } : undefined);
    const player = new FakePlayer(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', (err) => (socket.readyState === WebSocket.CONNECTING || socket.readyState === WebSocket.CLOSED ? reject(err) : undefined));
    });
    return player;
  }

  /** Every message the server sent, in order. */
  get received(): readonly ServerMessage[] {
    return this.inbox.received;
  }

  /** The next message of this type not yet taken by an earlier call (already received or future). */
  next(type: string, timeoutMs = 10_000): Promise<ServerMessage> {
    return this.inbox.next(type, timeoutMs);
  }

  send(message: Record<string, unknown>): void {
    this.socket.send(JSON.stringify(message));
  }

  close(): void {
    this.socket.close(1000, 'bye');
  }
}
