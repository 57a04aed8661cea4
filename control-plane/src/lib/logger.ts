// The control plane's request loggers: fastify's childLoggerFactory comes with the shared root
// logger and its redaction (createLogger in @pixelfleet/signaling, logger.ts).
export { createRequestLoggerFactory } from '@pixelfleet/common';
