// The answers given before routing, on a real Node HTTP server with the handler installed: a
// request that never finishes its headers (408), chunk extensions past Node's limit (413), and
// what the parser refuses outright (400). The fastify app's own cases are in
// test/integration/http-hostile.test.ts.
import { createServer, STATUS_CODES, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { HTTP_ERRORS } from '../errors';
import { clientErrorAnswer, clientErrorHandler } from './client-errors';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server whose route reads the whole body, then answers 200; timeouts checked every 20 ms. */
async function listen(options: { headersTimeout?: number; requestTimeout?: number } = {}): Promise<number> {
  server = createServer({ ...options, connectionsCheckingInterval: 20 }, (req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.on('clientError', clientErrorHandler(pino({ level: 'silent' })));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Writes raw bytes and reads everything until the server closes the connection. */
async function exchange(port: number, bytes: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
  socket.write(bytes);
  await ended;
  return received;
}

/** The exact bytes of an answer (the reason phrase is Node's: 413's differs between Node versions). */
const answer = (status: number, message: string) => {
  const body = JSON.stringify({ message });
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;
};

describe('clientErrorAnswer', () => {
  it('gives the parser codes with an answer of their own their entry, anything else 400', () => {
    expect(clientErrorAnswer('HPE_HEADER_OVERFLOW')).toBe('headersTooLarge');
    expect(clientErrorAnswer('HPE_CHUNK_EXTENSIONS_OVERFLOW')).toBe('chunkExtensionsTooLarge');
    expect(clientErrorAnswer('ERR_HTTP_REQUEST_TIMEOUT')).toBe('requestTimeout');
    expect(clientErrorAnswer('HPE_INVALID_METHOD')).toBe('malformedRequest');
    expect(clientErrorAnswer(undefined)).toBe('malformedRequest');
    expect([HTTP_ERRORS.headersTooLarge.status, HTTP_ERRORS.chunkExtensionsTooLarge.status, HTTP_ERRORS.requestTimeout.status, HTTP_ERRORS.malformedRequest.status]).toEqual([431, 413, 408, 400]);
  });
});

describe('clientErrorHandler on a real server', () => {
  it('answers a request whose headers never end 408 with a message', async () => {
    const port = await listen({ headersTimeout: 100, requestTimeout: 200 });
    expect(await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\n')).toBe(answer(408, 'Request timed out'));
  });

  it('answers chunk extensions past the limit 413 with a message', async () => {
    const port = await listen();
    const body = `1;ext=${'e'.repeat(20_000)}\r\na\r\n0\r\n\r\n`;
    expect(await exchange(port, `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${body}`)).toBe(answer(413, 'Request chunk extensions are too large'));
  });

  it('answers bytes that are not HTTP 400 with a message', async () => {
    const port = await listen();
    expect(await exchange(port, 'NOT HTTP AT ALL\r\n\r\n')).toBe(answer(400, 'Malformed HTTP request'));
  });
});
