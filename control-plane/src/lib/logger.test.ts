import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '@pixelfleet/signaling';
import { createRequestLoggerFactory } from './logger';

/** A logger writing into memory; pino writes to a plain Writable synchronously. */
function memoryLogger(level = 'info') {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  const log = createLogger(level, sink);
  const text = () => chunks.join('');
  const lines = () =>
    text()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, text, lines };
}

describe('createRequestLoggerFactory', () => {
  it('writes the same lines as logger.child(bindings, opts), at the route level, redacted', () => {
    const direct = memoryLogger();
    const factory = memoryLogger();
    const make = createRequestLoggerFactory<Logger>();
    for (const child of [
      (b: Record<string, unknown>, o: { level?: string }) => direct.log.child(b, o),
      (b: Record<string, unknown>, o: { level?: string }) => make(factory.log, b, o),
    ]) {
      const quiet = child({ reqId: 'req-1' }, { level: 'warn' });
      quiet.info({ apiKey: 'SECRET-1' }, 'not written');
      quiet.warn({ apiKey: 'SECRET-2', user: { token: 'SECRET-3' } }, 'written at warn');
      child({ reqId: 'req-2' }, { level: 'warn' }).error('second request, same level');
      child({ reqId: 'req-3' }, {}).info({ req: { method: 'GET', url: '/a?apikey=SECRET-4', id: 'req-3' } }, 'default level');
      child({ reqId: 'req-4' }, { level: 'debug' }).debug('debug route');
    }
    const strip = (t: string) => t.replace(/"time":"[^"]*",/g, '');
    expect(strip(factory.text())).toBe(strip(direct.text()));
    expect(factory.text()).not.toContain('SECRET');
    expect(factory.lines().map((l) => [l.reqId, l.msg])).toEqual([
      ['req-1', 'written at warn'],
      ['req-2', 'second request, same level'],
      ['req-3', 'default level'],
      ['req-4', 'debug route'],
    ]);
  });
});
