import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '@pixelfleet/common';
import { AGENT_ENV_PREFIX, appAccountsRefusal, loadAgentConfig } from './config';

/** A join token as an operator makes one (`openssl rand -hex 32`). */
const JOIN_TOKEN = '3f9c2a7d1e8b4c6a0f5d9e2b7c4a1f8e6d3b0a9c5e2f7d4b1a8c6e3f0d9b2a7c';

const REQUIRED_ENV = { PIXELFLEET_AGENT_CONTROL_PLANE: 'cp.example.com:50051', PIXELFLEET_AGENT_REGION: 'europe' };

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-agent-config-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(value: unknown): string {
  const path = join(dir, 'agent.json');
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected an ConfigError, but nothing was thrown');
}

describe('loadAgentConfig required keys and defaults', () => {
  it('applies defaults when only controlPlane and region are given', () => {
    const c = loadAgentConfig({ env: REQUIRED_ENV });
    expect(c.controlPlane).toBe('cp.example.com:50051');
    expect(c.region).toBe('europe');
    expect(c.slots).toBe(1);
    expect(c.hostname).toBe(hostname());
    expect(c.dataDir).toBe(resolve('.data/agent'));
    expect(isAbsolute(c.dataDir)).toBe(true);
    expect(c.ice).toEqual({ hostAddresses: [], iceServers: [] });
    expect(c.launcher).toEqual({});
    expect(c.buildCache).toEqual({ maxBytes: 200 * 1024 ** 3, insecureDownloads: false });
    expect(c.logLevel).toBe('info');
    expect(c.joinToken).toBeUndefined();
    expect(c.publicIp).toBeUndefined();
  });

  it('requires controlPlane, naming it', () => {
    const err = configError(() => loadAgentConfig({ env: { PIXELFLEET_AGENT_REGION: 'europe' } }));
    expect(err.message).toContain('"controlPlane"');
  });

  it('requires region, naming it', () => {
    const err = configError(() => loadAgentConfig({ env: { PIXELFLEET_AGENT_CONTROL_PLANE: 'cp:50051' } }));
    expect(err.message).toContain('"region"');
  });

  it('requires controlPlane in host:port form', () => {
    for (const bad of ['cp.example.com', 'cp.example.com:', ':50051', 'http://cp:50051', 'cp:port']) {
      const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_CONTROL_PLANE: bad } }));
      expect(err.message, bad).toContain('"controlPlane"');
      expect(err.message, bad).toContain('host:port');
    }
    for (const good of ['localhost:50051', '10.0.0.5:443', '[::1]:50051', 'cp-1.example.com:1']) {
      expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_CONTROL_PLANE: good } }).controlPlane).toBe(good);
    }
  });

  it('accepts only the known regions', () => {
    for (const region of ['us-east-1', 'europe', 'asia-pacific']) {
      expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_REGION: region } }).region).toBe(region);
    }
    expect(configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_REGION: 'Europe' } })).message).toContain('"region"');
  });
});

