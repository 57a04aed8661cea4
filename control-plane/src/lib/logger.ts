// The control plane's request loggers (fastify's childLoggerFactory). The root logger and its
// redaction are shared with the agent: createLogger in @pixelfleet/signaling (logger.ts).
import type { Bindings, ChildLoggerOptions } from 'pino';

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
