// deploy/pixelfleet.service: the control plane's systemd unit. Parsed and checked for what an
// operator relies on (own user, state directory, hardening, restart policy, the config path, the
// command that exists in this repository), and run through `systemd-analyze verify` when the
// machine has it (warnings count as failures: verify exits 0 on a value it ignores).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli-process';

type Unit = Record<string, Record<string, string[]>>;

/** systemd's unit syntax: [Section], Key=Value, repeated keys accumulate, # and ; start comments. */
function parseUnit(text: string): Unit {
  const unit: Unit = {};
  let section: Record<string, string[]> | undefined;
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) {
      section = unit[header[1]!] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0 || section === undefined) throw new Error(`line ${i + 1} is not Key=Value inside a section: ${raw}`);
    (section[line.slice(0, eq)] ??= []).push(line.slice(eq + 1));
  }
  return unit;
}

const unitPath = join(REPO_ROOT, 'deploy/pixelfleet.service');
const text = readFileSync(unitPath, 'utf8');
const unit = parseUnit(text);
const service = unit.Service ?? {};
const one = (key: string) => {
  const values = service[key] ?? [];
  expect(values, key).toHaveLength(1);
  return values[0]!;
};

describe('deploy/pixelfleet.service', () => {
  it('runs `pixelfleet serve` from the release folder with the config in /etc/pixelfleet', () => {
    expect(Object.keys(unit)).toEqual(['Unit', 'Service', 'Install']);
    const exec = one('ExecStart').split(' ');
    expect(exec[0]).toBe('/usr/bin/node');
    expect(exec.slice(2)).toEqual(['serve', '--config', '/etc/pixelfleet/control-plane.json']);
    // The script the unit runs is this repository's bin, at the same place under the release folder.
    expect(exec[1]!.startsWith(`${one('WorkingDirectory')}/`)).toBe(true);
    expect(existsSync(join(REPO_ROOT, exec[1]!.slice(one('WorkingDirectory').length + 1)))).toBe(true);
    expect(unit.Install?.WantedBy).toEqual(['multi-user.target']);
    expect(unit.Unit?.After).toEqual(['network-online.target']);
  });

  it('has its own user, its state under StateDirectory (the data dir) and nothing else writable', () => {
    expect(one('User')).toBe('pixelfleet');
    expect(one('Group')).toBe('pixelfleet');
    expect(readFileSync(join(REPO_ROOT, 'deploy/pixelfleet.sysusers'), 'utf8')).toMatch(/^u pixelfleet - ".+" \/var\/lib\/pixelfleet \/usr\/sbin\/nologin$/m);
    expect(one('StateDirectory')).toBe('pixelfleet');
    expect(service.Environment).toContain('PIXELFLEET_DATA_DIR=%S/pixelfleet');
    expect(one('ConfigurationDirectory')).toBe('pixelfleet');
    expect(service.ReadWritePaths).toBeUndefined();
  });

  it('is hardened', () => {
    const expected: Record<string, string> = {
      NoNewPrivileges: 'yes',
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      PrivateDevices: 'yes',
      ProtectKernelTunables: 'yes',
      ProtectKernelModules: 'yes',
      ProtectControlGroups: 'yes',
      RestrictNamespaces: 'yes',
      RestrictSUIDSGID: 'yes',
      LockPersonality: 'yes',
      CapabilityBoundingSet: '',
      SystemCallArchitectures: 'native',
      UMask: '0077',
    };
    for (const [key, value] of Object.entries(expected)) expect(one(key), key).toBe(value);
    expect(one('RestrictAddressFamilies').split(' ').sort()).toEqual(['AF_INET', 'AF_INET6', 'AF_UNIX']);
    // V8's JIT needs W+X pages: this one would stop node at its first compiled function.
    expect(service.MemoryDenyWriteExecute).toBeUndefined();
  });

  it('restarts on failure, but not on a usage or configuration error, and stops with SIGTERM in time', () => {
    expect(one('Restart')).toBe('on-failure');
    expect(one('RestartPreventExitStatus').split(' ')).toEqual(['2', '78']);
    expect(one('KillSignal')).toBe('SIGTERM');
    // The ordered shutdown takes at most ~15 s (gRPC's 5 s deadline, webhooks' 10 s).
    expect(Number(one('TimeoutStopSec'))).toBeGreaterThanOrEqual(20);
  });

  const analyze = spawnSync('systemd-analyze', ['--version']).status === 0;
  it.skipIf(!analyze)('passes systemd-analyze verify without a warning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-unit-'));
    try {
      // verify checks that ExecStart's program exists: point it at this machine's node.
      const file = join(dir, 'pixelfleet.service');
      writeFileSync(file, text.replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `));
      const out = spawnSync('systemd-analyze', ['verify', '--man=no', file], { encoding: 'utf8' });
      expect(out.stderr + out.stdout).toBe('');
      expect(out.status).toBe(0);
      // And it does catch a bad value (so an empty output above means something).
      writeFileSync(file, text.replace('ProtectSystem=strict', 'ProtectSystem=bogus').replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `));
      expect(spawnSync('systemd-analyze', ['verify', '--man=no', file], { encoding: 'utf8' }).stderr).toMatch(/pixelfleet\.service:\d+: .*protect system/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