describe('loadAgentConfig sources', () => {
  it('reads the JSON file and lets env win over it', () => {
    const file = writeConfig({ controlPlane: 'file-cp:1000', region: 'us-east-1', slots: 4, hostname: 'from-file' });
    const fromFile = loadAgentConfig({ file });
    expect(fromFile).toMatchObject({ controlPlane: 'file-cp:1000', region: 'us-east-1', slots: 4, hostname: 'from-file' });
    const withEnv = loadAgentConfig({ file, env: { PIXELFLEET_AGENT_SLOTS: '8', PIXELFLEET_AGENT_REGION: 'asia-pacific' } });
    expect(withEnv).toMatchObject({ controlPlane: 'file-cp:1000', region: 'asia-pacific', slots: 8, hostname: 'from-file' });
  });

  it('merges a nested env key into the file section instead of replacing it', () => {
    const file = writeConfig({ controlPlane: 'cp:1', region: 'europe', ice: { hostAddresses: ['10.0.0.2'] } });
    const c = loadAgentConfig({ file, env: { PIXELFLEET_AGENT_ICE__PORT_RANGE: '{"min":40000,"max":40100}' } });
    expect(c.ice.hostAddresses).toEqual(['10.0.0.2']);
    expect(c.ice.portRange).toEqual({ min: 40000, max: 40100 });
  });

  it('takes launcher.command as a JSON argv array from env', () => {
    const argv = ['C:\\Apps\\Launcher.exe', '--flag', 'value with spaces'];
    const c = loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_LAUNCHER__COMMAND: JSON.stringify(argv) } });
    expect(c.launcher.command).toEqual(argv);
  });

  it('rejects launcher.command env text that is not JSON, naming key and variable', () => {
    const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_LAUNCHER__COMMAND: 'Launcher.exe --flag' } }));
    expect(err.message).toContain('"launcher.command"');
    expect(err.message).toContain('PIXELFLEET_AGENT_LAUNCHER__COMMAND');
  });

  it('rejects a launcher.command that is not a non-empty array of strings', () => {
    for (const bad of ['"Launcher.exe"', '[]', '[""]', '[1]']) {
      const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_LAUNCHER__COMMAND: bad } }));
      expect(err.message, bad).toContain('"launcher.command');
    }
  });

  it('reads the other JSON env keys (ice servers, host addresses)', () => {
    const c = loadAgentConfig({
      env: {
        ...REQUIRED_ENV,
        PIXELFLEET_AGENT_ICE__HOST_ADDRESSES: '["192.168.1.10","::1"]',
        PIXELFLEET_AGENT_ICE__ICE_SERVERS: '[{"urls":"stun:stun.example.com:3478"}]',
        PIXELFLEET_AGENT_JOIN_TOKEN: JOIN_TOKEN,
        PIXELFLEET_AGENT_DATA_DIR: join(dir, 'agent-data'),
        PIXELFLEET_AGENT_LOG_LEVEL: 'debug',
      },
    });
    expect(c.ice.hostAddresses).toEqual(['192.168.1.10', '::1']);
    expect(c.ice.iceServers).toEqual([{ urls: 'stun:stun.example.com:3478' }]);
    expect(c.joinToken).toBe(JOIN_TOKEN);
    expect(c.dataDir).toBe(join(dir, 'agent-data'));
    expect(c.logLevel).toBe('debug');
  });

  it('uses the PIXELFLEET_AGENT_ prefix', () => {
    expect(AGENT_ENV_PREFIX).toBe('PIXELFLEET_AGENT_');
    // The control plane's variables are not the agent's.
    expect(() => loadAgentConfig({ env: { PIXELFLEET_CONTROL_PLANE: 'cp:1', PIXELFLEET_REGION: 'europe' } })).toThrow(ConfigError);
  });

  it('reports a missing or malformed file, and a file that is not an object', () => {
    const missing = join(dir, 'missing.json');
    expect(configError(() => loadAgentConfig({ file: missing })).message).toContain(missing);
    const malformed = writeConfig('{ "region": ');
    expect(configError(() => loadAgentConfig({ file: malformed })).message).toContain(malformed);
    const notObject = writeConfig('["cp:1"]');
    expect(configError(() => loadAgentConfig({ file: notObject })).message).toContain('must hold a JSON object');
  });
});

