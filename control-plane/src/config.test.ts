import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONTROL_PLANE_ENV_PREFIX, insecureListeners, loadControlPlaneConfig, resolvePublicUrls } from './config';
import { ConfigError, envNameForKey } from '@pixelfleet/common';

const ADMIN = 'admin-token-0123456789abcdefghijkl';
const JOIN = 'join-token-0123456789abcdefghijklm';
const TOKENS = { adminToken: ADMIN, agentJoinToken: JOIN };

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-cp-config-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(value: unknown, name = 'config.json'): string {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

/** Runs fn and returns the ConfigError it throws (fails the test if it throws anything else). */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}

describe('loadControlPlaneConfig defaults', () => {
  it('applies every default when only the required tokens are given', () => {
    const c = loadControlPlaneConfig({ overrides: TOKENS });
    expect(c.http).toEqual({ host: '127.0.0.1', port: 8080, trustProxy: [], insecure: false });
    expect(c.grpc).toEqual({ host: '127.0.0.1', port: 50051, insecure: false });
    expect(c.limits).toEqual({ buildCallWindowSeconds: 120, analyticsReadsPerMinute: 300, fairUseBurst: 60, fairUsePerSecond: 5, fairUseAddressBurst: 240, fairUseAddressPerSecond: 20, telemetryBytesPerSession: 4_194_304, telemetryBytesWhileQueued: 65_536, telemetryAddressBytesBurst: 2_097_152, telemetryAddressBytesPerSecond: 65_536, maxBuildBytes: 25_769_803_776 });
    expect(c.downloads).toEqual({ maxAttempts: 5, retryBaseMs: 1_000, retryMaxMs: 30_000, stallTimeoutSeconds: 60 });
    expect(c.network).toEqual({ allowPrivateUrls: false, allowPrivateViewerCandidates: false });
    expect(c.workers).toEqual({ heartbeatIntervalSeconds: 10, leaseSeconds: 30, lostGraceSeconds: 120 });
    expect(c.viewers).toEqual({ resumeGraceSeconds: 30, maxPerAddress: 20, maxQueuedPerProject: 500, sessionsPerMinute: 10, sessionBurst: 20 });
    expect(c.retention).toEqual({ sessionDays: 100, logDays: 30, telemetryDays: 92, sweepIntervalMinutes: 60 });
    expect(c.geoip).toEqual({ enabled: true });
    expect(c.publicUrls).toEqual({});
    expect(c.distribution).toEqual({ linkTtlSeconds: 7_200, deadlineSeconds: 7_200 });
    expect(c.metrics).toEqual({});
    expect(c.logLevel).toBe('info');
    expect(c.adminToken).toBe(ADMIN);
    expect(c.agentJoinToken).toBe(JOIN);
  });

  it('fills a partially given section with defaults for the missing keys', () => {
    const c = loadControlPlaneConfig({ overrides: { ...TOKENS, http: { port: 9000 }, workers: { leaseSeconds: 40 } } });
    expect(c.http).toEqual({ host: '127.0.0.1', port: 9000, trustProxy: [], insecure: false });
    expect(c.workers).toEqual({ heartbeatIntervalSeconds: 10, leaseSeconds: 40, lostGraceSeconds: 120 });
  });

  it('resolves dataDir to an absolute path (default and configured)', () => {
    const byDefault = loadControlPlaneConfig({ overrides: TOKENS });
    expect(isAbsolute(byDefault.dataDir)).toBe(true);
    expect(byDefault.dataDir).toBe(resolve('.data/control-plane'));
    const configured = loadControlPlaneConfig({ overrides: { ...TOKENS, dataDir: 'rel/dir' } });
    expect(configured.dataDir).toBe(resolve('rel/dir'));
  });

  it('requires adminToken and agentJoinToken, naming the missing key', () => {
    expect(configError(() => loadControlPlaneConfig({ overrides: { agentJoinToken: JOIN } })).message).toContain('"adminToken"');
    expect(configError(() => loadControlPlaneConfig({ overrides: { adminToken: ADMIN } })).message).toContain('"agentJoinToken"');
  });
});

