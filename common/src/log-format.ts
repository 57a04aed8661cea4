// How the root logger's lines look: readable, coloured lines (pino-pretty) for a person at a
// terminal, one JSON object per line for everything else (journald, files, pipes, log shippers).
// The redaction of createLogger runs before either: pino-pretty only reformats the JSON line
// pino has already written, secrets struck.
import type { Writable } from 'node:stream';
import type { DestinationStream } from 'pino';
import pretty from 'pino-pretty';

export type LogFormat = 'json' | 'pretty';

/** Pretty when stdout is a terminal, JSON otherwise. */
export function chooseLogFormat(stdoutIsTTY: boolean | undefined): LogFormat {
  return stdoutIsTTY === true ? 'pretty' : 'json';
}

/**
 * The destination for createLogger: undefined (pino's own JSON to stdout) for `json`; a
 * synchronous pino-pretty stream for `pretty`, to stdout or to `out` (tests).
 */
export function logDestination(format: LogFormat, out?: Writable): DestinationStream | undefined {
  if (format === 'json') return undefined;
  return pretty({
    colorize: out === undefined,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ...(out === undefined ? {} : { destination: out }),
  });
}
