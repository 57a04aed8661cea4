import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { LOOPBACK_HOST, listenOnLoopback } from './port-allocator';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('listenOnLoopback', () => {
  it('leaves the server listening on 127.0.0.1 at the port it returns', async () => {
    const server = createServer((socket) => socket.end('hi'));
    servers.push(server);
    const port = await listenOnLoopback(server);
    expect(port).toBeGreaterThan(0);
    expect(server.address()).toMatchObject({ address: LOOPBACK_HOST, port });
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, LOOPBACK_HOST);
      socket.setEncoding('utf8');
      let text = '';
      socket.on('data', (d: string) => (text += d));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).toBe('hi');
  });

  it('gives concurrent sessions different ports', async () => {
    const a = createServer();
    const b = createServer();
    servers.push(a, b);
    const [pa, pb] = await Promise.all([listenOnLoopback(a), listenOnLoopback(b)]);
    expect(pa).not.toBe(pb);
  });

  it('serves a WebSocket server attached to the HTTP server it started', async () => {
    const http = createHttpServer();
    servers.push(http);
    const wss = new WebSocketServer({ server: http });
    wss.on('connection', (ws) => ws.send('config'));
    const port = await listenOnLoopback(http);
    const ws = new WebSocket(`ws://127.0.0.1:${port}`);
    const first = await new Promise<string>((resolve, reject) => {
      ws.once('message', (data: Buffer) => resolve(data.toString('utf8')));
      ws.once('error', reject);
    });
    expect(first).toBe('config');
    ws.close();
    wss.close();
  });

  it('rejects when the server is already listening', async () => {
    const server = createServer();
    servers.push(server);
    await listenOnLoopback(server);
    await expect(listenOnLoopback(server)).rejects.toThrow(/listen/i);
  });
});