describe('loadControlPlaneConfig sources and precedence', () => {
  it('reads values from the JSON file', () => {
    const file = writeConfig({ ...TOKENS, http: { host: '0.0.0.0', port: 8081, insecure: true }, logLevel: 'debug' });
    const c = loadControlPlaneConfig({ file });
    expect(c.http).toEqual({ host: '0.0.0.0', port: 8081, trustProxy: [], insecure: true });
    expect(c.logLevel).toBe('debug');
  });

  it('lets overrides win over the file, merging nested objects key by key', () => {
    const file = writeConfig({ ...TOKENS, http: { host: '0.0.0.0', port: 8081, insecure: true } });
    const c = loadControlPlaneConfig({ file, overrides: { http: { port: 9001 } } });
    expect(c.http).toEqual({ host: '0.0.0.0', port: 9001, trustProxy: [], insecure: true });
  });

  it('lets environment variables win over both the file and overrides', () => {
    const file = writeConfig({ ...TOKENS, http: { host: '0.0.0.0', port: 8081, insecure: true }, grpc: { port: 6000, insecure: true } });
    const c = loadControlPlaneConfig({
      file,
      overrides: { http: { port: 9001 }, grpc: { port: 6001 } },
      env: { PIXELFLEET_HTTP__PORT: '9100', PIXELFLEET_GRPC__HOST: '10.0.0.1' },
    });
    expect(c.http).toEqual({ host: '0.0.0.0', port: 9100, trustProxy: [], insecure: true });
    expect(c.grpc).toEqual({ host: '10.0.0.1', port: 6001, insecure: true });
  });

  it('parses env values by the kind of their key (string, number, boolean)', () => {
    const c = loadControlPlaneConfig({
      env: {
        PIXELFLEET_ADMIN_TOKEN: ADMIN,
        PIXELFLEET_AGENT_JOIN_TOKEN: JOIN,
        PIXELFLEET_DATA_DIR: join(dir, 'data'),
        PIXELFLEET_NETWORK__ALLOW_PRIVATE_URLS: 'true',
        PIXELFLEET_LIMITS__BUILD_CALL_WINDOW_SECONDS: '60',
        PIXELFLEET_LIMITS__ANALYTICS_READS_PER_MINUTE: '50',
        PIXELFLEET_WORKERS__HEARTBEAT_INTERVAL_SECONDS: '5',
        PIXELFLEET_WORKERS__LEASE_SECONDS: '15',
        PIXELFLEET_PUBLIC_URLS__API: 'https://api.example.com/',
        PIXELFLEET_LOG_LEVEL: 'warn',
      },
    });
    expect(c.adminToken).toBe(ADMIN);
    expect(c.agentJoinToken).toBe(JOIN);
    expect(c.dataDir).toBe(join(dir, 'data'));
    expect(c.network.allowPrivateUrls).toBe(true);
    expect(c.limits).toEqual({ buildCallWindowSeconds: 60, analyticsReadsPerMinute: 50, fairUseBurst: 60, fairUsePerSecond: 5, fairUseAddressBurst: 240, fairUseAddressPerSecond: 20, telemetryBytesPerSession: 4_194_304, telemetryBytesWhileQueued: 65_536, telemetryAddressBytesBurst: 2_097_152, telemetryAddressBytesPerSecond: 65_536, maxBuildBytes: 25_769_803_776 });
    expect(c.workers).toEqual({ heartbeatIntervalSeconds: 5, leaseSeconds: 15, lostGraceSeconds: 120 });
    expect(c.publicUrls.api).toBe('https://api.example.com');
    expect(c.logLevel).toBe('warn');
  });

  it('reads trusted proxies as a JSON list and the viewer limits as numbers from env', () => {
    const c = loadControlPlaneConfig({
      env: {
        PIXELFLEET_ADMIN_TOKEN: ADMIN,
        PIXELFLEET_AGENT_JOIN_TOKEN: JOIN,
        PIXELFLEET_HTTP__TRUST_PROXY: '["10.0.0.0/8", "127.0.0.1"]',
        PIXELFLEET_VIEWERS__MAX_PER_ADDRESS: '0',
        PIXELFLEET_VIEWERS__MAX_QUEUED_PER_PROJECT: '25',
        PIXELFLEET_VIEWERS__SESSIONS_PER_MINUTE: '0',
        PIXELFLEET_VIEWERS__SESSION_BURST: '5',
        PIXELFLEET_RETENTION__SESSION_DAYS: '120',
        PIXELFLEET_RETENTION__SWEEP_INTERVAL_MINUTES: '15',
        PIXELFLEET_GEOIP__ENABLED: 'false',
        PIXELFLEET_RETENTION__LOG_DAYS: '7',
      },
    });
    expect(c.http.trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1']);
    expect(c.viewers).toEqual({ resumeGraceSeconds: 30, maxPerAddress: 0, maxQueuedPerProject: 25, sessionsPerMinute: 0, sessionBurst: 5 });
    expect(c.retention).toEqual({ sessionDays: 120, logDays: 7, telemetryDays: 92, sweepIntervalMinutes: 15 });
    expect(c.geoip).toEqual({ enabled: false });
    // Without their own value, logs and telemetry are kept no longer than their sessions.
    expect(loadControlPlaneConfig({ overrides: { ...TOKENS, retention: { sessionDays: 20 } } }).retention).toEqual({ sessionDays: 20, logDays: 20, telemetryDays: 20, sweepIntervalMinutes: 60 });
    expect(() => loadControlPlaneConfig({ overrides: { ...TOKENS, retention: { sessionDays: 20, logDays: 21 } } })).toThrow('config key "retention.logDays": must not exceed retention.sessionDays');
    expect(() => loadControlPlaneConfig({ overrides: { ...TOKENS, retention: { telemetryDays: 101 } } })).toThrow('config key "retention.telemetryDays": must not exceed retention.sessionDays');
    expect(() => loadControlPlaneConfig({ overrides: { ...TOKENS, retention: { logDays: 0 } } })).toThrow(/retention\.logDays/);
    expect(() => loadControlPlaneConfig({ overrides: { ...TOKENS, viewers: { sessionBurst: 0 } } })).toThrow(/viewers\.sessionBurst/);
    expect(() => loadControlPlaneConfig({ overrides: { ...TOKENS, retention: { sessionDays: 0 } } })).toThrow(/retention\.sessionDays/);
    expect(() => loadControlPlaneConfig({ env: { PIXELFLEET_ADMIN_TOKEN: ADMIN, PIXELFLEET_AGENT_JOIN_TOKEN: JOIN, PIXELFLEET_HTTP__TRUST_PROXY: '10.0.0.1' } })).toThrow(
      /http\.trustProxy/,
    );
  });

  it('accepts only addresses, CIDR ranges and named ranges as trusted proxies, naming the key', () => {
    const load = (trustProxy: string[]) => loadControlPlaneConfig({ overrides: { ...TOKENS, http: { trustProxy } } });
    expect(load(['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', 'loopback']).http.trustProxy).toEqual(['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', 'loopback']);
    for (const bad of ['not-an-ip', '10.0.0.0/33', '10.0.0.0/8/1', '::1/129', '10.0.0.0/']) {
      expect(() => load([bad]), bad).toThrow(/"http\.trustProxy\.0": must be an IP address, a CIDR range/);
    }
  });

  it('reads TURN (secret, urls, ttlSeconds) from the file or env; absent by default; refuses a short secret or a non-TURN URL', () => {
    expect(loadControlPlaneConfig({ overrides: TOKENS }).turn).toBeUndefined();
    const secret = 'turn-secret-0123456789abcdefghijkl';
    const fromFile = loadControlPlaneConfig({ file: writeConfig({ ...TOKENS, turn: { secret, urls: ['turn:turn.example.com:3478'] } }) });
    expect(fromFile.turn).toEqual({ secret, urls: ['turn:turn.example.com:3478'], ttlSeconds: 86_400 });
    const fromEnv = loadControlPlaneConfig({
      env: {
        PIXELFLEET_ADMIN_TOKEN: ADMIN,
        PIXELFLEET_AGENT_JOIN_TOKEN: JOIN,
        PIXELFLEET_TURN__SECRET: secret,
        PIXELFLEET_TURN__URLS: '["turn:turn.example.com:3478?transport=udp", "turns:turn.example.com:5349?transport=tcp"]',
        PIXELFLEET_TURN__TTL_SECONDS: '7200',
      },
    });
    expect(fromEnv.turn).toEqual({ secret, urls: ['turn:turn.example.com:3478?transport=udp', 'turns:turn.example.com:5349?transport=tcp'], ttlSeconds: 7200 });
    const load = (turn: unknown) => () => loadControlPlaneConfig({ overrides: { ...TOKENS, turn } });
    expect(load({ secret: 'short', urls: ['turn:t.example.com'] })).toThrow(/"turn\.secret": turn\.secret must be at least 32 characters/);
    expect(load({ secret, urls: ['https://turn.example.com'] })).toThrow(/"turn\.urls\.0": must be a turn: or turns: URL/);
    expect(load({ secret, urls: [] })).toThrow(/turn\.urls/);
    expect(load({ secret, urls: ['turn:t.example.com'], ttlSeconds: 30 })).toThrow(/turn\.ttlSeconds/);
    expect(load({ secret, urls: ['turn:t.example.com'], password: 'x' })).toThrow(/turn/);
  });

  it('ignores environment variables that name no known key', () => {
    const c = loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_HTTP__PROT: 'x', PIXELFLEET_SOMETHING_ELSE: '1', HOME: '/root' } });
    expect(c.http.port).toBe(8080);
  });

  it('does not read process.env unless it is passed', () => {
    const previous = process.env.PIXELFLEET_HTTP__PORT;
    process.env.PIXELFLEET_HTTP__PORT = '1234';
    try {
      expect(loadControlPlaneConfig({ overrides: TOKENS }).http.port).toBe(8080);
    } finally {
      if (previous === undefined) delete process.env.PIXELFLEET_HTTP__PORT;
      else process.env.PIXELFLEET_HTTP__PORT = previous;
    }
  });
});

