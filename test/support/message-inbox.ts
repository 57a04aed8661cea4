// What a test's signalling client received, in order, and a way to await the next message of a
// type that no earlier call took (already received or still to come).

export interface ServerMessage {
  type: string;
  [key: string]: unknown;
}

export class MessageInbox {
  readonly received: ServerMessage[] = [];
  private readonly cursor = new Map<string, number>();
  private readonly waiters: { type: string; resolve: (m: ServerMessage) => void }[] = [];

  push(message: ServerMessage): void {
    this.received.push(message);
    const waiter = this.waiters.find((w) => w.type === message.type);
    if (waiter === undefined) return;
    this.waiters.splice(this.waiters.indexOf(waiter), 1);
    this.cursor.set(message.type, (this.cursor.get(message.type) ?? 0) + 1);
    waiter.resolve(message);
  }

  /** The next message of this type not yet taken by an earlier call; rejects after timeoutMs. */
  next(type: string, timeoutMs: number): Promise<ServerMessage> {
    const taken = this.cursor.get(type) ?? 0;
    const already = this.received.filter((m) => m.type === type);
    if (already.length > taken) {
      this.cursor.set(type, taken + 1);
      return Promise.resolve(already[taken]!);
    }
    return new Promise((resolve, reject) => {
      const waiter = { type, resolve: (m: ServerMessage) => (clearTimeout(timer), resolve(m)) };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no ${type} within ${timeoutMs} ms; got ${this.received.map((m) => m.type).join(', ')}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}
