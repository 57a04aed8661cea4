// What a new user types first, as real processes: --help and --version on every command of both
// CLIs (exit 0, to stdout), and `pixelfleet serve` without a config file saying how to give one.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_BIN, cleanEnv, PIXELFLEET_BIN, startCli } from '../support/cli-process';
import { NO_CONFIG_HINT } from '@pixelfleet/control-plane';

const children: ChildProcessWithoutNullStreams[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function run(bin: string, args: string[], env = cleanEnv()) {
  const p = startCli(bin, args, env);
  children.push(p.child);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('--help and --version', () => {
  it('pixelfleet, pixelfleet serve, pixelfleet admin (each command), pixelfleet-agent, pixelfleet-agent run', { timeout: 120_000 }, async () => {
    const cases: Array<[string, string[], RegExp]> = [
      [PIXELFLEET_BIN, [], /pixelfleet serve \[--config <file>\]/],
      [PIXELFLEET_BIN, ['serve'], /Usage: pixelfleet serve \[--config <file>\][\s\S]*69 a listener cannot open/],
      [PIXELFLEET_BIN, ['admin'], /Usage: pixelfleet admin <command>/],
      [PIXELFLEET_BIN, ['admin', 'backup'], /Usage: pixelfleet admin backup --out FILE/],
      [PIXELFLEET_BIN, ['admin', 'events'], /--from-start/],
      [AGENT_BIN, [], /pixelfleet-agent run \[--config <file>\]/],
      [AGENT_BIN, ['run'], /Usage: pixelfleet-agent run \[--config <file>\][\s\S]*77 enrollment refused/],
    ];
    const runs = cases.flatMap(([bin, args, usage]) => [
      run(bin, [...args, '--help']).then((r) => {
        expect(r, `${args.join(' ')} --help`).toMatchObject({ code: 0, stderr: '' });
        expect(r.stdout).toMatch(usage);
      }),
      run(bin, [...args, '--version']).then((r) => {
        expect(r, `${args.join(' ')} --version`).toEqual({ code: 0, stdout: `${bin === AGENT_BIN ? 'pixelfleet-agent' : 'pixelfleet'} 0.1.0\n`, stderr: '' });
      }),
    ]);
    await Promise.all(runs);
  });
});

describe('pixelfleet serve without --config', () => {
  it('says how to give one, then starts on the defaults and the environment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-noconfig-'));
    dirs.push(dir);
    const p = startCli(
      PIXELFLEET_BIN,
      ['serve'],
      cleanEnv({
        PIXELFLEET_ADMIN_TOKEN: 'noconfig-admin-token-01',
        PIXELFLEET_AGENT_JOIN_TOKEN: 'noconfig-join-token-012',
        PIXELFLEET_DATA_DIR: dir,
        PIXELFLEET_HTTP__PORT: '0',
        PIXELFLEET_GRPC__PORT: '0',
        PIXELFLEET_GEOIP__ENABLED: 'false',
      }),
    );
    children.push(p.child);
    await p.output(/pixelfleet control plane/);
    expect(p.stderr()).toBe(`${NO_CONFIG_HINT}\n`);
    expect(NO_CONFIG_HINT).toContain('--config <file>');
    expect(NO_CONFIG_HINT).toContain('PIXELFLEET_CONFIG');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('without a file and without tokens: the hint, then the refusal naming the key (exit 78)', async () => {
    const r = await run(PIXELFLEET_BIN, ['serve']);
    expect(r.code).toBe(78);
    expect(r.stderr.split('\n')[0]).toBe(NO_CONFIG_HINT);
    expect(r.stderr).toContain('config key "adminToken"');
  });
});
