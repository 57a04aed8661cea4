// The root pino logger of both processes (control plane and agent), with the one redaction
// mechanism: secrets are removed by configuration (a walk over every logged object for SECRET_KEYS
// and URL_KEYS, a URL serializer, secret shapes struck from every line as it is written), never by
// care at call sites. Modules take child loggers: log.child({ component }); the control plane's
// fastify takes its per-request children from createRequestLoggerFactory.
import pino, { type Bindings, type ChildLoggerOptions, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** Keys whose values never reach a log line, wherever they appear in a logged object. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  'apiKey',
  'apikey',
  'token',
  'joinToken',
  'adminToken',
  'agentJoinToken',
  'workerToken',
  'viewerToken',
  'authorization',
  'x-api-key',
  // config.turn.secret and a viewer's TURN credential (share/turn-credentials.ts).
  'secret',
  'credential',
  // config.blobs.s3's secret key (and the AWS SDK's own name for a credentials object).
  'secretAccessKey',
  'credentials',
]);

/**
 * Keys whose string values are URLs (or paths of one), wherever they appear in a logged object:
 * each goes through redactUrl (e.g. @fastify/websocket logs a refused upgrade's `path`).
 */
const URL_KEYS: ReadonlySet<string> = new Set(['url', 'path']);

const CENSOR = '[Redacted]';
/** How far below the top of a logged object secrets are looked for (0 = the top level). */
const REDACT_DEPTH = 4;

/**
 * Objects whose own fields are walked for secrets: plain objects, arrays, null-prototype and
 * class-made records (a fastify query, a context object). Left alone: what has no secret-bearing
 * own fields or would be costly to walk — event emitters (sockets, streams, requests), buffers,
 * collections, dates, promises.
 */
function isWalkable(value: unknown): value is Record<string, unknown> | unknown[] {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return true;
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return false;
  if (value instanceof Map || value instanceof Set || value instanceof WeakMap || value instanceof WeakSet) return false;
  if (value instanceof Date || value instanceof RegExp || value instanceof Promise) return false;
  const emitter = value as { on?: unknown; emit?: unknown };
  return !(typeof emitter.on === 'function' && typeof emitter.emit === 'function');
}

/**
 * A copy of obj with the value of every SECRET_KEYS key replaced and every URL_KEYS string passed
 * through redactUrl, down through every walkable object (see isWalkable) to REDACT_DEPTH levels;
 * an object with a secret comes out as a plain copy of its own enumerable fields. obj itself is returned, uncopied, when it holds no secret.
 * This replaces pino's `redact` paths: their wildcards (`*.apiKey`, `*.*.apiKey`) cost ~40 µs
 * per line, a third of a whole API request, where this walk costs about a microsecond.
 * skipKeys: keys of obj itself to leave as they are.
 */
export function redactSecrets<T extends object>(obj: T, depth = 0, skipKeys?: ReadonlySet<string>): T {
  let copy: Record<string, unknown> | unknown[] | undefined;
  const source = obj as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    if (skipKeys?.has(key)) continue;
    const value = source[key];
    let next = value;
    if (SECRET_KEYS.has(key)) next = CENSOR;
    else if (typeof value === 'string') next = URL_KEYS.has(key) ? redactUrl(value) : value;
    else if (depth < REDACT_DEPTH && isWalkable(value)) next = redactSecrets(value, depth + 1);
    if (next === value) continue;
    copy ??= Array.isArray(obj) ? [...(obj as unknown[])] : { ...source };
    (copy as Record<string, unknown>)[key] = next;
  }
  return (copy ?? obj) as T;
}

/** Top-level keys whose serializer already reduces the value to safe fields (walking `req` would cost a whole request object). */
const SERIALIZED_KEYS: ReadonlySet<string> = new Set(['req', 'err']);

/** formatters.log: every logged object, except what a serializer reduces afterwards. */
function redactLogObject(object: Record<string, unknown>): Record<string, unknown> {
  return redactSecrets(object, 0, SERIALIZED_KEYS);
}

/** Query parameter names whose values are secrets, lower-cased. */
const SECRET_QUERY_NAMES: ReadonlySet<string> = new Set(['apikey', 'api_key', 'x-api-key', 'token', 'viewertoken', 'x-amz-signature', 'x-amz-security-token']);
const QUERY_PARAM = /([?&])([^=&#]*)=([^&#]*)/g;

/**
 * The shapes of the secrets the control plane issues, found anywhere in a URL (a path segment, a
 * query value under any name): `pfk_` API keys, `pfv_` viewer tokens and `pfw_` worker tokens
 * (`generateSecret`: prefix, `_`, 43 base64url characters; the `_` also when escaped as `%5F`,
 * and from 16 characters on, so a truncated paste is caught too), and archive download tokens
 * (`v1.<workerId>.<uploadId>.<sha256>.<expiresAt>.<mac>`, builds/archive-links.ts). The tokens an
 * operator chooses (admin, agent join, metrics) have no shape; they are redacted by key name.
 */
const SECRET_SHAPES = /pf[kvw](?:_|%5[Ff])[A-Za-z0-9_-]{16,}|v1\.[A-Za-z0-9_-]{1,128}\.[A-Za-z0-9_-]{1,128}\.[0-9a-f]{64}\.\d{1,16}\.[A-Za-z0-9_-]+/g;

/**
 * Removes secrets from a URL before it is logged: the values of secret query parameters (e.g.
 * `apikey`), and anything shaped like one of our secrets wherever it stands (SECRET_SHAPES: a key
 * pasted into the path, or sent under another parameter's name). Names are compared decoded and
 * case-insensitively: the query parser decodes `api%6Bey` to `apikey` (it authenticates), and a
 * key sent as `APIKEY` by mistake is still a key.
 */
export function redactUrl(url: string): string {
  const query = url.indexOf('?');
  const named =
    query < 0 ? url : url.slice(0, query) + url.slice(query).replace(QUERY_PARAM, (param, sep: string, name: string) => (SECRET_QUERY_NAMES.has(decodedName(name)) ? `${sep}${name}=${CENSOR}` : param));
  return named.replace(SECRET_SHAPES, CENSOR);
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const logger = pino(
    {
      level,
      formatters: { log: redactLogObject },
      serializers: {
        req: (req: { method?: string; url?: string; id?: string }) => ({
          method: req.method,
          url: req.url === undefined ? undefined : redactUrl(req.url),
          id: req.id,
        }),
        // The standard serializer copies an error's own fields (an error may carry a token).
        err: (err: Error) => redactSecrets(pino.stdSerializers.err(err)),
      },
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      // The last net, over the line as written (about 0.15 µs): a secret's shape inside a message, an
      // error's message or stack, or any field is struck out. JSON escapes none of its characters.
      hooks: { streamWrite: (line) => line.replace(SECRET_SHAPES, CENSOR) },
    },
    destination,
  );
  // pino never formats a child's bindings (it swaps in an identity formatter for children), and
  // every child inherits `child` from its parent's prototype chain: this one override redacts the
  // bindings of every descendant, once, when it is made.
  type ChildMethod = (this: Logger, bindings: Bindings, options?: ChildLoggerOptions) => Logger;
  const pinoChild = (Object.getPrototypeOf(logger) as { child: ChildMethod }).child;
  Object.defineProperty(logger, 'child', {
    value: function child(this: Logger, bindings: Bindings, options?: ChildLoggerOptions): Logger {
      return pinoChild.call(this, redactSecrets(bindings), options);
    },
  });
  return logger;
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
