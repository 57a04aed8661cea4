// The one root pino logger. Secrets are removed by configuration (redact paths and a URL
// serializer), never by care at call sites. Modules take child loggers: log.child({ component }).
import pino, { type DestinationStream, type Logger } from 'pino';

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
