// Local HTTP(S) servers for tests on 127.0.0.1 (or another local address), and the answer a file
// host gives for a build archive: whole, from a Range, or held after its first bytes.
import { createReadStream, statSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface TestServer {
  server: Server;
  /** `http(s)://<host>:<port>` */
  origin: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host, port 0 (HTTPS when `tls` is given); close() also cuts connections held open. */
export async function listen(handler: RequestListener, host = '127.0.0.1', tls?: { key: string; cert: string }): Promise<TestServer> {
  const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    origin: `${tls ? 'https' : 'http'}://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Answers a GET of `file` as a storage host does: 206 with the rest from a `bytes=N-` Range, else
 * 200 with the whole file (Accept-Ranges: bytes). With `holdAfter`, a whole answer sends that
 * many bytes and then nothing more: the caller keeps `res` and cuts it when it wants.
 */
export function sendZip(req: IncomingMessage, res: ServerResponse, file: string, holdAfter?: number): void {
  const size = statSync(file).size;
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  if (range) {
    const start = Number(range[1]);
    res.writeHead(206, { 'content-type': 'application/zip', 'accept-ranges': 'bytes', 'content-length': size - start, 'content-range': `bytes ${start}-${size - 1}/${size}` });
    createReadStream(file, { start }).pipe(res);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/zip', 'accept-ranges': 'bytes', 'content-length': size });
  if (holdAfter === undefined) createReadStream(file).pipe(res);
  else createReadStream(file, { end: holdAfter - 1 }).on('data', (c) => res.write(c));
}
