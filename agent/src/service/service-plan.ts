// What `pixelfleet-agent service install|uninstall|status` does on Windows, as a list of steps
// (pure, so the plan is tested on Linux and printed by --dry-run); service-executor.ts runs it.
import { win32 } from 'node:path';
import { ownerListingCommand, parentFolders } from './folder-owners';
import { windowsAppAccountNames } from '../launcher/windows-app-accounts';
import { describeAccount, icaclsPrincipal, ServiceAccountError, type ServiceAccount } from './service-account';
import { renderWinswXml, windowsArgument, type WinswServiceSpec } from './winsw-xml';

export const SERVICE_ID = 'pixelfleet-agent';
export const SERVICE_NAME = 'Pixelfleet Agent';
export const SERVICE_DESCRIPTION = 'Pixelfleet agent: launches Unreal builds on this streaming server and relays their streams to viewers';
/** WinSW's exe as shipped in the package; it reads the XML of the same base name beside it. */
export const WINSW_EXE = 'pixelfleet-agent-service.exe';
export const WINSW_XML = 'pixelfleet-agent-service.xml';
/** The agent bundle and the Windows node.exe that runs it, beside WinSW's exe. */
export const AGENT_BUNDLE = 'agent.cjs';
/** The app launcher in the package (package-agent.ts PACKAGED_APP_JOB); it also makes the apps' accounts. */
export const APP_JOB_IN_PACKAGE = 'native\\app-job\\app-job.exe';
export const NODE_EXE = 'node.exe';
/** Where the unpacked package goes unless --install-dir says otherwise. */
export const DEFAULT_INSTALL_DIR = 'C:\\Program Files\\Pixelfleet\\agent';
/** The service's config copy, working directory, data and logs, under %ProgramData%. */
export const DEFAULT_STATE_SUBDIR = 'Pixelfleet\\agent';
/** The config's default dataDir (config.ts), relative to the service's working directory. */
const DEFAULT_DATA_DIR = '.data/agent';
/** `sc.exe query` of a service that does not exist (ERROR_SERVICE_DOES_NOT_EXIST). */
export const SC_SERVICE_DOES_NOT_EXIST = 1060;
/** BUILTIN\Administrators, by SID so it reads the same in every language. */
const ADMINISTRATORS = '*S-1-5-32-544';
/** SYSTEM, by SID. */
const SYSTEM = '*S-1-5-18';

export interface ServiceLayout {
  /** Folder of node.exe, agent.cjs and WinSW's exe (the unpacked package). */
  installDir: string;
  /** Folder of the service's config copy, working directory (so a relative dataDir lands here) and logs. */
  stateDir: string;
}

export type ServiceStep =
  | { kind: 'mkdir'; path: string }
  /** Copies to a new file: one already at `to` (or a link planted there) is removed, never written through. */
  | { kind: 'copy'; from: string; to: string }
  | { kind: 'write'; path: string; contents: string }
  /**
   * Lists the owners of `roots` (and everything in them) and of `parents` (ownerListingCommand, run by `lister`: app-job.exe)
   * and stops the install if any is not trusted (foreignOwned; `trustedAccounts` by name).
   */
  | { kind: 'check-owners'; lister: string; roots: string[]; parents: string[]; trustedAccounts: string[]; why: string }
  | {
      kind: 'run';
      argv: string[];
      /** Exit codes that count as success ('any': the step's outcome does not matter). */
      okExitCodes: readonly number[] | 'any';
      /** Skip the step unless this path exists. */
      ifExists?: string;
      why: string;
    };

export interface InstallInput {
  layout: ServiceLayout;
  account: ServiceAccount;
  /** The operator's config file (validated before planning). */
  configFile: string;
  /** `dataDir` exactly as the config file writes it (undefined: the default); relative resolves against stateDir. */
  configDataDir: string | undefined;
  /** The config's `appAccounts.count`: the local accounts apps run as (windows-app-accounts.ts); 0 or absent: none. */
  appAccountCount?: number;
}