describe('loadControlPlaneConfig errors', () => {
  it('rejects an unknown top-level key, naming it', () => {
    const err = configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, htpp: { port: 1 } } }));
    expect(err.message).toBe('unknown config key "htpp"');
  });

  it('rejects an unknown nested key, naming its dotted path', () => {
    const file = writeConfig({ ...TOKENS, http: { prot: 8080 } });
    expect(configError(() => loadControlPlaneConfig({ file })).message).toBe('unknown config key "http.prot"');
    expect(configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, limits: { buildCallWindow: 1 } } })).message).toBe(
      'unknown config key "limits.buildCallWindow"',
    );
  });

  it('reports a malformed JSON file with its path', () => {
    const file = writeConfig('{ "http": { "port": 80, }');
    const err = configError(() => loadControlPlaneConfig({ file }));
    expect(err.message).toContain(file);
    expect(err.message).toContain('not valid JSON');
  });

  it('reports a missing file with its path', () => {
    const file = join(dir, 'nope.json');
    const err = configError(() => loadControlPlaneConfig({ file }));
    expect(err.message).toContain(file);
    expect(err.message).toContain('cannot be read');
  });

  it('rejects a file that holds JSON but not an object', () => {
    const file = writeConfig('[1, 2]');
    expect(configError(() => loadControlPlaneConfig({ file })).message).toBe(`config file ${file} must hold a JSON object`);
  });

  it('reads the build size cap and the download retries from env, and keeps the other download defaults', () => {
    const c = loadControlPlaneConfig({
      overrides: TOKENS,
      env: { PIXELFLEET_LIMITS__MAX_BUILD_BYTES: '1073741824', PIXELFLEET_DOWNLOADS__MAX_ATTEMPTS: '3', PIXELFLEET_DOWNLOADS__STALL_TIMEOUT_SECONDS: '30' },
    });
    expect(c.limits.maxBuildBytes).toBe(1_073_741_824);
    expect(c.downloads).toEqual({ maxAttempts: 3, retryBaseMs: 1_000, retryMaxMs: 30_000, stallTimeoutSeconds: 30 });
  });

  it('rejects download settings that make no sense, naming the key', () => {
    for (const [override, key] of [
      [{ limits: { maxBuildBytes: 0 } }, '"limits.maxBuildBytes"'],
      [{ limits: { maxBuildBytes: 1.5 } }, '"limits.maxBuildBytes"'],
      [{ downloads: { maxAttempts: 0 } }, '"downloads.maxAttempts"'],
      [{ downloads: { retryBaseMs: 5_000, retryMaxMs: 1_000 } }, '"downloads"'],
      [{ downloads: { retries: 3 } }, '"downloads.retries"'],
    ] as const) {
      expect(configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, ...override } })).message, JSON.stringify(override)).toContain(key);
    }
  });

  it('rejects wrong types, naming the key', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ http: { port: '8080' } }, '"http.port"'],
      [{ grpc: { host: 5 } }, '"grpc.host"'],
      [{ network: { allowPrivateUrls: 'yes' } }, '"network.allowPrivateUrls"'],
      [{ limits: { analyticsReadsPerMinute: 1.5 } }, '"limits.analyticsReadsPerMinute"'],
      [{ http: { port: 70000 } }, '"http.port"'],
      [{ logLevel: 'loud' }, '"logLevel"'],
      [{ dataDir: '' }, '"dataDir"'],
      [{ publicUrls: { api: 'not a url' } }, '"publicUrls.api"'],
      [{ publicUrls: { share: 'ftp://files.example.com' } }, '"publicUrls.share"'],
    ];
    for (const [override, key] of cases) {
      const err = configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, ...override } }));
      expect(err.message, JSON.stringify(override)).toContain(`config key ${key}`);
    }
  });

  it('refuses a weak secret, naming the key and why: the placeholder, short, or a few characters repeated', () => {
    const refusal = (override: Record<string, unknown>) => configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, ...override } })).message;
    expect(refusal({ adminToken: 'CHANGE-ME: openssl rand -hex 32' })).toContain('"adminToken": adminToken is the sample config\'s placeholder (CHANGE-ME…); generate one with `openssl rand -hex 32`');
    expect(refusal({ adminToken: 'x'.repeat(31) })).toContain('"adminToken": adminToken must be at least 32 characters (it has 31)');
    expect(refusal({ agentJoinToken: 'password'.repeat(4) })).toContain('"agentJoinToken": agentJoinToken is too easy to guess (a few characters repeated: about 88 bits, at least 90 needed)');
    expect(refusal({ metrics: { bearerToken: 'change-me-please-0123456789abcdefgh' } })).toContain('"metrics.bearerToken": metrics.bearerToken is the sample config\'s placeholder');
    const random = randomBytes(16).toString('hex');
    expect(loadControlPlaneConfig({ overrides: { ...TOKENS, adminToken: random } }).adminToken).toBe(random);
  });

  it('reads metrics.bearerToken from the file or env, and refuses one shorter than 32 characters', () => {
    const token = 'metrics-token-0123456789abcdefghij';
    expect(loadControlPlaneConfig({ file: writeConfig({ ...TOKENS, metrics: { bearerToken: token } }) }).metrics.bearerToken).toBe(token);
    expect(loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_METRICS__BEARER_TOKEN: token } }).metrics.bearerToken).toBe(token);
    const short = configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, metrics: { bearerToken: 'short' } } }));
    expect(short.message).toContain('"metrics.bearerToken"');
    expect(short.message).toContain('at least 32 characters');
  });

  it('rejects a lease that does not exceed the heartbeat interval', () => {
    const err = configError(() =>
      loadControlPlaneConfig({ overrides: { ...TOKENS, workers: { heartbeatIntervalSeconds: 30, leaseSeconds: 30 } } }),
    );
    expect(err.message).toContain('"workers"');
    expect(err.message).toContain('leaseSeconds must exceed heartbeatIntervalSeconds');
  });

  it('rejects an env var that is not a number for a number key, naming key and variable', () => {
    for (const text of ['abc', '', '  ', '12abc']) {
      const err = configError(() => loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_HTTP__PORT: text } }));
      expect(err.message).toContain('http.port');
      expect(err.message).toContain('PIXELFLEET_HTTP__PORT');
      expect(err.message).toContain('not a number');
    }
  });

  it('rejects an env var that is not true/false for a boolean key', () => {
    const err = configError(() => loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_NETWORK__ALLOW_PRIVATE_URLS: 'yes' } }));
    expect(err.message).toContain('network.allowPrivateUrls');
    expect(err.message).toContain('PIXELFLEET_NETWORK__ALLOW_PRIVATE_URLS');
  });

  it('validates env values against the schema too (a number out of range names the key)', () => {
    const err = configError(() => loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_GRPC__PORT: '99999' } }));
    expect(err.message).toContain('"grpc.port"');
  });
});

