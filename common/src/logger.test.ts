import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, createRequestLoggerFactory, redactSecrets, redactUrl, type Logger } from './logger';

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

describe('createLogger redaction', () => {
  it('removes apiKey, token, authorization and x-api-key values but keeps other fields', () => {
    const { log, text, lines } = memoryLogger();
    log.info(
      {
        apiKey: 'SECRET-API-KEY',
        token: 'SECRET-TOKEN',
        authorization: 'Bearer SECRET-AUTH',
        headers: { 'x-api-key': 'SECRET-X-API-KEY', authorization: 'Bearer SECRET-HEADER-AUTH', accept: 'application/json' },
        userId: 'user-visible',
      },
      'request handled',
    );
    const out = text();
    for (const secret of ['SECRET-API-KEY', 'SECRET-TOKEN', 'SECRET-AUTH', 'SECRET-X-API-KEY', 'SECRET-HEADER-AUTH']) {
      expect(out).not.toContain(secret);
    }
    const [line] = lines();
    expect(line).toMatchObject({
      msg: 'request handled',
      userId: 'user-visible',
      apiKey: '[Redacted]',
      token: '[Redacted]',
      authorization: '[Redacted]',
      headers: { 'x-api-key': '[Redacted]', authorization: '[Redacted]', accept: 'application/json' },
    });
  });

  it('removes secret query parameters from a logged req url and drops its headers', () => {
    const { log, text, lines } = memoryLogger();
    log.info(
      { req: { method: 'GET', url: '/api/v1/sessions?apikey=SECRET-QUERY&userId=u', id: 'req-1', headers: { authorization: 'SECRET-REQ-AUTH' } } },
      'incoming',
    );
    expect(text()).not.toContain('SECRET-QUERY');
    expect(text()).not.toContain('SECRET-REQ-AUTH');
    expect(lines()[0]).toMatchObject({
      req: { method: 'GET', url: '/api/v1/sessions?apikey=[Redacted]&userId=u', id: 'req-1' },
    });
  });

  it('redacts one level down under any key, the secret config keys (TURN too) and worker/join tokens', () => {
    const { log, text } = memoryLogger();
    log.info(
      {
        user: { apiKey: 'SECRET-NESTED-KEY', email: 'a@example.com' },
        config: { adminToken: 'SECRET-ADMIN', agentJoinToken: 'SECRET-JOIN', http: { port: 8080 } },
        worker: { workerToken: 'SECRET-WORKER' },
        joinToken: 'SECRET-JOIN-TOP',
        body: { apiKey: 'SECRET-BODY' },
        turn: { secret: 'SECRET-TURN', urls: ['turn:turn.example.com'] },
        iceServer: { username: '1767225600:sess_a', credential: 'SECRET-TURN-CREDENTIAL' },
      },
      'nested',
    );
    const out = text();
    expect(out).toContain('turn:turn.example.com');
    for (const secret of ['SECRET-NESTED-KEY', 'SECRET-ADMIN', 'SECRET-JOIN', 'SECRET-WORKER', 'SECRET-JOIN-TOP', 'SECRET-BODY', 'SECRET-TURN', 'SECRET-TURN-CREDENTIAL']) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain('a@example.com');
    expect(out).toContain('"port":8080');
  });

  it('redacts deeper down, inside arrays, and in child bindings, leaving the logged object untouched', () => {
    const { log, text, lines } = memoryLogger();
    const logged = { a: { b: { c: { token: 'SECRET-DEEP' } } }, list: [{ viewerToken: 'SECRET-IN-ARRAY', n: 1 }], plain: { ok: true } };
    log.child({ viewerToken: 'SECRET-BINDING', 'x-api-key': 'SECRET-BINDING-2' }).child({ apiKey: 'SECRET-GRANDCHILD' }).info(logged, 'deep');
    expect(text()).not.toMatch(/SECRET-/);
    expect(lines()[0]).toMatchObject({ a: { b: { c: { token: '[Redacted]' } } }, list: [{ viewerToken: '[Redacted]', n: 1 }], plain: { ok: true } });
    expect(logged.a.b.c.token).toBe('SECRET-DEEP'); // the caller's object is copied, never written
  });

  it("redacts an error's own fields, a fastify-style query object, class instances and nested child bindings", () => {
    const { log, text, lines } = memoryLogger();
    const err = Object.assign(new Error('boom'), { apiKey: 'SECRET-ERR-KEY', code: 'E1' });
    log.error({ err }, 'failed');
    log.error(Object.assign(new Error('bare'), { token: 'SECRET-BARE-ERR' }));
    const query = Object.assign(Object.create({ inherited: 1 }) as object, { apikey: 'SECRET-QUERY-OBJ', userId: 'u' });
    class Context {
      constructor(readonly workerToken: string) {}
    }
    log.info({ query, ctx: new Context('SECRET-CLASS') }, 'objects');
    log.child({ meta: { viewerToken: 'SECRET-NESTED-BINDING' } }).child({ token: 'SECRET-GRANDCHILD-TOP' }).info('bound');
    expect(text()).not.toMatch(/SECRET-/);
    expect(lines()[0]).toMatchObject({ err: { message: 'boom', code: 'E1', apiKey: '[Redacted]' } });
    expect(lines()[2]).toMatchObject({ query: { apikey: '[Redacted]', userId: 'u' }, ctx: { workerToken: '[Redacted]' } });
    expect(lines()[3]).toMatchObject({ meta: { viewerToken: '[Redacted]' }, token: '[Redacted]', msg: 'bound' });
  });

  it('returns an object without secrets as it is (no copy on the hot path)', () => {
    const clean = { req: { method: 'GET', url: '/x' }, res: { statusCode: 200 }, responseTime: 1.2 };
    expect(redactSecrets(clean)).toBe(clean);
    const withSecret = { headers: { 'x-api-key': 'k' } };
    expect(redactSecrets(withSecret)).toEqual({ headers: { 'x-api-key': '[Redacted]' } });
  });

  it('redacts in child loggers too', () => {
    const { log, text } = memoryLogger();
    log.child({ component: 'grpc' }).warn({ token: 'SECRET-CHILD', req: { url: '/x?token=SECRET-CHILD-URL&a=1' } }, 'child');
    expect(text()).not.toContain('SECRET-CHILD');
    expect(text()).toContain('"component":"grpc"');
    expect(text()).toContain('a=1');
  });

  it('serializes errors with their message', () => {
    const { log, lines } = memoryLogger();
    log.error({ err: new Error('disk full') }, 'failed');
    expect(lines()[0]).toMatchObject({ level: 50, msg: 'failed', err: { type: 'Error', message: 'disk full' } });
  });

  it('honours the level', () => {
    const { log, lines } = memoryLogger('warn');
    log.info('not written');
    log.warn('written');
    expect(lines().map((l) => l.msg)).toEqual(['written']);
  });
});

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

