// The fastify app: health, metrics (behind a bearer token), the spec's error body format
// ({ message }), also for what is refused before routing, and the one error handler. REST routes
// (build & project API, analytics, share page) register here.
import type { SecureContextOptions } from 'node:tls';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, DOMAIN_ERROR_HTTP_STATUS, DomainError, HTTP_ERRORS } from '../errors';
import { createRequestLoggerFactory } from '../lib/logger';
import { bearerCredential, secretsEqual } from '../lib/secrets';
import { answerUnmetExpectation, clientErrorHandler } from './client-errors';
import type { Metrics } from './metrics';

/** Largest JSON body accepted, in bytes; larger is 413. */
export const HTTP_BODY_LIMIT_BYTES = 1024 * 1024;

export interface HttpAppOptions {
  log: FastifyBaseLogger;
  metrics: Metrics;
  /** False once shutdown has begun: /healthz then answers 503 so balancers stop sending. */
  isServing: () => boolean;
  /**
   * /readyz: whether this replica can serve (its store answers, its schema is this build's). Throws
   * when the store cannot be asked; never called while shutting down.
   */
  readiness: () => Readiness | Promise<Readiness>;
  /** Reverse proxies trusted to name the client in X-Forwarded-For (config http.trustProxy). */
  trustProxy: readonly string[];
  /** The only credential /metrics accepts, as `Authorization: Bearer <token>` (config metrics.bearerToken); undefined: none is. */
  metricsBearerToken: string | undefined;
  /** HTTPS: certificate and key (config http.tls, read by loadServerTls); undefined: plain HTTP. */
  tls?: SecureContextOptions | undefined;
}

/** What /readyz checks beyond serving: the store, by the schema version it reports. */
export interface Readiness {
  store: string;
  schemaVersion: number;
  latestSchemaVersion: number;
}

/** /readyz's 503 reasons, in the words the body carries. */
function notReadyReason(r: Readiness): string | undefined {
  if (r.schemaVersion < r.latestSchemaVersion) return `the database schema is at version ${r.schemaVersion}; this build needs ${r.latestSchemaVersion} (migrations pending)`;
  if (r.schemaVersion > r.latestSchemaVersion) return `the database schema is at version ${r.schemaVersion}, newer than this build's ${r.latestSchemaVersion}`;
  return undefined;
}

export function buildHttpApp(options: HttpAppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.log,
    childLoggerFactory: createRequestLoggerFactory<FastifyBaseLogger>(),
    bodyLimit: HTTP_BODY_LIMIT_BYTES,
    // Both answered in our shape below: a request after close() began, and one without Host.
    return503OnClosing: false,
    http: { requireHostHeader: false },
    // HTTPS takes its server options here (the http ones above apply to plain HTTP only).
    ...(options.tls === undefined ? {} : { https: { ...options.tls, requireHostHeader: false } }),
    clientErrorHandler: clientErrorHandler(options.log),
    trustProxy: options.trustProxy.length > 0 ? [...options.trustProxy] : false,
    routerOptions: { ignoreTrailingSlash: true },
    // Router errors never reach the error handler; answer them in the same `{ message }` form
    // (fastify's own body would echo the URL, query string and its keys included).
    frameworkErrors: (err: FastifyError, _req: FastifyRequest, reply: FastifyReply) => {
      const entry = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? HTTP_ERRORS.paramTooLong : HTTP_ERRORS.badUrl;
      void reply.status(entry.status).send({ message: entry.message });
    },
  });

  app.server.on('checkExpectation', answerUnmetExpectation);
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (req, _reply, done) => {
    // As fastify's return503OnClosing: a request arriving on a kept-alive connection during close().
    if (closing) return done(new ApiError('shuttingDown', {}, { connection: 'close' }));
    // As Node's requireHostHeader: HTTP/1.1 requires Host (RFC 9112 §3.2).
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined) return done(new ApiError('hostRequired'));
    done();
  });

  app.addHook('onResponse', (req, reply, done) => {
    options.metrics.httpRequests.inc({ method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) });
    done();
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof ApiError) return reply.status(err.status).headers(err.headers).send({ message: err.message });
    // As the gRPC edge does: the kind picks the status, the message is the domain's sentence.
    if (err instanceof DomainError) return reply.status(DOMAIN_ERROR_HTTP_STATUS[err.kind]).send({ message: err.message });
    if (err.validation) return reply.status(400).send({ message: err.message });
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return reply.status(415).send({ message: HTTP_ERRORS.unsupportedMediaType.message });
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.status(413).send({ message: HTTP_ERRORS.bodyTooLarge.message });
    if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || err instanceof SyntaxError) {
      return reply.status(400).send({ message: HTTP_ERRORS.malformedJson.message });
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send({ message: err.message });
    }
    req.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ message: HTTP_ERRORS.internal.message });
  });

  app.setNotFoundHandler((_req, reply) => reply.status(404).send({ message: HTTP_ERRORS.routeNotFound.message }));

  app.get('/healthz', (_req, reply) =>
    options.isServing() ? reply.send({ status: 'ok' }) : reply.status(503).send({ status: 'shutting down' }),
  );

  // Liveness above, readiness here: a load balancer sends traffic to a replica that is serving,
  // reaches its database and runs on the schema it was built for (docs/operations.md).
  app.get('/readyz', async (req, reply) => {
    if (!options.isServing()) return reply.status(503).send({ status: 'not ready', reason: 'shutting down' });
    let readiness: Readiness;
    try {
      readiness = await options.readiness();
    } catch (err) {
      req.log.warn({ err }, 'readiness: the database did not answer');
      return reply.status(503).send({ status: 'not ready', reason: 'the database did not answer' });
    }
    const reason = notReadyReason(readiness);
    const body = { store: readiness.store, schemaVersion: readiness.schemaVersion, latestSchemaVersion: readiness.latestSchemaVersion };
    return reason === undefined ? reply.send({ status: 'ready', ...body }) : reply.status(503).send({ status: 'not ready', reason, ...body });
  });

  // Browsers ask for it on every page; answering keeps the viewer page's console clean.
  app.get('/favicon.ico', (_req, reply) => reply.status(204).header('cache-control', 'max-age=86400').send());

  if (options.metricsBearerToken === undefined) options.log.warn('metrics.bearerToken is not set: /metrics refuses every scrape');
  app.get('/metrics', async (req, reply) => {
    const presented = bearerCredential(req.headers.authorization);
    if (presented === undefined || options.metricsBearerToken === undefined || !secretsEqual(presented, options.metricsBearerToken)) {
      throw new ApiError('metricsUnauthorized', {}, { 'www-authenticate': 'Bearer realm="metrics"' });
    }
    const text = await options.metrics.registry.metrics();
    return reply.type(options.metrics.registry.contentType).send(text);
  });

  return app;
}
