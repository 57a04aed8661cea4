// What the control plane does with an error on an accepted WebSocket (@fastify/websocket's
// errorHandler): a bad frame is the peer's doing and is told once, by the socket's endpoint; a
// failing transport is debug; only our own failure is an error with its stack.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { isFrameError } from '@pixelfleet/signaling';

/**
 * Replaces @fastify/websocket's default handler, which logged every error at error level with a
 * full stack and terminated the socket (a flood of bad frames from one client wrote megabytes).
 * - A frame ws rejected (over maxPayload, invalid UTF-8, too many fragments): not logged here. The
 *   socket's endpoint reports it as a protocol error, which its owner logs once at warn (ws emits
 *   one error per socket and stops reading). The socket is left to ws, which has sent the precise
 *   close code and ends the connection after it: terminating would close a socket with the flood
 *   still unread, which resets the connection and can lose that close frame on its way out.
 * - The transport failing (a reset, a broken pipe): debug, no stack; the socket is terminated.
 * - Anything else is a handler of ours that threw: error with the stack; the socket is terminated.
 */
export function handleWebsocketError(this: FastifyInstance, err: Error & { code?: unknown; syscall?: unknown }, socket: WebSocket, request: FastifyRequest, _reply: FastifyReply): void {
  if (isFrameError(err)) return;
  if (typeof err.syscall === 'string') request.log.debug({ code: err.code, syscall: err.syscall }, 'websocket transport error');
  else request.log.error({ err }, 'websocket handler failed');
  socket.terminate();
}
