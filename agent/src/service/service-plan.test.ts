// The service install, uninstall and status plans, and the executor that runs them (real folders
// and files in a temp dir, commands through a recording runner, as on a Linux CI box).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServiceAccount, ServiceAccountError } from './service-account';
import { executeServiceSteps, ServiceStepError } from './service-executor';
import { formatSteps, planInstall, planStatus, planUninstall, SC_SERVICE_DOES_NOT_EXIST, type ServiceStep } from './service-plan';

const layout = { installDir: 'C:\\Program Files\\Pixelfleet\\agent', stateDir: 'C:\\ProgramData\\Pixelfleet\\agent' };
const WINSW = 'C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.exe';

const runs = (steps: readonly ServiceStep[]) => steps.filter((s) => s.kind === 'run').map((s) => s.argv);

describe('planInstall', () => {
  it('copies the config, registers and secures the service, then starts it', () => {
    const { steps, xml } = planInstall({ layout, account: parseServiceAccount('NT SERVICE\\pixelfleet-agent'), configFile: 'C:\\setup\\agent.json', configDataDir: undefined });
    const data = 'C:\\ProgramData\\Pixelfleet\\agent\\.data\\agent';
    expect(steps.filter((s) => s.kind !== 'run')).toEqual([
      { kind: 'mkdir', path: layout.stateDir },
      { kind: 'mkdir', path: data },
      { kind: 'mkdir', path: 'C:\\ProgramData\\Pixelfleet\\agent\\logs' },
      { kind: 'copy', from: 'C:\\setup\\agent.json', to: 'C:\\ProgramData\\Pixelfleet\\agent\\agent.json' },
      { kind: 'write', path: 'C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.xml', contents: xml },
    ]);
    expect(runs(steps)).toEqual([
      ['sc.exe', 'query', 'pixelfleet-agent'],
      [WINSW, 'install'],
      ['sc.exe', 'failureflag', 'pixelfleet-agent', '1'],
      ['sc.exe', 'config', 'pixelfleet-agent', 'start=', 'delayed-auto'],
      ['icacls', 'C:\\ProgramData\\Pixelfleet\\agent\\agent.json', '/inheritance:r', '/grant:r', 'NT SERVICE\\pixelfleet-agent:(R)', '*S-1-5-32-544:(F)'],
      ['icacls', data, '/inheritance:r', '/grant:r', 'NT SERVICE\\pixelfleet-agent:(OI)(CI)M', '*S-1-5-32-544:(OI)(CI)F'],
      ['icacls', `${data}\\worker.json`, '/reset'],
      ['icacls', 'C:\\ProgramData\\Pixelfleet\\agent\\logs', '/grant', 'NT SERVICE\\pixelfleet-agent:(OI)(CI)M'],
      [WINSW, 'start'],
    ]);
    // The first step refuses a service that is already there; only the worker-token reset depends on a file.
    expect(steps[0]).toMatchObject({ okExitCodes: [SC_SERVICE_DOES_NOT_EXIST] });
    expect(steps.filter((s) => s.kind === 'run' && s.ifExists !== undefined)).toEqual([expect.objectContaining({ ifExists: `${data}\\worker.json` })]);
    // The XML is written before WinSW reads it, the ACLs are set after the account exists, start comes last.
    const order = steps.map((s) => (s.kind === 'run' ? s.argv.slice(0, 2).join(' ') : s.kind));
    expect(order.indexOf('write')).toBeLessThan(order.indexOf(`${WINSW} install`));
    expect(order.findIndex((o) => o.startsWith('icacls'))).toBeGreaterThan(order.indexOf(`${WINSW} install`));
    expect(order.at(-1)).toBe(`${WINSW} start`);
  });

  it.each([
    [undefined, '*S-1-5-18'],
    ['LocalService', '*S-1-5-19'],
    ['NetworkService', '*S-1-5-20'],
    ['CORP\\gpu-agents$', 'CORP\\gpu-agents$'],
  ])('grants the config to account %s as %s', (account, principal) => {
    const { steps } = planInstall({ layout, account: parseServiceAccount(account), configFile: 'C:\\a.json', configDataDir: undefined });
    expect(runs(steps).find((a) => a[1]!.endsWith('agent.json'))).toContain(`${principal}:(R)`);
  });

  it('keeps an absolute dataDir and resolves a relative one against the state dir', () => {
    const abs = planInstall({ layout, account: parseServiceAccount(undefined), configFile: 'C:\\a.json', configDataDir: 'D:\\pixelfleet' });
    expect(abs.steps).toContainEqual({ kind: 'mkdir', path: 'D:\\pixelfleet' });
    const rel = planInstall({ layout, account: parseServiceAccount(undefined), configFile: 'C:\\a.json', configDataDir: 'data/agent' });
    expect(rel.steps).toContainEqual({ kind: 'mkdir', path: 'C:\\ProgramData\\Pixelfleet\\agent\\data\\agent' });
  });
});