describe('loadControlPlaneConfig result', () => {
  it('is deeply frozen', () => {
    const c = loadControlPlaneConfig({ overrides: { ...TOKENS, publicUrls: { api: 'https://api.example.com' } } });
    expect(Object.isFrozen(c)).toBe(true);
    for (const section of [c.http, c.grpc, c.publicUrls, c.network, c.limits, c.downloads, c.distribution, c.workers]) {
      expect(Object.isFrozen(section)).toBe(true);
    }
    expect(() => {
      (c.http as { port: number }).port = 1;
    }).toThrow(TypeError);
    expect(() => {
      (c as { logLevel: string }).logLevel = 'debug';
    }).toThrow(TypeError);
    expect(c.http.port).toBe(8080);
  });

  it('does not change the overrides object it was given', () => {
    const overrides = { ...TOKENS, http: { port: 9000 } };
    loadControlPlaneConfig({ overrides, env: { PIXELFLEET_HTTP__PORT: '9100' } });
    expect(overrides).toEqual({ ...TOKENS, http: { port: 9000 } });
    expect(Object.isFrozen(overrides.http)).toBe(false);
  });
});

describe('resolvePublicUrls', () => {
  it('derives api, platform and share from the listening origin', () => {
    const c = loadControlPlaneConfig({ overrides: TOKENS });
    expect(resolvePublicUrls(c, 'http://127.0.0.1:8080')).toEqual({
      api: 'http://127.0.0.1:8080/api',
      platform: 'http://127.0.0.1:8080',
      share: 'http://127.0.0.1:8080/share',
      dashboard: 'http://127.0.0.1:8080/dashboard',
      agents: 'http://127.0.0.1:8080',
    });
  });

  it('strips trailing slashes from the origin', () => {
    const c = loadControlPlaneConfig({ overrides: TOKENS });
    expect(resolvePublicUrls(c, 'http://localhost:8080//')).toEqual({
      api: 'http://localhost:8080/api',
      platform: 'http://localhost:8080',
      share: 'http://localhost:8080/share',
      dashboard: 'http://localhost:8080/dashboard',
      agents: 'http://localhost:8080',
    });
  });

  it('prefers configured URLs (trailing slashes stripped), deriving only the unset ones', () => {
    const c = loadControlPlaneConfig({
      overrides: { ...TOKENS, publicUrls: { api: 'https://api.example.com/v1/', share: 'https://share.example.com//' } },
    });
    expect(c.publicUrls).toEqual({ api: 'https://api.example.com/v1', share: 'https://share.example.com' });
    expect(resolvePublicUrls(c, 'http://127.0.0.1:8080')).toEqual({
      api: 'https://api.example.com/v1',
      platform: 'http://127.0.0.1:8080',
      share: 'https://share.example.com',
      dashboard: 'http://127.0.0.1:8080/dashboard',
      agents: 'http://127.0.0.1:8080',
    });
  });

  it('uses every configured URL when each one is set', () => {
    const c = loadControlPlaneConfig({
      overrides: {
        ...TOKENS,
        publicUrls: { api: 'https://a.example.com', platform: 'https://p.example.com/', share: 'https://s.example.com', dashboard: 'https://d.example.com/console/' },
      },
    });
    expect(resolvePublicUrls(c, 'http://127.0.0.1:1')).toEqual({
      api: 'https://a.example.com',
      platform: 'https://p.example.com',
      share: 'https://s.example.com',
      dashboard: 'https://d.example.com/console',
      agents: 'https://p.example.com',
    });
  });

  it('gives agents their own origin when publicUrls.agents is set (env too), else the platform URL', () => {
    const c = loadControlPlaneConfig({
      overrides: { ...TOKENS, publicUrls: { platform: 'https://p.example.com' } },
      env: { PIXELFLEET_PUBLIC_URLS__AGENTS: 'https://10.0.0.5:8443/' },
    });
    expect(resolvePublicUrls(c, 'http://127.0.0.1:1').agents).toBe('https://10.0.0.5:8443');
    expect(resolvePublicUrls(loadControlPlaneConfig({ overrides: { ...TOKENS, publicUrls: { platform: 'https://p.example.com' } } }), 'http://127.0.0.1:1').agents).toBe('https://p.example.com');
  });
});

