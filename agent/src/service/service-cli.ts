// `pixelfleet-agent service install|uninstall|status`: parses the flags, plans (service-plan.ts),
// prints the plan under --dry-run (on any platform), and runs it on Windows only.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve, win32 } from 'node:path';
import { parseArgs } from 'node:util';
import { AgentConfigError, loadAgentConfig } from '../config';
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

export const SERVICE_USAGE = `Usage:
  pixelfleet-agent service install --config <file> [--account <name>] [--install-dir <dir>] [--state-dir <dir>] [--dry-run]
  pixelfleet-agent service uninstall [--install-dir <dir>] [--dry-run]
  pixelfleet-agent service status [--install-dir <dir>] [--dry-run]

  --config       the agent's config; install copies it to <state-dir>\\agent.json, readable by the service account only
  --account      LocalSystem (default), LocalService, NetworkService, "NT SERVICE\\pixelfleet-agent" or a gMSA "DOMAIN\\name$"
  --install-dir  folder of node.exe, agent.cjs and ${WINSW_EXE} (default: the folder of the running agent.cjs)
  --state-dir    folder of the config copy, data and logs (default: %ProgramData%\\${DEFAULT_STATE_SUBDIR}); locked to SYSTEM,
                 Administrators and the service account; refused if it (or anything in it) is owned by another user
  --dry-run      print the WinSW XML and the steps without doing anything (any platform)
Windows only, from an Administrator prompt (except --dry-run).
`;

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

export async function runServiceCli(argv: readonly string[], deps: ServiceCliDeps): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    (sub === undefined ? deps.err : deps.out)(SERVICE_USAGE);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'install' && sub !== 'uninstall' && sub !== 'status') {
    deps.err(`unknown service command "${sub}"\n\n${SERVICE_USAGE}`);
    return 2;
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: [...rest],
      options: {
        config: { type: 'string' },
        account: { type: 'string' },
        'install-dir': { type: 'string' },
        'state-dir': { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }));
    if (values.help) {
      deps.out(SERVICE_USAGE);
      return 0;
    }
    if (sub !== 'install' && (values.config !== undefined || values.account !== undefined || values['state-dir'] !== undefined)) {
      throw new Error(`service ${sub} takes only --install-dir and --dry-run`);
    }
    if (sub === 'install' && values.config === undefined) throw new Error('service install needs --config <file>');
  } catch (err) {
    deps.err(`error: ${(err as Error).message}\n\n${SERVICE_USAGE}`);
    return 2;
  }
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
      loadAgentConfig({ file: configFile, env: {} });
      const account = parseServiceAccount(values.account);
      const raw = JSON.parse(readFileSync(configFile, 'utf8')) as { dataDir?: string };
      ({ xml, steps } = planInstall({ layout, account, configFile, configDataDir: raw.dataDir }));
    } catch (err) {
      if (err instanceof AgentConfigError || err instanceof ServiceAccountError) {
        deps.err(`pixelfleet-agent service install: ${err.message}\n`);
        return err instanceof AgentConfigError ? 78 : 2;
      }
      throw err;
    }
  } else {
    steps = sub === 'uninstall' ? planUninstall(layout) : planStatus(layout);
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
