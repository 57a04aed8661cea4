// A tiny Wilbur-like signalling server for tests: one streamer socket on 127.0.0.1 port 0, the
// streamer side of design/pixel-streaming.md §1.3 (config, identify, endpointIdConfirm,
// playerConnected/Disconnected) and routing of offer/answer/iceCandidate to in-process players.
import { EventEmitter, once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export type JsonMessage = { readonly type: string; readonly [key: string]: unknown };

/** Receives what the streamer sends to one player (playerId already stripped, as Wilbur 5.5 does). */
export type PlayerRoute = (message: JsonMessage) => void;

export class SignallingStub {
  /** Every message the streamer sent, in order. */
  readonly received: JsonMessage[] = [];
  /** Streamer sockets accepted so far. */
  connections = 0;
  private readonly events = new EventEmitter();
  private readonly routes = new Map<string, PlayerRoute>();
  private streamer: WebSocket | undefined;

  private constructor(private readonly server: WebSocketServer, readonly url: string) {
    server.on('connection', (socket) => this.onStreamer(socket));
  }

  /** Listens on 127.0.0.1 with an OS-chosen port. */
  static async start(): Promise<SignallingStub> {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    return new SignallingStub(server, `ws://127.0.0.1:${port}`);
  }

  /** Resolves with the first message (already received or future) that matches, or rejects after timeoutMs. */
  waitForMessage(predicate: (message: JsonMessage) => boolean, timeoutMs = 10_000): Promise<JsonMessage> {
    const seen = this.received.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.events.off('message', listener);
        reject(new Error(`signalling stub: no matching streamer message within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (message: JsonMessage): void => {
        if (!predicate(message)) return;
        clearTimeout(timer);
        this.events.off('message', listener);
        resolve(message);
      };
      this.events.on('message', listener);
    });
  }

  /** Sends playerConnected and routes the streamer's messages for playerId to `route`. */
  connectPlayer(playerId: string, route: PlayerRoute): void {
    this.routes.set(playerId, route);
    this.sendToStreamer({ type: 'playerConnected', playerId, dataChannel: true, sfu: false });
  }

  disconnectPlayer(playerId: string): void {
    this.routes.delete(playerId);
    this.sendToStreamer({ type: 'playerDisconnected', playerId });
  }

  /** Forwards a player's message (answer, iceCandidate) to the streamer, stamped with its playerId. */
  fromPlayer(playerId: string, message: JsonMessage): void {
    this.sendToStreamer({ ...message, playerId });
  }

  sendToStreamer(message: JsonMessage): void {
    this.streamer?.send(JSON.stringify(message));
  }

  /** Drops the streamer's socket without a close handshake, like a crashed server. */
  dropStreamer(): void {
    this.streamer?.terminate();
  }

  async close(): Promise<void> {
    for (const client of this.server.clients) client.terminate();
    await new Promise<void>((resolve, reject) => this.server.close((error) => (error ? reject(error) : resolve())));
  }

  private onStreamer(socket: WebSocket): void {
    this.connections++;
    this.streamer = socket;
    socket.send(JSON.stringify({ type: 'config', peerConnectionOptions: {}, protocolVersion: '1.3.0' }));
    socket.send(JSON.stringify({ type: 'identify' }));
    socket.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString('utf8')) as JsonMessage;
      this.received.push(message);
      if (message.type === 'endpointId' && typeof message.id === 'string') {
        socket.send(JSON.stringify({ type: 'endpointIdConfirm', committedId: message.id }));
      }
      const playerId = message.playerId;
      if (typeof playerId === 'string') {
        const { playerId: _stripped, ...forPlayer } = message;
        this.routes.get(playerId)?.(forPlayer);
      }
      this.events.emit('message', message);
    });
  }
}