describe('distribution.linkTtlSeconds', () => {
  it('is read from the file or env, and refused outside 60 s .. 7 days with the key named', () => {
    expect(loadControlPlaneConfig({ overrides: { ...TOKENS, distribution: { linkTtlSeconds: 600 } } }).distribution.linkTtlSeconds).toBe(600);
    expect(loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_DISTRIBUTION__LINK_TTL_SECONDS: '3600' } }).distribution.linkTtlSeconds).toBe(3600);
    for (const bad of [59, 7 * 24 * 3600 + 1, 1.5]) {
      expect(configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, distribution: { linkTtlSeconds: bad } } })).message).toContain('"distribution.linkTtlSeconds"');
    }
  });
});

describe('distribution.deadlineSeconds', () => {
  it('is read from the file or env, and refused outside 10 s .. 7 days with the key named', () => {
    expect(loadControlPlaneConfig({ overrides: { ...TOKENS, distribution: { deadlineSeconds: 600 } } }).distribution.deadlineSeconds).toBe(600);
    expect(loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_DISTRIBUTION__DEADLINE_SECONDS: '3600' } }).distribution.deadlineSeconds).toBe(3600);
    for (const bad of [9, 7 * 24 * 3600 + 1, 1.5]) {
      expect(configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, distribution: { deadlineSeconds: bad } } })).message).toContain('"distribution.deadlineSeconds"');
    }
  });
});

