// A fake browser for signalling tests: a real WebSocket client that records every message the
// server sends and lets the test await the next one of a type, or the close.
import WebSocket from 'ws';

export interface ServerMessage {
  type: string;
  [key: string]: unknown;
}

export class FakePlayer {
  readonly received: ServerMessage[] = [];
  readonly errors: Error[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly waiters: { type: string; resolve: (m: ServerMessage) => void }[] = [];
  private cursor = new Map<string, number>();

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString('utf8')) as ServerMessage;
      this.received.push(message);
      for (const w of [...this.waiters]) {
        if (w.type === message.type) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          this.cursor.set(w.type, (this.cursor.get(w.type) ?? 0) + 1);
          w.resolve(message);
          return;
        }
      }
    });
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

  /** The next message of this type not yet taken by an earlier call (already received or future). */
  next(type: string, timeoutMs = 10_000): Promise<ServerMessage> {
    const taken = this.cursor.get(type) ?? 0;
    const already = this.received.filter((m) => m.type === type);
    if (already.length > taken) {
      this.cursor.set(type, taken + 1);
      return Promise.resolve(already[taken]!);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${type} within ${timeoutMs} ms; got ${this.received.map((m) => m.type).join(', ')}`)), timeoutMs);
      this.waiters.push({ type, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }

  send(message: Record<string, unknown>): void {
    this.socket.send(JSON.stringify(message));
  }

  close(): void {
    this.socket.close(1000, 'bye');
  }
}