describe('createLogger and URLs', () => {
  const KEY = 'pfk_Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE';

  it('passes every url and path string of a logged object through redactUrl, at any depth and in child bindings', () => {
    const { log, text, lines } = memoryLogger();
    log.info({ path: `/share/${KEY}`, nested: { url: '/a?apikey=typo-of-a-key&x=1' }, file: { path: '/data/builds/upl_1' } }, 'refused');
    log.child({ url: '/b?token=t0ken' }).info('child');
    expect(text()).not.toContain(KEY);
    expect(text()).not.toContain('typo-of-a-key');
    expect(text()).not.toContain('t0ken');
    expect(lines()[0]).toMatchObject({ path: '/share/[Redacted]', nested: { url: '/a?apikey=[Redacted]&x=1' }, file: { path: '/data/builds/upl_1' } });
    expect(lines()[1]).toMatchObject({ url: '/b?token=[Redacted]' });
  });

  it("strikes a secret's shape from every line as written: messages, interpolations, errors, any field", () => {
    const { log, text } = memoryLogger();
    log.info(`Route GET:/api/${KEY} not found`);
    log.warn('reply already sent for %s', `/x/${KEY}`);
    log.error({ err: new Error(`fetch /y?k=${KEY} failed`) }, 'failed');
    log.child({ component: 'c' }).info({ note: `pasted ${KEY.replace('_', '%5F')}` }, 'note');
    const out = text();
    expect(out).not.toContain(KEY.slice(4, 20));
    expect(out.match(/\[Redacted\]/g)).toHaveLength(5); // the error's message and its stack
  });
});

describe('object storage secrets (blobs.s3)', () => {
  it("never writes the S3 secret key (config or the SDK's credentials object) nor a presigned URL's signature", () => {
    const { log, text } = memoryLogger();
    log.info({ config: { blobs: { s3: { bucket: 'pixelfleet-blobs', accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'SECRET-S3-KEY' } } }, client: { credentials: { secretAccessKey: 'SECRET-S3-CREDS' } } }, 'config');
    log.info({ url: 'https://s3.example.com/b/k?X-Amz-Credential=AKID%2F20261207&X-Amz-Signature=SECRETSIG0a1b&X-Amz-Security-Token=SECRETSESSION' }, 'presigned');
    const out = text();
    for (const secret of ['SECRET-S3-KEY', 'SECRET-S3-CREDS', 'SECRETSIG0a1b', 'SECRETSESSION']) expect(out).not.toContain(secret);
    expect(out).toContain('pixelfleet-blobs');
    expect(out).toContain('X-Amz-Signature=[Redacted]');
  });
});

