// Test support: a real `ws` server on 127.0.0.1 port 0 and one client connected to it, with an
// inbox that yields the client's received messages in order, so tests await frames, never sleep.
import { once } from 'node:events';
import { WebSocket, WebSocketServer, type ServerOptions } from 'ws';

export interface ClientClose {
  readonly code: number;
  readonly reason: string;
}

/** What the client side (a fake Unreal app or browser) received, parsed as JSON. */
export class Inbox {
  private readonly queue: unknown[] = [];
  private readonly waiters: ((message: unknown) => void)[] = [];

  constructor(client: WebSocket) {
    // binaryType is the default 'nodebuffer', so every frame arrives as one Buffer.
    client.on('message', (data, isBinary) => {
      const message: unknown = isBinary ? { binary: true } : JSON.parse((data as Buffer).toString('utf8'));
      const waiter = this.waiters.shift();
      if (waiter === undefined) this.queue.push(message);
      else waiter(message);
    });
  }

  /** The next message, waiting for it if none is queued. */
  next(): Promise<unknown> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Messages received and not yet taken. */
  get queued(): number {
    return this.queue.length;
  }
}

export interface SocketPair<E> {
  readonly server: WebSocket;
  readonly client: WebSocket;
  readonly inbox: Inbox;
  /** Built on the server socket inside the `connection` handler, as a real server would. */
  readonly endpoint: E;
  /** Resolves with the close code and reason the client saw. */
  readonly clientClosed: Promise<ClientClose>;
  dispose(): Promise<void>;
}

/** Opens a server and a client; accept() builds the endpoint synchronously on connection. */
export async function openSocketPair<E>(accept: (server: WebSocket) => E, serverOptions: ServerOptions = {}): Promise<SocketPair<E>> {
  const wss = new WebSocketServer({ ...serverOptions, host: '127.0.0.1', port: 0 });
  await once(wss, 'listening');
  const address = wss.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');

  let accepted: { server: WebSocket; endpoint: E } | undefined;
  const connected = new Promise<void>((resolve) => {
    wss.once('connection', (server) => {
      accepted = { server, endpoint: accept(server) };
      resolve();
    });
  });
  const client = new WebSocket(`ws://127.0.0.1:${address.port}`);
  const inbox = new Inbox(client);
  const clientClosed = new Promise<ClientClose>((resolve) => {
    client.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') }));
  });
  client.on('error', () => {
    // A test that provokes a protocol violation sees the result as the close code.
  });
  await Promise.all([connected, once(client, 'open')]);
  if (accepted === undefined) throw new Error('no connection');

  return {
    server: accepted.server,
    client,
    inbox,
    endpoint: accepted.endpoint,
    clientClosed,
    async dispose() {
      client.terminate();
      for (const socket of wss.clients) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** Sends one JSON text frame from the client. */
export function sendJson(client: WebSocket, message: unknown): void {
  client.send(JSON.stringify(message));
}

/** Resolves when the socket has closed. Unlike events.once, a preceding 'error' does not reject it. */
export function whenClosed(socket: WebSocket): Promise<void> {
  return new Promise((resolve) => socket.once('close', () => resolve()));
}