describe('envNameForKey', () => {
  it('upper-snakes camelCase and joins nesting with a double underscore', () => {
    expect(CONTROL_PLANE_ENV_PREFIX).toBe('PIXELFLEET_');
    expect(envNameForKey('PIXELFLEET_', 'http.port')).toBe('PIXELFLEET_HTTP__PORT');
    expect(envNameForKey('PIXELFLEET_', 'dataDir')).toBe('PIXELFLEET_DATA_DIR');
    expect(envNameForKey('PIXELFLEET_', 'adminToken')).toBe('PIXELFLEET_ADMIN_TOKEN');
    expect(envNameForKey('PIXELFLEET_', 'network.allowPrivateUrls')).toBe('PIXELFLEET_NETWORK__ALLOW_PRIVATE_URLS');
    expect(envNameForKey('PIXELFLEET_', 'workers.heartbeatIntervalSeconds')).toBe('PIXELFLEET_WORKERS__HEARTBEAT_INTERVAL_SECONDS');
    expect(envNameForKey('PIXELFLEET_', 'publicUrls.api')).toBe('PIXELFLEET_PUBLIC_URLS__API');
    expect(envNameForKey('X_', 'a.b.c')).toBe('X_A__B__C');
  });
});

describe('listeners other machines can reach (TLS, a trusted proxy, or an explicit opt-out)', () => {
  const tls = { certFile: '/etc/pixelfleet/tls.pem', keyFile: '/etc/pixelfleet/tls.key' };

  it('refuses a non-loopback gRPC listener without grpc.tls unless grpc.insecure, in one line naming the keys', () => {
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'cp.example.com']) {
      const message = configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, grpc: { host } } })).message;
      expect(message).toBe(`config key "grpc.host": ${host} is reachable from other machines and grpc.tls is not set: set grpc.tls.certFile and grpc.tls.keyFile, or grpc.insecure: true to accept plaintext`);
    }
    expect(loadControlPlaneConfig({ overrides: { ...TOKENS, grpc: { host: '0.0.0.0', tls } } }).grpc).toEqual({ host: '0.0.0.0', port: 50051, tls, insecure: false });
    const optedOut = loadControlPlaneConfig({ overrides: TOKENS, env: { PIXELFLEET_GRPC__HOST: '0.0.0.0', PIXELFLEET_GRPC__INSECURE: 'true' } });
    expect(insecureListeners(optedOut)).toEqual(['grpc (0.0.0.0:50051, grpc.insecure)']);
  });

  it('takes loopback listeners in plaintext, with nothing to warn about', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
      const c = loadControlPlaneConfig({ overrides: { ...TOKENS, grpc: { host }, http: { host } } });
      expect(insecureListeners(c)).toEqual([]);
    }
  });

  it('refuses a non-loopback HTTP listener unless http.tls, http.trustProxy or http.insecure says how it is protected', () => {
    expect(configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, http: { host: '0.0.0.0' } } })).message).toBe(
      'config key "http.host": 0.0.0.0 is reachable from other machines without TLS: set http.tls.certFile and http.tls.keyFile, or http.trustProxy to the HTTPS proxy in front, or http.insecure: true to accept plaintext',
    );
    const behindProxy = loadControlPlaneConfig({ overrides: { ...TOKENS, http: { host: '0.0.0.0', trustProxy: ['10.0.0.2'] }, publicUrls: { platform: 'https://cp.example.com' } } });
    expect(insecureListeners(behindProxy)).toEqual([]);
    expect(insecureListeners(loadControlPlaneConfig({ overrides: { ...TOKENS, http: { host: '0.0.0.0', tls } } }))).toEqual([]);
    expect(insecureListeners(loadControlPlaneConfig({ overrides: { ...TOKENS, http: { host: '0.0.0.0', insecure: true } } }))).toEqual(['http (0.0.0.0:8080, http.insecure)']);
  });

  it('refuses an http:// publicUrls.agents to another machine (explicit, from publicUrls.platform, or the listener\'s origin) unless http.insecure', () => {
    const refused = (overrides: Record<string, unknown>, env: Record<string, string> = {}) => configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, ...overrides }, env })).message;
    const tail = 'plain HTTP to another machine: agents would download builds and their signed links unencrypted;';
    for (const url of ['http://10.0.0.5:8080', 'http://cp.example.com', 'http://[2001:db8::5]:8080', 'http://0.0.0.0:8080']) {
      expect(refused({ publicUrls: { agents: url } })).toBe(`config key "publicUrls.agents": ${url} is ${tail} make it https://, or set http.insecure: true to accept plaintext`);
    }
    expect(refused({}, { PIXELFLEET_PUBLIC_URLS__AGENTS: 'http://10.0.0.5:8080' })).toContain('config key "publicUrls.agents": http://10.0.0.5:8080 is plain HTTP');
    // http.tls does not make an http:// URL encrypted.
    expect(refused({ http: { tls }, publicUrls: { agents: 'http://10.0.0.5:8080' } })).toContain('config key "publicUrls.agents": http://10.0.0.5:8080 is plain HTTP');
    expect(refused({ publicUrls: { platform: 'http://cp.example.com/' } })).toBe(
      `config key "publicUrls.agents": unset, it follows publicUrls.platform, http://cp.example.com, which is ${tail} set publicUrls.agents (or publicUrls.platform) to an https:// URL, or set http.insecure: true to accept plaintext`,
    );
    // Behind a proxy with no public URLs, the links would name the listener itself, in plaintext.
    expect(refused({ http: { host: '10.0.0.5', trustProxy: ['10.0.0.2'] } })).toBe(
      `config key "publicUrls.agents": unset, it follows the HTTP listener's origin, http://10.0.0.5:8080, which is ${tail} set publicUrls.agents to the https:// URL agents reach (the HTTPS proxy in front), or set http.insecure: true to accept plaintext`,
    );
    // The listener's own refusal comes first when nothing protects it.
    expect(refused({ http: { host: '10.0.0.5' } })).toMatch(/^config key "http\.host": /);
  });

  it('takes https://, loopback http:// and, with http.insecure, any http:// publicUrls.agents', () => {
    const agentsOf = (overrides: Record<string, unknown>) => resolvePublicUrls(loadControlPlaneConfig({ overrides: { ...TOKENS, ...overrides } }), 'http://127.0.0.1:8080').agents;
    expect(agentsOf({ publicUrls: { agents: 'https://10.0.0.5:8443' } })).toBe('https://10.0.0.5:8443');
    expect(agentsOf({ publicUrls: { platform: 'https://cp.example.com', agents: 'http://127.0.0.1:8080' } })).toBe('http://127.0.0.1:8080');
    for (const url of ['http://localhost:8080', 'http://[::1]:8080', 'http://127.0.0.2']) expect(agentsOf({ publicUrls: { platform: url } })).toBe(url);
    expect(agentsOf({ http: { host: '10.0.0.5', trustProxy: ['10.0.0.2'], tls } })).toBe('http://127.0.0.1:8080');
    expect(agentsOf({ http: { insecure: true }, publicUrls: { agents: 'http://10.0.0.5:8080' } })).toBe('http://10.0.0.5:8080');
    expect(agentsOf({ http: { host: '10.0.0.5', insecure: true } })).toBe('http://127.0.0.1:8080');
  });

  it('reads grpc.tls and http.tls from env, and wants certFile and keyFile together', () => {
    const c = loadControlPlaneConfig({
      overrides: TOKENS,
      env: {
        PIXELFLEET_GRPC__TLS__CERT_FILE: 'c.pem',
        PIXELFLEET_GRPC__TLS__KEY_FILE: 'k.pem',
        PIXELFLEET_GRPC__TLS__CLIENT_CA_FILE: 'ca.pem',
        PIXELFLEET_HTTP__TLS__CERT_FILE: 'hc.pem',
        PIXELFLEET_HTTP__TLS__KEY_FILE: 'hk.pem',
      },
    });
    expect(c.grpc.tls).toEqual({ certFile: 'c.pem', keyFile: 'k.pem', clientCaFile: 'ca.pem' });
    expect(c.http.tls).toEqual({ certFile: 'hc.pem', keyFile: 'hk.pem' });
    expect(configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, grpc: { tls: { certFile: 'c.pem' } } } })).message).toContain('"grpc.tls.keyFile"');
    expect(configError(() => loadControlPlaneConfig({ overrides: { ...TOKENS, http: { tls: { certFile: 'c.pem', keyFile: 'k.pem', clientCaFile: 'x' } } } })).message).toContain('"http.tls.clientCaFile"');
  });
});

