// The build archive download for agents: `GET|HEAD /agent/builds/<uploadId>/archive?token=…`,
// the link the distribution hands each worker. Streams the blob (never buffered), with a single
// `Range` for resumed downloads; with object storage (`blobs.s3`) a GET is answered 307 with a
// presigned URL of the store instead, which the agent follows without its credential (every
// attempt, a resume included, asks here first, so each gets a fresh URL and the link's checks).
// The token is checked by builds/archive-links.ts. A link is a
// bearer URL no longer: the request must carry the worker token of the worker the link names
// (`Authorization: Bearer`), so a leaked or intercepted link alone fetches nothing (issue 22).
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors';
import { ARCHIVE_ROUTE, type ArchiveLinks } from '../builds/archive-links';
import { bearerCredential } from '../lib/secrets';

/** What a `Range` header asks of a resource of `size` bytes. */
export type RangeRequest = { kind: 'whole' } | { kind: 'range'; start: number; end: number } | { kind: 'unsatisfiable' };

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/i;

/**
 * Reads a `Range` header for a resource of `size` bytes: absent → whole; one byte range
 * (`a-b`, `a-`, `-suffix`) → its inclusive offsets, clipped to the end; anything else (several
 * ranges, another unit, a malformed or reversed range, a start past the end) → unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return { kind: 'whole' };
  const m = SINGLE_RANGE.exec(header.trim());
  if (!m) return { kind: 'unsatisfiable' };
  const [, first = '', last = ''] = m;
  const a = first === '' ? undefined : Number(first);
  const b = last === '' ? undefined : Number(last);
  if ((a !== undefined && !Number.isSafeInteger(a)) || (b !== undefined && !Number.isSafeInteger(b))) return { kind: 'unsatisfiable' };
  if (a === undefined) {
    // `-n`: the last n bytes.
    if (b === undefined || b === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - b), end: size - 1 };
  }
  if (a >= size || (b !== undefined && b < a)) return { kind: 'unsatisfiable' };
  return { kind: 'range', start: a, end: Math.min(b ?? size - 1, size - 1) };
}

export interface AgentArchiveRouteDeps {
  links: ArchiveLinks;
  /** The worker a worker token belongs to (registry.authenticate: by its digest), or undefined. */
  workerOfToken: (workerToken: string) => string | undefined;
}

export function registerAgentArchiveRoutes(app: FastifyInstance, deps: AgentArchiveRouteDeps): void {
  // Downloads in flight: a multi-GB transfer would hold shutdown for its whole length, so closing
  // the app cuts them (the agent resumes with Range from a restarted control plane).
  const inFlight = new Set<ServerResponse>();
  app.addHook('preClose', (done) => {
    for (const res of inFlight) res.destroy();
    done();
  });

  // HEAD is declared, not derived: fastify's derived HEAD would read a streamed body to discard it.
  app.route<{ Params: { uploadId: string }; Querystring: Record<string, unknown> }>({
    method: ['GET', 'HEAD'],
    url: ARCHIVE_ROUTE,
    handler: async (req, reply) => {
      const credential = bearerCredential(req.headers.authorization);
      if (credential === undefined) throw new ApiError('archiveWorkerCredentialMissing');
      const caller = deps.workerOfToken(credential);
      if (caller === undefined) throw new ApiError('archiveWorkerCredentialInvalid');
      const archive = await deps.links.openArchive(req.query.token, req.params.uploadId);
      if (archive.workerId !== caller) throw new ApiError('archiveLinkOtherWorker');
      // The store serves the bytes (and the Range) itself; HEAD is answered here from the record.
      const direct = req.method === 'GET' ? await archive.directUrl() : undefined;
      if (direct !== undefined) {
        req.log.info({ uploadId: archive.uploadId, workerId: archive.workerId, range: req.headers.range }, 'archive download sent to object storage');
        return reply.status(307).headers({ location: direct, 'cache-control': 'private, no-store' }).send();
      }
      const etag = `"${archive.sha256}"`;
      // If-Range: a range only of the same bytes, else the whole archive (it never changes under an
      // uploadId, but the check is what a resuming client relies on).
      const ifRange = req.headers['if-range'];
      const range = ifRange === undefined || ifRange === etag ? parseRange(req.headers.range, archive.bytes) : { kind: 'whole' as const };
      if (range.kind === 'unsatisfiable') throw new ApiError('rangeNotSatisfiable', {}, { 'content-range': `bytes */${archive.bytes}` });
      void reply.headers({
        'accept-ranges': 'bytes',
        etag,
        'content-type': 'application/zip',
        'cache-control': 'private, no-store',
      });
      const length = range.kind === 'range' ? range.end - range.start + 1 : archive.bytes;
      if (range.kind === 'range') void reply.status(206).header('content-range', `bytes ${range.start}-${range.end}/${archive.bytes}`);
      void reply.header('content-length', length);
      req.log.info({ uploadId: archive.uploadId, workerId: archive.workerId, method: req.method, start: range.kind === 'range' ? range.start : 0, bytes: length }, 'archive download');
      if (req.method === 'HEAD' || length === 0) return reply.send();
      inFlight.add(reply.raw);
      reply.raw.once('close', () => inFlight.delete(reply.raw));
      return reply.send(await archive.read(range.kind === 'range' ? range : undefined));
    },
  });
}
