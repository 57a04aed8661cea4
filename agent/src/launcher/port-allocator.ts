// A loopback TCP port for a session's signalling server, with no race: the caller's own
// server listens on 127.0.0.1 port 0, so the OS picks a free port and the caller already owns
// it when the port is known. (Probing — bind, read the port, close, hand the number on — leaves
// a gap in which another process can take the port.)
import type { Server } from 'node:net';

/** An IP literal, not `localhost`: on Windows `localhost` may resolve to ::1 first. */
export const LOOPBACK_HOST = '127.0.0.1';

/**
 * Starts server (a net/http server, e.g. the one a WebSocketServer is attached to) listening on
 * 127.0.0.1 with an OS-chosen port, and resolves with that port. The caller closes the server.
 */
export function listenOnLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    try {
      server.listen({ host: LOOPBACK_HOST, port: 0, exclusive: true }, () => {
        server.off('error', onError);
        const address = server.address();
        if (address === null || typeof address === 'string') reject(new Error('server is not listening on a TCP port'));
        else resolve(address.port);
      });
    } catch (err) {
      server.off('error', onError);
      reject(err instanceof Error ? err : new Error(String(err)));
    }
  });
}
