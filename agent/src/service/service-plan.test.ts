// The service install, uninstall and status plans, and the executor that runs them (real folders
// and files in a temp dir, commands through a recording runner, as on a Linux CI box).
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { icaclsPrincipal, parseServiceAccount, ServiceAccountError } from './service-account';
import { ownerListingCommand } from './folder-owners';
import { executeServiceSteps, ServiceStepError } from './service-executor';
import { formatSteps, planInstall, planStatus, planUninstall, SC_SERVICE_DOES_NOT_EXIST, type ServiceStep } from './service-plan';

const layout = { installDir: 'C:\\Program Files\\Pixelfleet\\agent', stateDir: 'C:\\ProgramData\\Pixelfleet\\agent' };
const WINSW = 'C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.exe';

const runs = (steps: readonly ServiceStep[]) => steps.filter((s) => s.kind === 'run').map((s) => s.argv);

describe('planInstall', () => {
  const state = 'C:\\ProgramData\\Pixelfleet\\agent';
  const data = `${state}\\.data\\agent`;
  const LOCK = ['/inheritance:r', '/grant:r', '*S-1-5-18:(OI)(CI)F', '*S-1-5-32-544:(OI)(CI)F'];

  it('locks the state folder, checks its owners, registers the service, grants its account, then copies the config and starts', () => {
    const { steps, xml } = planInstall({ layout, account: parseServiceAccount('NT SERVICE\\pixelfleet-agent'), configFile: 'C:\\setup\\agent.json', configDataDir: undefined });
    const who = 'NT SERVICE\\pixelfleet-agent';
    expect(steps.map((s) => (s.kind === 'run' ? s.argv : s))).toEqual([
      ['sc.exe', 'query', 'pixelfleet-agent'],
      { kind: 'mkdir', path: state },
      ['icacls', state, ...LOCK],
      { kind: 'mkdir', path: data },
      { kind: 'mkdir', path: `${state}\\logs` },
      { kind: 'check-owners', lister: 'C:\\Program Files\\Pixelfleet\\agent\\native\\app-job\\app-job.exe', roots: [state], parents: ['C:\\ProgramData\\Pixelfleet', 'C:\\ProgramData', 'C:\\'], trustedAccounts: [], why: expect.any(String) as string },
      { kind: 'write', path: 'C:\\Program Files\\Pixelfleet\\agent\\pixelfleet-agent-service.xml', contents: xml },
      [WINSW, 'install'],
      ['sc.exe', 'failureflag', 'pixelfleet-agent', '1'],
      ['sc.exe', 'config', 'pixelfleet-agent', 'start=', 'delayed-auto'],
      ['icacls', state, '/grant', `${who}:(RX)`],
      ['icacls', data, '/inheritance:r', '/grant:r', `${who}:(OI)(CI)M`, '*S-1-5-32-544:(OI)(CI)F'],
      ['icacls', `${data}\\worker.json`, '/reset'],
      ['icacls', `${state}\\logs`, '/grant', `${who}:(OI)(CI)M`],
      { kind: 'copy', from: 'C:\\setup\\agent.json', to: `${state}\\agent.json` },
      ['icacls', `${state}\\agent.json`, '/inheritance:r', '/grant:r', `${who}:(R)`, '*S-1-5-32-544:(F)'],
      [WINSW, 'start'],
    ]);
    // The first step refuses a service that is already there; only the worker-token reset depends on a file.
    expect(steps[0]).toMatchObject({ okExitCodes: [SC_SERVICE_DOES_NOT_EXIST] });
    expect(steps.filter((s) => s.kind === 'run' && s.ifExists !== undefined)).toEqual([expect.objectContaining({ ifExists: `${data}\\worker.json` })]);
  });

  it('with appAccounts, prepares the account of each app slot with app-job.exe after the secrets are in place and before the start', () => {
    const { steps } = planInstall({ layout, account: parseServiceAccount(undefined), configFile: 'C:\\a.json', configDataDir: undefined, appAccountCount: 2 });
    const appJob = 'C:\\Program Files\\Pixelfleet\\agent\\native\\app-job\\app-job.exe';
    expect(runs(steps).slice(-3)).toEqual([
      [appJob, '--prepare-account', 'pixelfleet-app-1'],
      [appJob, '--prepare-account', 'pixelfleet-app-2'],
      [WINSW, 'start'],
    ]);
    // The data folder stays the service's and Administrators': the accounts get only what each session is granted.
    expect(runs(steps).filter((argv) => argv[0] === 'icacls' && argv.some((a) => a.includes('pixelfleet-app')))).toEqual([]);
    expect(formatSteps(steps)).toContain(`run "${appJob}" --prepare-account pixelfleet-app-1\n     # the account app slot 1 runs as (kept if it exists): batch logon only`);
  });

  it.each(['LocalService', 'NetworkService', 'NT SERVICE\\pixelfleet-agent', 'CORP\\gpu-agents$'])('refuses appAccounts under %s (S4U needs LocalSystem)', (account) => {
    expect(() => planInstall({ layout, account: parseServiceAccount(account), configFile: 'C:\\a.json', configDataDir: undefined, appAccountCount: 1 })).toThrow(
      expect.objectContaining({ name: 'ServiceAccountError', message: expect.stringContaining('needs LocalSystem') as string }) as Error,
    );
    expect(() => planInstall({ layout, account: parseServiceAccount(account), configFile: 'C:\\a.json', configDataDir: undefined, appAccountCount: 0 })).not.toThrow();
  });

  const cases = [undefined, 'LocalService', 'NetworkService', 'NT SERVICE\\pixelfleet-agent', 'CORP\\gpu-agents$'].flatMap((account) =>
    [undefined, 'D:\\pixelfleet'].map((dataDir) => ({ account, dataDir })),
  );

  it.each(cases)('no secret is written before its folders are locked and their owners checked ($account, dataDir $dataDir)', ({ account, dataDir }) => {
    const acct = parseServiceAccount(account);
    const { steps } = planInstall({ layout, account: acct, configFile: 'C:\\a.json', configDataDir: dataDir });
    const dataFolder = dataDir ?? data;
    const at = (pred: (s: ServiceStep) => boolean) => {
      const i = steps.findIndex(pred);
      expect(i).toBeGreaterThanOrEqual(0);
      return i;
    };
    const isRun = (s: ServiceStep, ...argv: string[]) => s.kind === 'run' && argv.every((a, k) => s.argv[k] === a);
    const check = at((s) => s.kind === 'check-owners');
    const copy = at((s) => s.kind === 'copy');
    const start = at((s) => isRun(s, WINSW, 'start'));
    const registered = at((s) => isRun(s, WINSW, 'install'));
    // Before the owner check only folders are made and locked to SYSTEM and Administrators: nothing written, nobody else granted.
    for (const s of steps.slice(0, check)) {
      if (s.kind === 'run' && s.argv[0] === 'icacls') {
        expect(s.argv.slice(2, 4)).toEqual(['/inheritance:r', '/grant:r']);
        expect(s.argv.slice(4).every((g) => g.startsWith('*S-1-5-18:') || g.startsWith('*S-1-5-32-544:'))).toBe(true);
      } else expect(s.kind === 'mkdir' || isRun(s, 'sc.exe', 'query')).toBe(true);
    }
    // The state folder is locked before anything is made inside it; a data folder elsewhere too.
    expect(at((s) => isRun(s, 'icacls', layout.stateDir, '/inheritance:r'))).toBe(2);
    expect(at((s) => isRun(s, 'icacls', dataFolder, '/inheritance:r'))).toBeLessThan(dataDir === undefined ? Infinity : check);
    const checked = steps[check] as Extract<ServiceStep, { kind: 'check-owners' }>;
    expect(checked.roots).toEqual(dataDir === undefined ? [layout.stateDir] : [layout.stateDir, dataDir]);
    // The account is granted once it exists (after WinSW's install), before the config copy; the config is narrowed after it.
    const who = icaclsPrincipal(acct);
    // (For LocalSystem the locks above already name SYSTEM, the account itself.)
    const grants = steps.flatMap((s, i) => (i > check && s.kind === 'run' && s.argv[0] === 'icacls' && s.argv.some((a) => a.startsWith(`${who}:`)) ? [i] : []));
    expect(grants.length).toBe(acct.kind === 'local-system' ? 3 : 4);
    for (const i of grants.filter((i) => i !== copy + 1)) {
      expect(i).toBeGreaterThan(registered);
      expect(i).toBeLessThan(copy);
    }
    expect(steps[copy + 1]).toMatchObject({ kind: 'run', argv: ['icacls', `${layout.stateDir}\\agent.json`, '/inheritance:r', '/grant:r', `${who}:(R)`, '*S-1-5-32-544:(F)'] });
    expect(check).toBeLessThan(copy);
    expect(copy).toBeLessThan(start);
    expect(start).toBe(steps.length - 1);
  });

  it('trusts a gMSA by name in the owner check (its files from an earlier install)', () => {
    const { steps } = planInstall({ layout, account: parseServiceAccount('CORP\\gpu-agents$'), configFile: 'C:\\a.json', configDataDir: undefined });
    expect(steps.find((s) => s.kind === 'check-owners')).toMatchObject({ trustedAccounts: ['CORP\\gpu-agents$'] });
  });

  it('checks and locks a dataDir outside the state folder, with its parents', () => {
    const { steps } = planInstall({ layout, account: parseServiceAccount(undefined), configFile: 'C:\\a.json', configDataDir: 'D:\\pf\\data' });
    expect(steps.find((s) => s.kind === 'check-owners')).toMatchObject({
      roots: [layout.stateDir, 'D:\\pf\\data'],
      parents: ['C:\\ProgramData\\Pixelfleet', 'C:\\ProgramData', 'C:\\', 'D:\\pf', 'D:\\'],
    });
    expect(runs(steps)).toContainEqual(['icacls', 'D:\\pf\\data', '/inheritance:r', '/grant:r', '*S-1-5-32-544:(OI)(CI)F']);
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

  it('prints the owner check with the command it runs', () => {
    const { steps } = planInstall({ layout, account: parseServiceAccount(undefined), configFile: 'C:\\a.json', configDataDir: undefined });
    const text = formatSteps(steps);
    expect(text).toContain(`6. check the owners of ${state} (and all inside), and of C:\\ProgramData\\Pixelfleet, C:\\ProgramData, C:\\\n     # a folder or file another user owns`);
    expect(text).toContain(`\n     run "C:\\Program Files\\Pixelfleet\\agent\\native\\app-job\\app-job.exe" --owners --parent C:\\ProgramData\\Pixelfleet --parent C:\\ProgramData --parent C:\\ --root ${state}\n`);
    expect(text).toContain(`14. copy C:\\a.json to ${state}\\agent.json (as a new file)\n`);
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

  it("removes the installed config's app accounts after the service", () => {
    const appJob = 'C:\\Program Files\\Pixelfleet\\agent\\native\\app-job\\app-job.exe';
    expect(runs(planUninstall(layout, 2))).toEqual([[WINSW, 'stop'], [WINSW, 'uninstall'], [appJob, '--remove-account', 'pixelfleet-app-1'], [appJob, '--remove-account', 'pixelfleet-app-2']]);
  });

  it('prints one numbered line per step, quoting as Windows splits them', () => {
    expect(formatSteps(planUninstall(layout))).toBe(
      `1. run "${WINSW}" stop\n     # stop the service (already stopped is fine); the agent ends its sessions, any exit code\n` +
        `2. run "${WINSW}" uninstall\n     # remove the service; its state folder (C:\\ProgramData\\Pixelfleet\\agent unless install had --state-dir) stays, ` +
          'with the config (join token), worker token, data and logs, readable by the service account and Administrators only: ' +
          'delete it (rmdir /s /q "<folder>") to remove those secrets too',
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

  const checkOwners: ServiceStep = { kind: 'check-owners', lister: 'C:\\pf\\app-job.exe', roots: ['C:\\state'], parents: ['C:\\'], trustedAccounts: ['CORP\\gpu$'], why: 'owners' };
  const ownerRunner = (output: string, exitCode = 0) => {
    const ran: string[][] = [];
    return {
      ran,
      run: (argv: readonly string[]) => {
        ran.push([...argv]);
        return Promise.resolve({ exitCode, output });
      },
    };
  };
  const OK_LISTING = 'installer\tS-1-5-21-7-7-7-500\r\nS-1-5-18\tNT AUTHORITY\\SYSTEM\tC:\\\r\nS-1-5-21-7-7-7-500\tPC\\admin\tC:\\state\r\nS-1-5-21-1-2-3-1107\tCORP\\gpu$\tC:\\state\\w.json\r\n';

  it('checks the owners with the listing command and goes on when all are trusted', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'src.json'), '{"joinToken":"x"}');
    const r = ownerRunner(OK_LISTING);
    const lines: string[] = [];
    await executeServiceSteps([checkOwners, { kind: 'copy', from: join(dir, 'src.json'), to: join(dir, 'agent.json') }], { run: r.run, out: (l) => lines.push(l) });
    expect(r.ran).toEqual([ownerListingCommand('C:\\pf\\app-job.exe', ['C:\\state'], ['C:\\'])]);
    expect(lines[0]).toBe('1/2 checked the owners of 3 items: Administrators, SYSTEM, service accounts or the installer');
    expect(existsSync(join(dir, 'agent.json'))).toBe(true);
  });

  it('stops the install at a folder another user owns, saying why and how to fix it, before the secret is copied', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'src.json'), '{"joinToken":"x"}');
    const r = ownerRunner(`${OK_LISTING}S-1-5-21-7-7-7-1002\tPC\\bob\tC:\\state\\.data\r\n`);
    const result = executeServiceSteps([checkOwners, { kind: 'copy', from: join(dir, 'src.json'), to: join(dir, 'agent.json') }], { run: r.run, out: () => undefined });
    await expect(result).rejects.toThrow(ServiceStepError);
    await expect(result).rejects.toThrow(
      'step 1/2 failed: refusing to install: this item is owned by an account that is not Administrators, SYSTEM or a service account:\n  C:\\state\\.data (owner PC\\bob)\n',
    );
    await expect(result).rejects.toThrow('takeown /f "C:\\state\\.data" /r /a /d y');
    expect(existsSync(join(dir, 'agent.json'))).toBe(false);
  });

  it.each([
    ['the listing fails', ownerRunner('Get-Acl : Attempted to perform an unauthorized operation.', 1), /^step 1\/1 failed: listing the owners of C:\\state exited with 1:\nGet-Acl : Attempted/],
    ['the listing is cut short', ownerRunner('S-1-5-18\tNT AUTHORITY\\SYSTEM\tC:\\\r\n'), /^step 1\/1 failed: the owner listing did not run to its end/],
    ['the listing has a line it cannot read', ownerRunner(`${OK_LISTING}garbage\r\n`), /^step 1\/1 failed: unexpected line in the owner listing: "garbage"/],
  ])('stops when %s', async (_why, r, message) => {
    await expect(executeServiceSteps([checkOwners], { run: r.run, out: () => undefined })).rejects.toThrow(message);
  });

  it('copies to a new private file, never through a file or link already there', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'src.json'), '{"joinToken":"secret"}');
    writeFileSync(join(dir, 'elsewhere.txt'), 'planted');
    symlinkSync(join(dir, 'elsewhere.txt'), join(dir, 'agent.json'));
    await executeServiceSteps([{ kind: 'copy', from: join(dir, 'src.json'), to: join(dir, 'agent.json') }], { out: () => undefined });
    expect(readFileSync(join(dir, 'elsewhere.txt'), 'utf8')).toBe('planted');
    expect(lstatSync(join(dir, 'agent.json')).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(dir, 'agent.json'), 'utf8')).toBe('{"joinToken":"secret"}');
    expect(statSync(join(dir, 'agent.json')).mode & 0o777).toBe(0o600);
  });

  it('runs real commands through execa by default', async () => {
    const lines: string[] = [];
    await executeServiceSteps([{ kind: 'run', argv: [process.execPath, '-e', 'process.stdout.write("hello"); process.exit(3)'], okExitCodes: [3], why: 'x' }], {
      out: (l) => lines.push(l),
    });
    expect(lines[0]).toMatch(/: hello$/);
  });
});
