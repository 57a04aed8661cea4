// The WebSocket error handler on a real fastify app with @fastify/websocket and real ws clients:
// a rejected frame writes nothing here and the client still gets ws's close code, a failing
// transport is one debug line, a handler that throws is one error line with its stack.
import { afterEach, describe, expect, it } from 'vitest';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import pino from 'pino';
import WebSocket from 'ws';
import { handleWebsocketError } from './websocket-errors';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

interface Line {
  level: number;
  msg: string;
  err?: { message: string; stack?: string };
  code?: string;
}

/** An app whose /frames route keeps its socket open and whose /throws route throws; logs captured at debug. */
async function start(onSocket: (socket: WebSocket) => void = () => undefined): Promise<{ url: string; lines: Line[] }> {
  const lines: Line[] = [];
  const log: FastifyBaseLogger = pino({ level: 'debug' }, { write: (l: string) => lines.push(JSON.parse(l) as Line) });
  const started = Fastify({ loggerInstance: log });
  app = started;
  await started.register(websocket, { options: { maxPayload: 1024 }, errorHandler: handleWebsocketError });
  started.get('/frames', { websocket: true }, (socket) => onSocket(socket));
  started.get('/throws', { websocket: true }, () => {
    throw new Error('handler broke');
  });
  await started.listen({ host: '127.0.0.1', port: 0 });
  const { port } = started.server.address() as { port: number };
  return { url: `ws://127.0.0.1:${port}`, lines };
}

async function open(url: string): Promise<{ client: WebSocket; closed: Promise<number> }> {
  const client = new WebSocket(url);
  client.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => client.on('close', (code) => resolve(code)));
  await new Promise((resolve) => client.once('open', resolve));
  return { client, closed };
}

const aboveInfo = (lines: Line[]) => lines.filter((l) => l.level >= 40 || l.msg.startsWith('websocket'));

describe('handleWebsocketError', () => {
  it('leaves a rejected frame to ws: nothing logged, the precise close code reaches the client', async () => {
    const { url, lines } = await start();
    const { client, closed } = await open(`${url}/frames`);
    for (let i = 0; i < 50; i++) client.send('x'.repeat(2048));
    expect(await closed).toBe(1009);
    const utf8 = await open(`${url}/frames`);
    for (let i = 0; i < 50; i++) utf8.client.send(Buffer.from([0xff, 0xfe]), { binary: false });
    expect(await utf8.closed).toBe(1007);
    expect(aboveInfo(lines)).toEqual([]);
  });

  it('logs a failing transport once at debug, without a stack, and terminates the socket', async () => {
    const { url, lines } = await start((socket) => {
      socket.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read', errno: -104 }));
    });
    const { closed } = await open(`${url}/frames`);
    expect(await closed).toBe(1006);
    expect(aboveInfo(lines)).toEqual([expect.objectContaining({ level: 20, msg: 'websocket transport error', code: 'ECONNRESET' })]);
    expect(JSON.stringify(lines)).not.toContain('stack');
  });

  it('logs a handler of ours that throws as an error with its stack, and terminates the socket', async () => {
    const { url, lines } = await start();
    const { closed } = await open(`${url}/throws`);
    expect(await closed).toBe(1006);
    const errors = aboveInfo(lines);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ level: 50, msg: 'websocket handler failed', err: { message: 'handler broke' } });
    expect(errors[0]!.err?.stack).toContain('handler broke');
  });
});