export interface ServicePaths {
  winswExe: string;
  appJobExe: string;
  winswXml: string;
  nodeExe: string;
  bundle: string;
  config: string;
  dataDir: string;
  workerToken: string;
  logDir: string;
}

export function servicePaths(layout: ServiceLayout, configDataDir?: string): ServicePaths {
  const dataDir = win32.resolve(layout.stateDir, configDataDir ?? DEFAULT_DATA_DIR);
  return {
    winswExe: win32.join(layout.installDir, WINSW_EXE),
    appJobExe: win32.join(layout.installDir, APP_JOB_IN_PACKAGE),
    winswXml: win32.join(layout.installDir, WINSW_XML),
    nodeExe: win32.join(layout.installDir, NODE_EXE),
    bundle: win32.join(layout.installDir, AGENT_BUNDLE),
    config: win32.join(layout.stateDir, 'agent.json'),
    dataDir,
    // credentials.ts: the worker identity from Enroll.
    workerToken: win32.join(dataDir, 'worker.json'),
    logDir: win32.join(layout.stateDir, 'logs'),
  };
}

/** The WinSW description of the service for this layout and account. */
export function serviceSpec(layout: ServiceLayout, account: ServiceAccount, configDataDir?: string): WinswServiceSpec {
  const p = servicePaths(layout, configDataDir);
  return {
    id: SERVICE_ID,
    name: SERVICE_NAME,
    description: SERVICE_DESCRIPTION,
    executable: p.nodeExe,
    // Stacks in the service's log name agent/src lines (agent.cjs.map ships beside the bundle).
    arguments: ['--enable-source-maps', p.bundle, 'run', '--config', p.config],
    workingDirectory: layout.stateDir,
    logDirectory: p.logDir,
    account,
    environment: [['NODE_ENV', 'production']],
  };
}

export interface InstallPlan {
  xml: string;
  steps: ServiceStep[];
}

/** Whether `inner` is `outer` or lies under it (Windows paths, case-insensitive). */
function isWithin(outer: string, inner: string): boolean {
  const rel = win32.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !win32.isAbsolute(rel));
}

/**
 * The install, ordered so that no secret is ever written where anyone but the service account,
 * SYSTEM and Administrators can read it:
 * 1. the state folder is made and locked (inheritance removed: SYSTEM and Administrators only)
 *    before anything goes in; a dataDir outside it is locked the same way (Administrators only);
 * 2. the owners of these folders, everything in them and their parents are checked: a folder a
 *    user made (%ProgramData% lets Users create folders) is refused, not taken over. Its owner may
 *    change its access rules whatever icacls sets (owner = WRITE_DAC), and taking ownership would
 *    not clean what that user already put inside (files they own, a junction elsewhere), so the
 *    operator looks at it and removes it (folder-owners.ts says how). The check runs after the
 *    lock, so nothing can be added between the check and the secrets;
 * 3. the service is registered, and only then is its account granted access: a virtual account
 *    (NT SERVICE\…) exists once its service does;
 * 4. the config (it holds the join token) is copied as a new file into the locked folder, then
 *    narrowed to the service account (read) and Administrators; the worker token that the agent
 *    writes into dataDir later takes dataDir's rules (the service account and Administrators);
 * 5. with `appAccounts`, the local account of each app slot is made (or kept) by app-job.exe: batch
 *    logon only, a password nobody learns. They get nothing in the data folder here: the agent
 *    grants each session its own folders while its app runs;
 * 6. the service starts.
 * @throws ServiceAccountError for `appAccounts` under another account than LocalSystem (the apps'
 *    S4U logon needs its SeTcbPrivilege).
 */