describe('loadAgentConfig validation', () => {
  it('rejects an unknown top-level key, naming it', () => {
    const file = writeConfig({ controlPlane: 'cp:1', region: 'europe', slot: 2 });
    expect(configError(() => loadAgentConfig({ file })).message).toBe('unknown config key "slot"');
  });

  it('rejects an unknown nested key, naming its dotted path', () => {
    const file = writeConfig({ controlPlane: 'cp:1', region: 'europe', ice: { portRange: { min: 40000, max: 40100, step: 1 } } });
    expect(configError(() => loadAgentConfig({ file })).message).toBe('unknown config key "ice.portRange.step"');
    const file2 = writeConfig({ controlPlane: 'cp:1', region: 'europe', launcher: { cmd: ['x'] } });
    expect(configError(() => loadAgentConfig({ file: file2 })).message).toBe('unknown config key "launcher.cmd"');
  });

  it('rejects slots that are not a whole number in 1..64, naming the key', () => {
    for (const bad of ['abc', '', '0', '65', '1.5']) {
      const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_SLOTS: bad } }));
      expect(err.message, bad).toContain('"slots"');
    }
    expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_SLOTS: '64' } }).slots).toBe(64);
  });

  it('takes buildCache.maxBytes from file or env and rejects one that is not a positive whole number', () => {
    expect(loadAgentConfig({ file: writeConfig({ buildCache: { maxBytes: 1024 } }), env: REQUIRED_ENV }).buildCache.maxBytes).toBe(1024);
    expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_BUILD_CACHE__MAX_BYTES: '5000000000' } }).buildCache.maxBytes).toBe(5_000_000_000);
    for (const bad of ['0', '-1', '1.5', 'lots']) {
      const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_BUILD_CACHE__MAX_BYTES: bad } }));
      expect(err.message, bad).toContain('"buildCache.maxBytes"');
    }
    expect(configError(() => loadAgentConfig({ file: writeConfig({ buildCache: { maxGiB: 1 } }), env: REQUIRED_ENV })).message).toBe('unknown config key "buildCache.maxGiB"');
    expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_BUILD_CACHE__INSECURE_DOWNLOADS: 'true' } }).buildCache.insecureDownloads).toBe(true);
    expect(loadAgentConfig({ file: writeConfig({ buildCache: { insecureDownloads: true } }), env: REQUIRED_ENV }).buildCache).toEqual({ maxBytes: 200 * 1024 ** 3, insecureDownloads: true });
  });

  it('takes appAccounts from file or env, wants a uid for every slot, and refuses a host that cannot use them', () => {
    const fromFile = loadAgentConfig({ file: writeConfig({ slots: 2, appAccounts: { firstId: 64000, count: 2 } }), env: REQUIRED_ENV });
    expect(fromFile.appAccounts).toEqual({ firstId: 64000, count: 2 });
    const fromEnv = loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_APP_ACCOUNTS__FIRST_ID: '70000', PIXELFLEET_AGENT_APP_ACCOUNTS__COUNT: '4' } });
    expect(fromEnv.appAccounts).toEqual({ firstId: 70000, count: 4 });
    expect(loadAgentConfig({ env: REQUIRED_ENV }).appAccounts).toBeUndefined();
    expect(configError(() => loadAgentConfig({ file: writeConfig({ slots: 3, appAccounts: { firstId: 64000, count: 2 } }), env: REQUIRED_ENV })).message).toBe(
      'config key "appAccounts.count": must be at least slots (3): every running app needs a uid of its own',
    );
    expect(configError(() => loadAgentConfig({ file: writeConfig({ appAccounts: { firstId: 0, count: 1 } }), env: REQUIRED_ENV })).message).toContain('"appAccounts.firstId"');

    expect(appAccountsRefusal(fromFile, 'linux', 0)).toBeUndefined();
    expect(appAccountsRefusal(loadAgentConfig({ env: REQUIRED_ENV }), 'win32', undefined)).toBeUndefined();
    expect(appAccountsRefusal(fromFile, 'linux', 1000)).toBe('config key "appAccounts": the agent must run as root to start apps under other uids (it runs as uid 1000)');
    expect(appAccountsRefusal(fromFile, 'win32', undefined)).toBe(
      'config key "appAccounts.firstId": Linux uids only; on Windows the accounts are pixelfleet-app-1 … pixelfleet-app-<count> (remove firstId)',
    );
    const windowsForm = loadAgentConfig({ file: writeConfig({ slots: 2, appAccounts: { count: 2 } }), env: REQUIRED_ENV });
    expect(appAccountsRefusal(windowsForm, 'win32', undefined)).toBeUndefined();
    expect(appAccountsRefusal(windowsForm, 'linux', 0)).toBe('config key "appAccounts.firstId": required on Linux (the first of the uids and gids apps run under)');
    expect(appAccountsRefusal(fromFile, 'darwin', 0)).toContain('built for Linux and Windows (this is darwin)');
  });

  it('rejects an ice.portRange whose min exceeds its max', () => {
    const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_ICE__PORT_RANGE: '{"min":50000,"max":49999}' } }));
    expect(err.message).toContain('"ice.portRange"');
    expect(err.message).toContain('min must not exceed max');
    const single = loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_ICE__PORT_RANGE: '{"min":50000,"max":50000}' } });
    expect(single.ice.portRange).toEqual({ min: 50000, max: 50000 });
  });

  it('rejects ice.portRange ports below 1024', () => {
    const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_ICE__PORT_RANGE: '{"min":80,"max":2000}' } }));
    expect(err.message).toContain('"ice.portRange.min"');
  });

  it('requires publicIp to be an IP address', () => {
    for (const bad of ['example.com', '1.2.3', '300.1.1.1', '']) {
      const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_PUBLIC_IP: bad } }));
      expect(err.message, bad).toContain('"publicIp"');
    }
    expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_PUBLIC_IP: '203.0.113.7' } }).publicIp).toBe('203.0.113.7');
    expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_PUBLIC_IP: '2001:db8::1' } }).publicIp).toBe('2001:db8::1');
  });

  it('requires ice.hostAddresses to be IP addresses, naming the element', () => {
    const err = configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_ICE__HOST_ADDRESSES: '["10.0.0.1","host.local"]' } }));
    expect(err.message).toContain('"ice.hostAddresses.1"');
  });

  it('refuses a weak joinToken, naming the key and why: the placeholder, short, or a few characters repeated', () => {
    const refusal = (token: string) => configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_JOIN_TOKEN: token } })).message;
    expect(refusal("CHANGE-ME: the control plane's agentJoinToken")).toContain("\"joinToken\": joinToken is the sample config's placeholder (CHANGE-ME…)");
    expect(refusal('j'.repeat(31) + 'k')).toContain('"joinToken": joinToken is too easy to guess');
    expect(refusal('short')).toContain('"joinToken": joinToken must be at least 32 characters (it has 5); generate one with `openssl rand -hex 32`');
  });

  it('returns a deeply frozen config', () => {
    const c = loadAgentConfig({
      env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_LAUNCHER__COMMAND: '["a.exe"]', PIXELFLEET_AGENT_ICE__HOST_ADDRESSES: '["10.0.0.1"]' },
    });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.ice)).toBe(true);
    expect(Object.isFrozen(c.ice.hostAddresses)).toBe(true);
    expect(Object.isFrozen(c.launcher)).toBe(true);
    expect(Object.isFrozen(c.launcher.command)).toBe(true);
    expect(() => {
      (c.launcher.command as string[]).push('--evil');
    }).toThrow(TypeError);
    expect(() => {
      (c as { slots: number }).slots = 2;
    }).toThrow(TypeError);
  });
});

