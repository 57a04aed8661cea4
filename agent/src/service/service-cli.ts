// `pixelfleet-agent service install|uninstall|status`: their entries in the agent's command table,
// then the plan (service-plan.ts), printed under --dry-run (on any platform) and run on Windows only.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve, win32 } from 'node:path';
import { ConfigError, command, CliUsageError, group, type CliCommand } from '@pixelfleet/common';
import { appAccountsRefusal, loadAgentConfig } from '../config';
import { MAX_WINDOWS_APP_ACCOUNTS } from '../launcher/windows-app-accounts';
import { parseServiceAccount, ServiceAccountError } from './service-account';
import { executeServiceSteps, ServiceStepError, type CommandRunner } from './service-executor';
import {
  AGENT_BUNDLE,
  DEFAULT_INSTALL_DIR,
  DEFAULT_STATE_SUBDIR,
  formatSteps,
  NODE_EXE,
  planInstall,
  planStatus,
  planUninstall,
  servicePaths,
  WINSW_EXE,
  type ServiceLayout,
  type ServiceStep,
} from './service-plan';

const INSTALL_DIR_HELP = `  --install-dir  folder of node.exe, agent.cjs and ${WINSW_EXE} (default: the folder of the running agent.cjs)\n`;
const DRY_RUN_HELP = '  --dry-run      print what it would do without doing anything (any platform)\n';
const WINDOWS_ONLY = '  Windows only, from an Administrator prompt (except --dry-run).';

export interface ServiceCliDeps {
  platform: NodeJS.Platform;
  env: Readonly<Record<string, string | undefined>>;
  /** Path of the running script (process.argv[1]); on Windows its folder is the default install dir. */
  scriptPath: string | undefined;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Runs the plan's commands (default: execa). */
  run?: CommandRunner;
}