describe('redactUrl', () => {
  it('replaces the values of apikey, apiKey, token and viewerToken only', () => {
    expect(redactUrl('/a?apikey=S1&userId=u')).toBe('/a?apikey=[Redacted]&userId=u');
    expect(redactUrl('/a?userId=u&apiKey=S2')).toBe('/a?userId=u&apiKey=[Redacted]');
    expect(redactUrl('/a?token=S3&x=1&viewerToken=S4#frag')).toBe('/a?token=[Redacted]&x=1&viewerToken=[Redacted]#frag');
    expect(redactUrl('/a?token=&b=2')).toBe('/a?token=[Redacted]&b=2');
  });

  it('compares names decoded and case-insensitively (the query parser decodes api%6Bey to apikey)', () => {
    expect(redactUrl('/a?userId=u&api%6Bey=S1')).toBe('/a?userId=u&api%6Bey=[Redacted]');
    expect(redactUrl('/a?APIKEY=S2&x=1')).toBe('/a?APIKEY=[Redacted]&x=1');
    expect(redactUrl('/a?x-api-key=S3&ViewerToken=S4')).toBe('/a?x-api-key=[Redacted]&ViewerToken=[Redacted]');
    expect(redactUrl('/a?%E0%A4%A=1&apikey=S5')).toBe('/a?%E0%A4%A=1&apikey=[Redacted]'); // a malformed escape elsewhere changes nothing
  });

  // The shapes generateSecret gives (prefix, `_`, 32 random bytes in base64url) and an archive link's token.
  const KEY = 'pfk_Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE';
  const VIEWER = 'pfv_a-b_c-d_e-f_g-h_i-j_k-l_m-n_o-p_q-r_s-t_u-v';
  const WORKER = 'pfw_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG';
  const ARCHIVE = `v1.wrk_1.upl_a.${'ab'.repeat(32)}.1795581425466.${'M'.repeat(43)}`;

  it('redacts anything shaped like one of our secrets wherever it stands in the path', () => {
    expect(redactUrl(`/api/v1/projects/${KEY}`)).toBe('/api/v1/projects/[Redacted]');
    expect(redactUrl(`/share/${VIEWER}/signalling`)).toBe('/share/[Redacted]/signalling');
    expect(redactUrl(`/${WORKER}`)).toBe('/[Redacted]');
    expect(redactUrl(`/agent/builds/upl_a/${ARCHIVE}`)).toBe('/agent/builds/upl_a/[Redacted]');
    expect(redactUrl(`/a/key=${KEY};x`)).toBe('/a/key=[Redacted];x');
    expect(redactUrl(`/a/${KEY.replace('_', '%5F')}/b`)).toBe('/a/[Redacted]/b'); // the separator escaped
    expect(redactUrl(`/a/${KEY.slice(0, 20)}`)).toBe('/a/[Redacted]'); // a truncated paste is most of a key
  });

  it('redacts secret shapes in the query under any name, and in the fragment', () => {
    expect(redactUrl(`/a?userId=${KEY}&q=1`)).toBe('/a?userId=[Redacted]&q=1');
    expect(redactUrl(`/a?next=%2Fb%2F${VIEWER}`)).toBe('/a?next=%2Fb%2F[Redacted]');
    expect(redactUrl(`/a?x=1#${WORKER}`)).toBe('/a?x=1#[Redacted]');
    expect(redactUrl(`/agent/builds/upl_a/archive?token=${ARCHIVE}`)).toBe('/agent/builds/upl_a/archive?token=[Redacted]');
    expect(redactUrl(`/a?u=${ARCHIVE}&b=2`)).toBe('/a?u=[Redacted]&b=2');
  });

  it('leaves our ids and short look-alikes alone', () => {
    expect(redactUrl('/api/v1/projects/prj_7a2c00914505132e87bd8b39/builds/upl_0c110ce8a5f45c61773f419b')).toBe('/api/v1/projects/prj_7a2c00914505132e87bd8b39/builds/upl_0c110ce8a5f45c61773f419b');
    expect(redactUrl('/share/prj_1/signalling?resume=session_1795581425466_310991624')).toBe('/share/prj_1/signalling?resume=session_1795581425466_310991624');
    expect(redactUrl('/a/pfk_short')).toBe('/a/pfk_short');
  });

  it('leaves URLs without secret parameters unchanged', () => {
    expect(redactUrl('/share/abc?userId=u&mytoken=visible')).toBe('/share/abc?userId=u&mytoken=visible');
    expect(redactUrl('/token=notaquery')).toBe('/token=notaquery');
    expect(redactUrl('')).toBe('');
  });
});