describe('tls (the control link)', () => {
  it('reads tls.* from the file and from env, the boolean as true/false only', () => {
    const file = writeConfig({ controlPlane: 'cp.example.com:50051', region: 'europe', tls: { caFile: 'ca.pem', serverName: 'cp.internal' } });
    expect(loadAgentConfig({ file }).tls).toEqual({ caFile: 'ca.pem', serverName: 'cp.internal' });
    const c = loadAgentConfig({
      env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_TLS__CERT_FILE: 'w.pem', PIXELFLEET_AGENT_TLS__KEY_FILE: 'w.key', PIXELFLEET_AGENT_TLS__CA_FILE: 'ca.pem' },
    });
    expect(c.tls).toEqual({ caFile: 'ca.pem', certFile: 'w.pem', keyFile: 'w.key' });
    expect(loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_TLS__INSECURE: 'true' } }).tls).toEqual({ insecure: true });
    expect(configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_TLS__INSECURE: 'yes' } })).message).toBe(
      'config key "tls.insecure": environment variable PIXELFLEET_AGENT_TLS__INSECURE must be true or false',
    );
  });

  it('refuses a certificate without its key and insecure with TLS settings, naming the key', () => {
    expect(configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_TLS__CERT_FILE: 'w.pem' } })).message).toBe(
      'config key "tls": certFile and keyFile go together: set both or neither',
    );
    expect(configError(() => loadAgentConfig({ env: { ...REQUIRED_ENV, PIXELFLEET_AGENT_TLS__INSECURE: 'true', PIXELFLEET_AGENT_TLS__CA_FILE: 'ca.pem' } })).message).toBe(
      'config key "tls": insecure: true cannot go with caFile, serverName, certFile or keyFile',
    );
    expect(configError(() => loadAgentConfig({ env: REQUIRED_ENV, file: writeConfig({ controlPlane: 'cp:1', region: 'europe', tls: { ca: 'x' } }) })).message).toBe('unknown config key "tls.ca"');
  });
});