/** The flags of `service uninstall` and `service status`; install takes these and more. */
const LAYOUT_FLAGS = {
  'install-dir': { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
} as const;

/** `service` and its commands, for the agent's command table (@pixelfleet/common's command-line.ts answers --help and --version). */
export function serviceCommands(deps: ServiceCliDeps): CliCommand[] {
  return [
    group({ words: ['service'], about: 'the agent as a Windows service', details: `${WINDOWS_ONLY}\n` }),
    command({
      words: ['service', 'install'],
      synopsis: '--config <file> [--account <name>] [--install-dir <dir>] [--state-dir <dir>] [--dry-run]',
      about: 'installs the agent as a Windows service and starts it',
      details:
        `  --config       the agent's config; copied to <state-dir>\\agent.json as a new file: read for the service account,\n` +
        `                 full control for Administrators, no access for anyone else\n` +
        `  --account      LocalSystem (default), LocalService, NetworkService, "NT SERVICE\\pixelfleet-agent" or a gMSA "DOMAIN\\name$"\n` +
        INSTALL_DIR_HELP +
        `  --state-dir    folder of the config copy, data and logs (default: %ProgramData%\\${DEFAULT_STATE_SUBDIR}); locked to SYSTEM,\n` +
        `                 Administrators and the service account; refused if it (or anything in it) is owned by another user\n` +
        `  --dry-run      print the WinSW XML and the steps without doing anything (any platform)\n` +
        `${WINDOWS_ONLY} Exit codes: 0 done, 1 a step failed or not Windows, 2 usage, 78 bad config.\n`,
      options: { ...LAYOUT_FLAGS, config: { type: 'string' }, account: { type: 'string' }, 'state-dir': { type: 'string' } },
      run: (flags) => runServiceCommand('install', flags, deps),
    }),
    // The two that take only the layout flags.
    ...(
      [
        ['uninstall', 'stops and removes the service (its state folder stays: config, worker token, data, logs)'],
        ['status', 'prints the state of the service: NonExistent, Stopped or Started'],
      ] as const
    ).map(([sub, about]) =>
      command({
        words: ['service', sub],
        synopsis: '[--install-dir <dir>] [--dry-run]',
        about,
        details: `${INSTALL_DIR_HELP}${DRY_RUN_HELP}${WINDOWS_ONLY}\n`,
        options: LAYOUT_FLAGS,
        run: (flags) => runServiceCommand(sub, flags, deps),
      }),
    ),
  ];
}

interface ServiceFlags {
  config?: string | undefined;
  account?: string | undefined;
  'install-dir'?: string | undefined;
  'state-dir'?: string | undefined;
  'dry-run': boolean;
}

async function runServiceCommand(sub: 'install' | 'uninstall' | 'status', values: ServiceFlags, deps: ServiceCliDeps): Promise<number> {
  if (sub === 'install' && values.config === undefined) throw new CliUsageError('service install needs --config <file>');
  const windows = deps.platform === 'win32';
  const dryRun = values['dry-run'];
  if (!windows && !dryRun) {
    deps.err(`pixelfleet-agent service ${sub}: Windows only (this is ${deps.platform}); --dry-run prints what it would do\n`);
    return 1;
  }
  const programData = deps.env.ProgramData ?? deps.env.PROGRAMDATA ?? 'C:\\ProgramData';
  const layout: ServiceLayout = {
    installDir: windowsPath(values['install-dir'] ?? (windows && deps.scriptPath !== undefined ? dirname(resolve(deps.scriptPath)) : DEFAULT_INSTALL_DIR), windows),
    stateDir: windowsPath(values['state-dir'] ?? win32.join(programData, DEFAULT_STATE_SUBDIR), windows),
  };

  let xml: string | undefined;
  let steps: ServiceStep[];
  if (sub === 'install') {
    const configFile = resolve(values.config!);
    try {
      // Validated as the service will read it: no environment overrides.
      const config = loadAgentConfig({ file: configFile, env: {} });
      const refusal = appAccountsRefusal(config, 'win32', undefined);
      if (refusal !== undefined) throw new ConfigError(refusal);
      const account = parseServiceAccount(values.account);
      const raw = JSON.parse(readFileSync(configFile, 'utf8')) as { dataDir?: string };
      ({ xml, steps } = planInstall({ layout, account, configFile, configDataDir: raw.dataDir, appAccountCount: config.appAccounts?.count ?? 0 }));
    } catch (err) {
      if (err instanceof ConfigError || err instanceof ServiceAccountError) {
        deps.err(`pixelfleet-agent service install: ${err.message}\n`);
        return err instanceof ConfigError ? 78 : 2;
      }
      throw err;
    }
  } else {
    steps = sub === 'uninstall' ? planUninstall(layout, installedAppAccountCount(servicePaths(layout).config)) : planStatus(layout);
  }

  if (dryRun) {
    if (xml !== undefined) deps.out(`# ${servicePaths(layout).winswXml}\n${xml}\n`);
    deps.out(`# Steps of \`service ${sub}\` (run from an Administrator prompt)\n${formatSteps(steps)}\n`);
    return 0;
  }
  const p = servicePaths(layout);
  const missing = [p.winswExe, ...(sub === 'install' ? [p.nodeExe, p.bundle] : [])].filter((f) => !existsSync(f));
  if (missing.length > 0) {
    deps.err(
      `pixelfleet-agent service ${sub}: not found: ${missing.join(', ')}; run ${AGENT_BUNDLE} with the ${NODE_EXE} of the unpacked ` +
        `pixelfleet-agent-win-x64.zip, or pass --install-dir <its folder>\n`,
    );
    return 1;
  }
  try {
    await executeServiceSteps(steps, { run: deps.run, out: (line) => deps.out(`${line}\n`) });
  } catch (err) {
    if (err instanceof ServiceStepError) {
      deps.err(`pixelfleet-agent service ${sub}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  return 0;
}

/** On Windows a relative path resolves against the current folder; elsewhere (dry runs) it is shown as given. */
function windowsPath(path: string, windows: boolean): string {
  return windows ? resolve(path) : path;
}

/**
 * `appAccounts.count` of the config install copied (its accounts are removed with the service);
 * 0 when it cannot be read (a dry run away from Windows, a state folder already deleted).
 */
function installedAppAccountCount(configCopy: string): number {
  try {
    const count = (JSON.parse(readFileSync(configCopy, 'utf8')) as { appAccounts?: { count?: unknown } }).appAccounts?.count;
    return typeof count === 'number' && Number.isInteger(count) && count > 0 ? Math.min(count, MAX_WINDOWS_APP_ACCOUNTS) : 0;
  } catch {
    return 0;
  }
}
