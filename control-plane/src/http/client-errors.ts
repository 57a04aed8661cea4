// Requests refused before fastify routes them, answered in the service's `{ message }` shape: what
// Node's HTTP parser rejects (oversized headers, a raw non-ASCII or control byte in the request
// line, a bad version, conflicting lengths, a timeout) and an `Expect` it cannot meet. fastify's
// and Node's own answers would be a different body, or none.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { HTTP_ERRORS, type HttpErrorName } from '../errors';

/** The parser's error codes that have an answer of their own; any other is `malformedRequest`. */
const CLIENT_ERROR_ANSWERS: Readonly<Record<string, HttpErrorName>> = {
  HPE_HEADER_OVERFLOW: 'headersTooLarge',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'chunkExtensionsTooLarge',
  ERR_HTTP_REQUEST_TIMEOUT: 'requestTimeout',
};

/** The catalog entry a clientError is answered with. */
export function clientErrorAnswer(code: string | undefined): HttpErrorName {
  return (code === undefined ? undefined : CLIENT_ERROR_ANSWERS[code]) ?? 'malformedRequest';
}

/**
 * fastify's `clientErrorHandler` (the server's 'clientError'): answers as Node would, with our
 * body, then closes the connection. Logged at debug with the parser's code only: the error's
 * `rawPacket` holds the request's bytes, secrets included, and a malformed request is the
 * client's problem, not the operator's.
 */
export function clientErrorHandler(log: FastifyBaseLogger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // A reset connection is already gone; there is no one to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const name = clientErrorAnswer(err.code);
    log.debug({ code: err.code, status: HTTP_ERRORS[name].status }, 'request refused before routing');
    // As Node does: never write into a response already under way on this connection.
    if (socket.writable && !responseStarted(socket)) socket.write(rawResponse(name));
    socket.destroy();
  };
}

/**
 * The server's 'checkExpectation' (an `Expect` other than `100-continue`): 417 with our body
 * instead of Node's empty one. The request is not routed.
 */
export function answerUnmetExpectation(_req: IncomingMessage, res: ServerResponse): void {
  const { status, message } = HTTP_ERRORS.expectationFailed;
  const body = JSON.stringify({ message });
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
}

function rawResponse(name: HttpErrorName): string {
  const { status, message } = HTTP_ERRORS[name];
  const body = JSON.stringify({ message });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  );
}

/** Node's own check (lib/_http_server.js socketOnError): the response in flight on this socket has sent its head. */
function responseStarted(socket: Socket): boolean {
  return (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
}
