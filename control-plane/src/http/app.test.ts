// The HTTP error handler: a DomainError is answered as the gRPC edge answers it (its kind picks the
// status, through the catalog's DOMAIN_ERROR_HTTP_STATUS; its message is the body), catalog
// errors keep their entry, anything else is a logged 500 without details.
import { connect, type AddressInfo } from 'node:net';
import { status } from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ApiError, DOMAIN_ERROR_HTTP_STATUS, DomainError, type DomainErrorKind } from '../errors';
import { toGrpcError } from '../grpc/status';
import { buildHttpApp, type Readiness } from './app';
import type { Metrics } from './metrics';

/** The standard gRPC → HTTP status mapping, written out independently of the catalog. */
const HTTP_OF_GRPC: Partial<Record<status, number>> = {
  [status.INVALID_ARGUMENT]: 400,
  [status.FAILED_PRECONDITION]: 400,
  [status.UNAUTHENTICATED]: 401,
  [status.PERMISSION_DENIED]: 403,
  [status.NOT_FOUND]: 404,
  [status.ALREADY_EXISTS]: 409,
};

const KINDS = Object.keys(DOMAIN_ERROR_HTTP_STATUS) as DomainErrorKind[];
const silent = pino({ level: 'silent' });
const logged: string[] = [];
let app: FastifyInstance;

beforeAll(async () => {
  const metrics = { httpRequests: { inc: () => undefined } } as unknown as Metrics;
  const log = pino({ level: 'error' }, { write: (line: string) => logged.push(line) });
  app = buildHttpApp({ log, metrics, isServing: () => true, readiness: () => ({ store: 'sqlite', schemaVersion: 1, latestSchemaVersion: 1 }), trustProxy: [], metricsBearerToken: undefined });
  app.get('/domain/:kind', (req) => {
    throw new DomainError((req.params as { kind: DomainErrorKind }).kind, 'Build upl_1 cannot be distributed while its status is pending');
  });
  app.get('/catalog', () => {
    throw new ApiError('uploadNotFound');
  });
  app.get('/unexpected', () => {
    throw new Error('disk on fire at 10.0.0.7:5432');
  });
  await app.ready();
});
afterAll(() => app.close());

describe('the HTTP error handler', () => {
  it.each(KINDS)('answers a DomainError of kind %s with the status the gRPC edge implies and its message', async (kind) => {
    const err = new DomainError(kind, 'whatever');
    const grpcCode = toGrpcError(err, silent, 'test').code;
    expect(DOMAIN_ERROR_HTTP_STATUS[kind]).toBe(HTTP_OF_GRPC[grpcCode]);
    const res = await app.inject({ method: 'GET', url: `/domain/${kind}` });
    expect([res.statusCode, res.json()]).toEqual([DOMAIN_ERROR_HTTP_STATUS[kind], { message: 'Build upl_1 cannot be distributed while its status is pending' }]);
  });

  it('maps every kind, and no domain refusal is logged as an unhandled error', () => {
    expect(KINDS.sort()).toEqual(['conflict', 'forbidden', 'invalid', 'not_found', 'precondition', 'unauthenticated']);
    expect(logged.join('')).not.toContain('unhandled error');
  });

  it('keeps catalog errors as they are and answers anything else 500 Internal server error, logged', async () => {
    const catalog = await app.inject({ method: 'GET', url: '/catalog' });
    expect([catalog.statusCode, catalog.json()]).toEqual([404, { message: 'Upload not found' }]);
    const unexpected = await app.inject({ method: 'GET', url: '/unexpected' });
    expect([unexpected.statusCode, unexpected.json()]).toEqual([500, { message: 'Internal server error' }]);
    expect(logged.join('')).toContain('disk on fire');
  });
});

describe('a request on a kept-alive connection while the app closes', () => {
  it('is answered 503 with a message and Connection: close', async () => {
    const metrics = { httpRequests: { inc: () => undefined } } as unknown as Metrics;
    const closing = buildHttpApp({ log: silent, metrics, isServing: () => true, readiness: () => ({ store: 'sqlite', schemaVersion: 1, latestSchemaVersion: 1 }), trustProxy: [], metricsBearerToken: undefined });
    let entered!: () => void;
    const inSlow = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    closing.get('/slow', async () => {
      entered();
      await released;
      return { done: true };
    });
    let closeBegan!: () => void;
    const began = new Promise<void>((resolve) => (closeBegan = resolve));
    // preClose hooks run in order: this one runs after the app's own.
    closing.addHook('preClose', (done) => {
      closeBegan();
      done();
    });
    await closing.listen({ host: '127.0.0.1', port: 0 });
    const socket = connect((closing.server.address() as AddressInfo).port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await inSlow;
    const closed = closing.close();
    await began;
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    release();
    await ended;
    await closed;
    const responses = received.split(/(?=HTTP\/1\.1 )/);
    expect(responses).toHaveLength(2);
    expect(responses[0]).toMatch(/^HTTP\/1\.1 200 /);
    expect(responses[1]).toMatch(/^HTTP\/1\.1 503 /);
    expect(responses[1]).toMatch(/\r\nconnection: close\r\n/i);
    expect(responses[1]!.endsWith('\r\n\r\n{"message":"The server is shutting down"}')).toBe(true);
  });
});

describe('GET /readyz', () => {
  const metrics = { httpRequests: { inc: () => undefined } } as unknown as Metrics;
  async function ask(serving: boolean, readiness: () => Readiness): Promise<{ status: number; body: unknown }> {
    const a = buildHttpApp({ log: silent, metrics, isServing: () => serving, readiness, trustProxy: [], metricsBearerToken: undefined });
    try {
      const res = await a.inject({ method: 'GET', url: '/readyz' });
      return { status: res.statusCode, body: res.json() };
    } finally {
      await a.close();
    }
  }
  const current = (schemaVersion: number): Readiness => ({ store: 'sqlite', schemaVersion, latestSchemaVersion: 23 });

  it('is ready while serving on the schema this build brings', async () => {
    expect(await ask(true, () => current(23))).toEqual({ status: 200, body: { status: 'ready', store: 'sqlite', schemaVersion: 23, latestSchemaVersion: 23 } });
  });

  it('is not ready, saying why, with migrations pending, a schema newer than the build, a database that does not answer, or while shutting down', async () => {
    expect(await ask(true, () => current(22))).toEqual({
      status: 503,
      body: { status: 'not ready', reason: 'the database schema is at version 22; this build needs 23 (migrations pending)', store: 'sqlite', schemaVersion: 22, latestSchemaVersion: 23 },
    });
    expect(await ask(true, () => current(24))).toMatchObject({ status: 503, body: { reason: "the database schema is at version 24, newer than this build's 23" } });
    expect(
      await ask(true, () => {
        throw new Error('connect ECONNREFUSED 10.0.0.7:5432');
      }),
    ).toEqual({ status: 503, body: { status: 'not ready', reason: 'the database did not answer' } });
    let asked = false;
    expect(
      await ask(false, () => {
        asked = true;
        return current(23);
      }),
    ).toEqual({ status: 503, body: { status: 'not ready', reason: 'shutting down' } });
    expect(asked).toBe(false);
  });
});