describe('parseServiceAccount', () => {
  it.each(['CORP\\alice', 'alice', 'NT SERVICE\\', '\\x$', 'a b\\c$'])('refuses %j (it would need a password or is no account)', (flag) => {
    expect(() => parseServiceAccount(flag)).toThrow(ServiceAccountError);
  });
});

describe('planUninstall and planStatus', () => {
  it('stops (whatever its state) then uninstalls; status asks WinSW', () => {
    expect(planUninstall(layout)).toEqual([
      expect.objectContaining({ argv: [WINSW, 'stop'], okExitCodes: 'any' }),
      expect.objectContaining({ argv: [WINSW, 'uninstall'], okExitCodes: [0] }),
    ]);
    expect(planStatus(layout)).toEqual([expect.objectContaining({ argv: [WINSW, 'status'], okExitCodes: [0] })]);
  });

  it('prints one numbered line per step, quoting as Windows splits them', () => {
    expect(formatSteps(planUninstall(layout))).toBe(
      `1. run "${WINSW}" stop\n     # stop the service (already stopped is fine); the agent ends its sessions, any exit code\n` +
        `2. run "${WINSW}" uninstall\n     # remove the service (C:\\ProgramData\\Pixelfleet\\agent, with the config and data, stays)`,
    );
  });
});

describe('executeServiceSteps', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'pf-svc-'));
    dirs.push(d);
    return d;
  };

  it('makes folders, copies and writes files, runs commands in order and skips a step whose file is absent', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'src.json'), '{"a":1}');
    const ran: string[][] = [];
    const lines: string[] = [];
    await executeServiceSteps(
      [
        { kind: 'run', argv: ['sc.exe', 'query', 'x'], okExitCodes: [1060], why: 'absent' },
        { kind: 'mkdir', path: join(dir, 'state', 'logs') },
        { kind: 'copy', from: join(dir, 'src.json'), to: join(dir, 'state', 'agent.json') },
        { kind: 'write', path: join(dir, 'svc.xml'), contents: '<service/>' },
        { kind: 'run', argv: ['icacls', 'nope', '/reset'], okExitCodes: [0], ifExists: join(dir, 'nope'), why: 'reset' },
        { kind: 'run', argv: ['svc.exe', 'start'], okExitCodes: [0], why: 'start' },
      ],
      {
        run: (argv) => {
          ran.push([...argv]);
          return Promise.resolve({ exitCode: argv[0] === 'sc.exe' ? 1060 : 0, output: argv[0] === 'svc.exe' ? 'Started' : '' });
        },
        out: (l) => lines.push(l),
      },
    );
    expect(ran).toEqual([['sc.exe', 'query', 'x'], ['svc.exe', 'start']]);
    expect(readFileSync(join(dir, 'state', 'agent.json'), 'utf8')).toBe('{"a":1}');
    expect(readFileSync(join(dir, 'svc.xml'), 'utf8')).toBe('<service/>');
    expect(existsSync(join(dir, 'state', 'logs'))).toBe(true);
    expect(lines[4]).toMatch(/^5\/6 skipped icacls nope \/reset \(.*nope does not exist\)$/);
    expect(lines[5]).toBe('6/6 ran svc.exe start: Started');
  });

  it('stops at the first failing step and names it with its output', async () => {
    const dir = tempDir();
    const ran: string[][] = [];
    const result = executeServiceSteps(
      [
        { kind: 'run', argv: ['sc.exe', 'query', 'pixelfleet-agent'], okExitCodes: [1060], why: 'the service must not exist yet' },
        { kind: 'mkdir', path: join(dir, 'never') },
      ],
      {
        run: (argv) => {
          ran.push([...argv]);
          return Promise.resolve({ exitCode: 0, output: 'STATE : 4 RUNNING' });
        },
        out: () => undefined,
      },
    );
    await expect(result).rejects.toThrow(ServiceStepError);
    await expect(result).rejects.toThrow('step 1/2 failed: sc.exe query pixelfleet-agent exited with 0 (the service must not exist yet):\nSTATE : 4 RUNNING');
    expect(existsSync(join(dir, 'never'))).toBe(false);
  });

  it('reports a file step that fails as that step', async () => {
    const dir = tempDir();
    await expect(executeServiceSteps([{ kind: 'copy', from: join(dir, 'missing.json'), to: join(dir, 'b.json') }], { out: () => undefined })).rejects.toThrow(
      /^step 1\/1 failed: ENOENT/,
    );
  });

  it('runs real commands through execa by default', async () => {
    const lines: string[] = [];
    await executeServiceSteps([{ kind: 'run', argv: [process.execPath, '-e', 'process.stdout.write("hello"); process.exit(3)'], okExitCodes: [3], why: 'x' }], {
      out: (l) => lines.push(l),
    });
    expect(lines[0]).toMatch(/: hello$/);
  });
});