export function planInstall(input: InstallInput): InstallPlan {
  const appAccounts = windowsAppAccountNames(input.appAccountCount ?? 0);
  if (appAccounts.length > 0 && input.account.kind !== 'local-system') {
    throw new ServiceAccountError(
      `--account ${describeAccount(input.account)} cannot run apps under their own accounts (config key "appAccounts"): ` +
        'the agent logs them on with S4U, which needs LocalSystem\'s SeTcbPrivilege; install as LocalSystem (the default) or remove the key',
    );
  }
  const { stateDir } = input.layout;
  const p = servicePaths(input.layout, input.configDataDir);
  const xml = renderWinswXml(serviceSpec(input.layout, input.account, input.configDataDir));
  const who = icaclsPrincipal(input.account);
  const account = describeAccount(input.account);
  const dataInside = isWithin(stateDir, p.dataDir);
  const roots = dataInside ? [stateDir] : [stateDir, p.dataDir];
  const parents = [...new Map(roots.flatMap(parentFolders).filter((f) => !roots.some((r) => isWithin(r, f))).map((f) => [f.toLowerCase(), f])).values()];
  const steps: ServiceStep[] = [
    { kind: 'run', argv: ['sc.exe', 'query', SERVICE_ID], okExitCodes: [SC_SERVICE_DOES_NOT_EXIST], why: `the service ${SERVICE_ID} must not exist yet (run \`pixelfleet-agent service uninstall\` first)` },
    { kind: 'mkdir', path: stateDir },
    {
      kind: 'run',
      argv: ['icacls', stateDir, '/inheritance:r', '/grant:r', `${SYSTEM}:(OI)(CI)F`, `${ADMINISTRATORS}:(OI)(CI)F`],
      okExitCodes: [0],
      why: 'lock the state folder first (SYSTEM and Administrators only): %ProgramData% lets every user read and create there',
    },
    { kind: 'mkdir', path: p.dataDir },
    ...(dataInside
      ? []
      : [
          {
            kind: 'run',
            argv: ['icacls', p.dataDir, '/inheritance:r', '/grant:r', `${ADMINISTRATORS}:(OI)(CI)F`],
            okExitCodes: [0],
            why: 'lock the data folder (Administrators only until the service account exists)',
          } satisfies ServiceStep,
        ]),
    { kind: 'mkdir', path: p.logDir },
    {
      kind: 'check-owners',
      lister: p.appJobExe,
      roots,
      parents,
      trustedAccounts: input.account.kind === 'gmsa' ? [describeAccount(input.account)] : [],
      why: 'a folder or file another user owns stays theirs whatever icacls sets: refuse it before any secret goes in',
    },
    { kind: 'write', path: p.winswXml, contents: xml },
    { kind: 'run', argv: [p.winswExe, 'install'], okExitCodes: [0], why: 'register the service with WinSW' },
    // WinSW 2.x applies <onfailure> through the SCM; this makes a non-zero exit count as a failure too.
    { kind: 'run', argv: ['sc.exe', 'failureflag', SERVICE_ID, '1'], okExitCodes: [0], why: 'restart after a non-zero exit as after a crash' },
    // The XML's <delayedAutoStart> is WinSW 2.x's; the WinSW 1.17 that node-windows ships ignores it.
    { kind: 'run', argv: ['sc.exe', 'config', SERVICE_ID, 'start=', 'delayed-auto'], okExitCodes: [0], why: 'start automatically, after the boot-critical services' },
    // From here on the account exists (a virtual account NT SERVICE\… only once its service does).
    ...(input.account.kind === 'local-system'
      ? []
      : [{ kind: 'run', argv: ['icacls', stateDir, '/grant', `${who}:(RX)`], okExitCodes: [0], why: `${account} works in the state folder (this folder only)` } satisfies ServiceStep]),
    // The worker token (worker.json) is written into dataDir at the first enrollment and inherits this.
    { kind: 'run', argv: ['icacls', p.dataDir, '/inheritance:r', '/grant:r', `${who}:(OI)(CI)M`, `${ADMINISTRATORS}:(OI)(CI)F`], okExitCodes: [0], why: `data folder (worker token, builds, sessions) for ${account} and Administrators only` },
    { kind: 'run', argv: ['icacls', p.workerToken, '/reset'], okExitCodes: [0], ifExists: p.workerToken, why: "an existing worker token takes the data folder's access rules" },
    { kind: 'run', argv: ['icacls', p.logDir, '/grant', `${who}:(OI)(CI)M`], okExitCodes: [0], why: 'WinSW and the agent write their logs here' },
    // The config holds the join token: copied only now, into the locked folder, as a new file.
    { kind: 'copy', from: input.configFile, to: p.config },
    { kind: 'run', argv: ['icacls', p.config, '/inheritance:r', '/grant:r', `${who}:(R)`, `${ADMINISTRATORS}:(F)`], okExitCodes: [0], why: `config (join token) readable by ${account}, replaced by Administrators, seen by nobody else` },
    ...appAccounts.map(
      (name, i) =>
        ({
          kind: 'run',
          argv: [p.appJobExe, '--prepare-account', name],
          okExitCodes: [0],
          why: `the account app slot ${i + 1} runs as (kept if it exists): batch logon only, every other logon denied, a password nobody learns`,
        }) satisfies ServiceStep,
    ),
    { kind: 'run', argv: [p.winswExe, 'start'], okExitCodes: [0], why: 'start the service' },
  ];
  return { xml, steps };
}

