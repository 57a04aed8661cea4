// `pixelfleet-agent service …` as a real process on Linux: --dry-run prints the WinSW XML and the
// steps; without it the command says it is Windows-only and exits non-zero; bad input is named.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_BIN, startCli } from '../support/cli-process';

const children: ChildProcessWithoutNullStreams[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function configFile(value: unknown): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-svc-cli-'));
  dirs.push(d);
  const path = join(d, 'agent.json');
  writeFileSync(path, JSON.stringify(value));
  return path;
}

async function agent(args: string[]) {
  const p = startCli(AGENT_BIN, args);
  children.push(p.child);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

const CONFIG = { controlPlane: 'cp.example.com:7443', joinToken: 'svc-join-token-0123456789abcdefghij', region: 'europe', dataDir: 'D:\\pixelfleet' };

describe('pixelfleet-agent service', () => {
  it('install --dry-run prints the XML and the steps, and changes nothing', async () => {
    const config = configFile(CONFIG);
    const r = await agent(['service', 'install', '--config', config, '--account', 'NT SERVICE\\pixelfleet-agent', '--dry-run']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('# C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.xml\n<?xml version="1.0" encoding="UTF-8"?>');
    expect(r.stdout).toContain('<arguments>--enable-source-maps "C:\\Program Files\\Pixelfleet\\agent\\agent.cjs" run --config C:\\ProgramData\\Pixelfleet\\agent\\agent.json</arguments>');
    expect(r.stdout).toContain('    <user>pixelfleet-agent</user>');
    expect(r.stdout).toContain('# Steps of `service install` (run from an Administrator prompt)\n1. run sc.exe query pixelfleet-agent\n');
    // The state folder is locked and its owners checked before the config (join token) is copied in.
    expect(r.stdout).toContain('3. run icacls C:\\ProgramData\\Pixelfleet\\agent /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F\n');
    expect(r.stdout).toContain('7. check the owners of C:\\ProgramData\\Pixelfleet\\agent and D:\\pixelfleet (and all inside), and of C:\\ProgramData\\Pixelfleet, C:\\ProgramData, C:\\, D:\\\n');
    expect(r.stdout).toContain('13. run icacls D:\\pixelfleet /inheritance:r /grant:r "NT SERVICE\\pixelfleet-agent:(OI)(CI)M" *S-1-5-32-544:(OI)(CI)F\n');
    expect(r.stdout).toContain(`16. copy ${config} to C:\\ProgramData\\Pixelfleet\\agent\\agent.json (as a new file)\n`);
    expect(r.stdout).toMatch(/18\. run "C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service\.exe" start\n {5}# start the service\n$/);
    // The join token stays in the config file; the plan never prints it.
    expect(r.stdout).not.toContain(CONFIG.joinToken);
  });

  it("install --help says what the plan does with the config copy: read for the account, full control for Administrators, nothing for others", async () => {
    const [help, plan] = await Promise.all([
      agent(['service', 'install', '--help']),
      agent(['service', 'install', '--config', configFile(CONFIG), '--account', 'NT SERVICE\\pixelfleet-agent', '--dry-run']),
    ]);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain(
      'copied to <state-dir>\\agent.json as a new file: read for the service account, full control for Administrators, no access for anyone else',
    );
    // Inheritance removed, then exactly two grants: (R) for the service account, (F) for Administrators.
    expect(plan.stdout).toContain('run icacls C:\\ProgramData\\Pixelfleet\\agent\\agent.json /inheritance:r /grant:r "NT SERVICE\\pixelfleet-agent:(R)" *S-1-5-32-544:(F)\n');
  });

  it('with appAccounts in the config, prepares an account per app slot before the start', async () => {
    const r = await agent(['service', 'install', '--config', configFile({ ...CONFIG, slots: 2, appAccounts: { count: 2 } }), '--dry-run']);
    expect(r.code).toBe(0);
    const appJob = '"C:\\Program Files\\Pixelfleet\\agent\\native\\app-job\\app-job.exe"';
    expect(r.stdout).toMatch(new RegExp(`run ${escapeRegExp(appJob)} --prepare-account pixelfleet-app-1\\n[^\\n]*\\n\\d+\\. run ${escapeRegExp(appJob)} --prepare-account pixelfleet-app-2\\n[^\\n]*\\n\\d+\\. run "[^"]+pixelfleet-agent-service\\.exe" start`));
  });

  it('takes --install-dir and --state-dir', async () => {
    const r = await agent(['service', 'install', '--config', configFile({ ...CONFIG, dataDir: undefined }), '--install-dir', 'E:\\pf', '--state-dir', 'E:\\pf-state', '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('<executable>E:\\pf\\node.exe</executable>');
    expect(r.stdout).toContain('4. create folder E:\\pf-state\\.data\\agent\n');
  });

  it.each([['install'], ['uninstall'], ['status']])('%s without --dry-run refuses on Linux, non-zero', async (sub) => {
    const r = await agent(['service', sub, ...(sub === 'install' ? ['--config', configFile(CONFIG)] : [])]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`pixelfleet-agent service ${sub}: Windows only (this is linux); --dry-run prints what it would do\n`);
  });

  it('uninstall and status --dry-run print their steps', async () => {
    const u = await agent(['service', 'uninstall', '--dry-run']);
    expect(u.code).toBe(0);
    expect(u.stdout).toContain('1. run "C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.exe" stop\n');
    expect(u.stdout).toContain('2. run "C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.exe" uninstall\n');
    // What stays behind, and that it holds the tokens.
    expect(u.stdout).toContain('stays, with the config (join token), worker token, data and logs, readable by the service account and Administrators only: delete it');
    const s = await agent(['service', 'status', '--dry-run']);
    expect(s.code).toBe(0);
    expect(s.stdout).toContain('1. run "C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.exe" status\n');
  });

  it('refuses a bad config (exit 78, naming the key), an account that needs a password, and a missing --config', async () => {
    const bad = await agent(['service', 'install', '--config', configFile({ ...CONFIG, region: 'mars' }), '--dry-run']);
    expect(bad.code).toBe(78);
    expect(bad.stderr).toMatch(/^pixelfleet-agent service install: config key "region": /);
    const account = await agent(['service', 'install', '--config', configFile(CONFIG), '--account', 'CORP\\alice', '--dry-run']);
    expect(account.code).toBe(2);
    expect(account.stderr).toContain('--account "CORP\\alice" is not supported');
    const linuxForm = await agent(['service', 'install', '--config', configFile({ ...CONFIG, appAccounts: { firstId: 64000, count: 2 } }), '--dry-run']);
    expect([linuxForm.code, linuxForm.stderr]).toEqual([78, `pixelfleet-agent service install: config key "appAccounts.firstId": Linux uids only; on Windows the accounts are pixelfleet-app-1 … pixelfleet-app-<count> (remove firstId)\n`]);
    const notSystem = await agent(['service', 'install', '--config', configFile({ ...CONFIG, appAccounts: { count: 1 } }), '--account', 'LocalService', '--dry-run']);
    expect(notSystem.code).toBe(2);
    expect(notSystem.stderr).toContain("which needs LocalSystem's SeTcbPrivilege");
    const none = await agent(['service', 'install', '--dry-run']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^error: service install needs --config <file>/);
    const help = await agent(['service', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: pixelfleet-agent service <command>\n[\s\S]*\n {2}pixelfleet-agent service install --config <file>/);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
