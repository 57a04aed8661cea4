// The one root pino logger. Secrets are removed by configuration (redact paths and a URL
// serializer), never by care at call sites. Modules take child loggers: log.child({ component }).
import pino, { type Bindings, type ChildLoggerOptions, type DestinationStream, type Logger } from 'pino';

export type { Logger };

const SECRET_KEYS = ['apiKey', 'apikey', 'token', 'joinToken', 'adminToken', 'agentJoinToken', 'workerToken', 'viewerToken', 'authorization'];

/** Paths pino removes from every line, wherever a secret can appear (up to two levels deep). */
export const REDACT_PATHS = [
  ...SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
  'req.headers["x-api-key"]',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
];

const SECRET_QUERY = /([?&](?:apikey|apiKey|token|viewerToken)=)[^&#]*/g;

/** Removes secret query parameters (e.g. `apikey`) from a URL before it is logged. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[Redacted]');
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
      serializers: {
        req: (req: { method?: string; url?: string; id?: string }) => ({
          method: req.method,
          url: req.url === undefined ? undefined : redactUrl(req.url),
          id: req.id,
        }),
        err: pino.stdSerializers.err,
      },
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/**
 * fastify's childLoggerFactory: each request's logger is a child of the app logger with its
 * `reqId` and the route's level (`logLevel`). The same lines as `logger.child(bindings, opts)`,
 * cheaper: the per-level parent is built once, and the per-request child takes bindings only
 * (pino's fast path; a child with options rebuilds its formatters and level methods each time,
 * and every child runs the redaction over its bindings).
 */
export function createRequestLoggerFactory<L extends { child(bindings: Bindings, options?: ChildLoggerOptions): L }>(): (
  logger: L,
  bindings: Bindings,
  opts: ChildLoggerOptions,
) => L {
  const byLevel = new WeakMap<L, Map<string, L>>();
  return (logger, bindings, opts) => {
    const keys = Object.keys(opts);
    if (keys.length === 0) return logger.child(bindings);
    if (keys.length > 1 || typeof opts.level !== 'string') return logger.child(bindings, opts);
    let levels = byLevel.get(logger);
    if (!levels) byLevel.set(logger, (levels = new Map<string, L>()));
    let parent = levels.get(opts.level);
    if (!parent) levels.set(opts.level, (parent = logger.child({}, { level: opts.level })));
    return parent.child(bindings);
  };
}
