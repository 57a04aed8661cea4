// The one root pino logger. Secrets are removed by configuration (redact paths and a URL
// serializer), never by care at call sites. Modules take child loggers: log.child({ component }).
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** Paths pino removes from every line, wherever a secret can appear. */
export const REDACT_PATHS = [
  'apiKey', '*.apiKey', 'apikey', '*.apikey', 'token', '*.token', 'joinToken', '*.joinToken',
  'adminToken', '*.adminToken', 'agentJoinToken', '*.agentJoinToken', 'workerToken', '*.workerToken',
  'authorization', '*.authorization', 'req.headers.authorization', 'req.headers["x-api-key"]',
  'headers.authorization', 'headers["x-api-key"]', 'config.adminToken', 'config.agentJoinToken',
  'body.apiKey', 'req.body.apiKey',
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