describe('blobs.s3 (object storage)', () => {
  const s3 = { endpoint: 'https://s3.example.com', bucket: 'pixelfleet-blobs', accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
  const load = (blobs: unknown, env: Record<string, string> = {}) => () => loadControlPlaneConfig({ overrides: { ...TOKENS, blobs }, env });

  it('is absent by default: the local folder', () => {
    expect(loadControlPlaneConfig({ overrides: TOKENS }).blobs).toEqual({});
  });

  it('takes the connection and fills every default', () => {
    expect(load({ s3 })().blobs.s3).toEqual({ ...s3, region: 'us-east-1', forcePathStyle: false, prefix: '', partSizeMiB: 16, uploadConcurrency: 4, presignSeconds: 300, insecure: false });
  });

  it('takes the secret key from the environment (PIXELFLEET_BLOBS__S3__SECRET_ACCESS_KEY) over the file', () => {
    const file = writeConfig({ ...TOKENS, blobs: { s3: { ...s3, secretAccessKey: 'from-the-file' } } });
    const config = loadControlPlaneConfig({ file, env: { PIXELFLEET_BLOBS__S3__SECRET_ACCESS_KEY: 'from-the-env', PIXELFLEET_BLOBS__S3__FORCE_PATH_STYLE: 'true' } });
    expect(config.blobs.s3).toMatchObject({ secretAccessKey: 'from-the-env', forcePathStyle: true });
  });

  it('accepts neither key (the AWS SDK default chain) but not one alone', () => {
    expect(load({ s3: { bucket: 'b-1' } })().blobs.s3).toMatchObject({ bucket: 'b-1', region: 'us-east-1' });
    expect(load({ s3: { ...s3, secretAccessKey: undefined } })).toThrow('config key "blobs.s3.secretAccessKey": set accessKeyId and secretAccessKey together, or neither');
  });

  it('refuses what S3 would refuse, naming the key', () => {
    expect(load({ s3: { ...s3, bucket: 'Pixelfleet_Blobs' } })).toThrow(/"blobs\.s3\.bucket": must be an S3 bucket name/);
    expect(load({ s3: { ...s3, bucket: '192.168.1.10' } })).toThrow(/"blobs\.s3\.bucket": must be an S3 bucket name \(no "\.\.", not an IP address\)/);
    expect(load({ s3: { ...s3, endpoint: 'https://s3.example.com/pixelfleet-blobs' } })).toThrow(/"blobs\.s3\.endpoint": must be an http\(s\) URL of a host, with no path/);
    expect(load({ s3: { ...s3, partSizeMiB: 4 } })).toThrow(/"blobs\.s3\.partSizeMiB"/);
    expect(load({ s3: { ...s3, prefix: 'pixelfleet' } })).toThrow(/"blobs\.s3\.prefix": must be empty or path segments each ending with "\/"/);
    expect(load({ s3: { ...s3, presignSeconds: 7200 } })).toThrow(/"blobs\.s3\.presignSeconds"/);
    expect(load({ s3: { ...s3, sessionToken: 'x' } })).toThrow('unknown config key "blobs.s3.sessionToken"');
    expect(load({ s3: { ...s3, bucket: undefined } })).toThrow(/"blobs\.s3\.bucket"/);
  });

  it('refuses a plain-HTTP endpoint on another machine unless blobs.s3.insecure, and takes one on loopback', () => {
    expect(load({ s3: { ...s3, endpoint: 'http://s3.internal:9000' } })).toThrow(
      'config key "blobs.s3.endpoint": is plain HTTP to another machine: build archives, engine logs and presigned links would cross the network unencrypted; use https://, or set blobs.s3.insecure: true to accept plaintext',
    );
    expect(load({ s3: { ...s3, endpoint: 'http://s3.internal:9000', insecure: true } })().blobs.s3?.endpoint).toBe('http://s3.internal:9000');
    expect(load({ s3: { ...s3, endpoint: 'http://127.0.0.1:9000/' } })().blobs.s3?.endpoint).toBe('http://127.0.0.1:9000');
  });
});