/** `appAccountCount`: the installed config's `appAccounts.count`, whose accounts go with the service. */
export function planUninstall(layout: ServiceLayout, appAccountCount = 0): ServiceStep[] {
  const p = servicePaths(layout);
  return [
    { kind: 'run', argv: [p.winswExe, 'stop'], okExitCodes: 'any', why: 'stop the service (already stopped is fine); the agent ends its sessions' },
    {
      kind: 'run',
      argv: [p.winswExe, 'uninstall'],
      okExitCodes: [0],
      why:
        `remove the service; its state folder (${layout.stateDir} unless install had --state-dir) stays, with the config ` +
        `(join token), worker token, data and logs, readable by the service account and Administrators only: ` +
        `delete it (rmdir /s /q "<folder>") to remove those secrets too`,
    },
    ...windowsAppAccountNames(appAccountCount).map(
      (name) =>
        ({ kind: 'run', argv: [p.appJobExe, '--remove-account', name], okExitCodes: [0], why: `remove the account ${name} and its logon rights (one already gone is fine)` }) satisfies ServiceStep,
    ),
  ];
}

export function planStatus(layout: ServiceLayout): ServiceStep[] {
  return [{ kind: 'run', argv: [servicePaths(layout).winswExe, 'status'], okExitCodes: [0], why: 'print NonExistent, Stopped or Started' }];
}

/** One numbered line per step, the way --dry-run prints them. */
export function formatSteps(steps: readonly ServiceStep[]): string {
  return steps
    .map((s, i) => {
      const n = `${i + 1}.`;
      switch (s.kind) {
        case 'mkdir':
          return `${n} create folder ${s.path}`;
        case 'copy':
          return `${n} copy ${s.from} to ${s.to} (as a new file)`;
        case 'check-owners':
          return (
            `${n} check the owners of ${s.roots.join(' and ')} (and all inside), and of ${s.parents.join(', ')}\n     # ${s.why}\n` +
            `     run ${ownerListingCommand(s.lister, s.roots, s.parents).map(windowsArgument).join(' ')}`
          );
        case 'write':
          return `${n} write ${s.path} (the XML above)`;
        case 'run': {
          const when = s.ifExists === undefined ? '' : ` (if ${s.ifExists} exists)`;
          const ok = s.okExitCodes === 'any' ? ', any exit code' : s.okExitCodes[0] === 0 && s.okExitCodes.length === 1 ? '' : `, expecting exit ${s.okExitCodes.join(' or ')}`;
          return `${n} run ${s.argv.map(windowsArgument).join(' ')}${when}\n     # ${s.why}${ok}`;
        }
        default: {
          const unreachable: never = s;
          throw new Error(`unknown step ${String(unreachable)}`);
        }
      }
    })
    .join('\n');
}
