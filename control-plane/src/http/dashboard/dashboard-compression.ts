// The dashboard's answers gzipped for clients that accept it: its bundle (130 KB of script) and the
// JSON of its pages (an audience page lists every city of its window, a few hundred KB). Done in one
// onSend hook on whole payloads (strings and buffers), never on streams, so an answer is compressed
// before it is written and a client that goes away mid-answer leaves nothing behind to close; the
// log-file download, a stream, goes as it is. Registered on the dashboard's own scope: the REST API,
// the share page and the viewers' sockets answer as they always have.
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acceptsGzip } from '../accept-encoding';

const gzipAsync = promisify(gzip);

/** Answers shorter than this go as they are: a gzip header and a thread-pool turn save nothing on them. */
export const COMPRESS_MIN_BYTES = 1024;

export function registerDashboardCompression(scope: FastifyInstance): void {
  scope.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
    const bytes = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
    if (bytes < COMPRESS_MIN_BYTES || reply.hasHeader('content-encoding')) return payload;
    // The answer differs by Accept-Encoding from here on, whether or not this one is compressed.
    const vary = reply.getHeader('vary');
    reply.header('vary', vary === undefined || vary === '' ? 'accept-encoding' : `${String(vary)}, accept-encoding`);
    if (!acceptsGzip(req.headers['accept-encoding'])) return payload;
    const zipped = await gzipAsync(payload);
    reply.header('content-encoding', 'gzip');
    reply.removeHeader('content-length');
    return zipped;
  });
}
