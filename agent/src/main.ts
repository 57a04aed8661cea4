// Entry point of the `pixelfleet-agent` command. Reads flags and the environment, builds the
// agent and wires signals (a second signal forces exit).
import { AGENT_VERSION, buildAgent } from './agent';
import { chooseLogFormat, ConfigError, logDestination, TlsFileError, command, group, runCommandLine, type CliProgram } from '@pixelfleet/common';
import { appAccountsRefusal, loadAgentConfig } from './config';
import { APP_UMASK } from './launcher/app-accounts';
import { runDoctor } from './doctor/doctor';
import { formatDoctorLines } from './doctor/doctor-line';
import { EnrollRefusedError } from './link/control-link';
import { serviceCommands } from './service/service-cli';
import { warmSourceMaps } from './lib/source-map-warmup';

/** Every `pixelfleet-agent` command (@pixelfleet/common's command-line.ts dispatches them and answers --help and --version for all). */
export const AGENT_CLI: CliProgram = {
  name: 'pixelfleet-agent',
  version: AGENT_VERSION,
  commands: [
    group({ words: [], about: 'the Pixelfleet agent of a streaming server: enrolls with the control plane and runs its sessions' }),
    command({
      words: ['run'],
      synopsis: '[--config <file>]',
      about: 'runs the agent',
      details:
        '  The config file is JSON (docs/configuration.md); without --config, PIXELFLEET_AGENT_CONFIG\n' +
        '  names it; PIXELFLEET_AGENT_* environment variables override single keys.\n' +
        '  Exit codes: 0 after a clean shutdown, 2 usage, 77 enrollment refused, 78 bad configuration.\n',
      options: { config: { type: 'string' } },
      run: (flags) => run(flags.config),
    }),
    command({
      words: ['doctor'],
      synopsis: '[--config <file>]',
      about: 'checks the config, control plane (DNS, reachability, TLS), token, free disk, GPU and UDP ports',
      details:
        '  One line per check with ok, warn or fail. The config as for run (without --config,\n' +
        '  PIXELFLEET_AGENT_CONFIG names it). Exit codes: 0 nothing failed, 1 a check failed, 2 usage.\n',
      options: { config: { type: 'string' } },
      run: async (flags) => {
        const lines = await runDoctor({ file: flags.config ?? process.env.PIXELFLEET_AGENT_CONFIG, env: process.env });
        process.stdout.write(formatDoctorLines(lines));
        return lines.some((l) => l.verdict === 'fail') ? 1 : 0;
      },
    }),
    ...serviceCommands({
      platform: process.platform,
      env: process.env,
      scriptPath: process.argv[1],
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    }),
  ],
};

export async function runAgentCli(argv: readonly string[]): Promise<number> {
  return await runCommandLine(AGENT_CLI, argv, { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) });
}

/** `pixelfleet-agent run`: builds the agent from its config and runs it until a signal stops it. */
async function run(file: string | undefined): Promise<number> {
  let config;
  try {
    config = loadAgentConfig({ file: file ?? process.env.PIXELFLEET_AGENT_CONFIG, env: process.env });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`pixelfleet-agent: refusing to start: ${err.message}\n`);
      return 78; // EX_CONFIG
    }
    throw err;
  }
  const accountsRefusal = appAccountsRefusal(config, process.platform, process.getuid?.());
  if (accountsRefusal !== undefined) {
    process.stderr.write(`pixelfleet-agent: refusing to start: ${accountsRefusal}\n`);
    return 78; // EX_CONFIG
  }
  // Apps inherit it: what one app of a build writes in the build's shared Saved folder the next may rewrite (app-accounts.ts).
  if (config.appAccounts !== undefined && process.platform === 'linux') process.umask(APP_UMASK);
  // Before any stream exists: the first stack read under --enable-source-maps costs ~0.7 s.
  warmSourceMaps();
  // Readable lines at a terminal, JSON lines under a service manager, in files and pipes.
  const logDestinationStream = logDestination(chooseLogFormat(process.stdout.isTTY));
  let agent;
  try {
    agent = buildAgent(config, { env: process.env, ...(logDestinationStream === undefined ? {} : { logDestination: logDestinationStream }) });
  } catch (err) {
    if (err instanceof TlsFileError) {
      process.stderr.write(`pixelfleet-agent: refusing to start: ${err.message}\n`);
      return 78; // EX_CONFIG
    }
    throw err;
  }
  // The agent runs until a signal stops it. Its own timers (the injected clock's) do not hold the
  // process open, and while enrollment or a lost control link waits to retry nothing else may (no
  // stream, no app): this handle does, until the agent has stopped.
  const keepAlive = setInterval(() => undefined, 2 ** 30);
  try {
    try {
      await agent.start();
    } catch (err) {
      if (err instanceof EnrollRefusedError) {
        agent.log.error(err.message);
        await agent.close();
        return 77; // EX_NOPERM
      }
      throw err;
    }
    await new Promise<void>((resolve) => {
      let signals = 0;
      const onSignal = (signal: NodeJS.Signals) => {
        signals += 1;
        if (signals > 1) process.exit(130);
        agent.log.info({ signal }, 'agent shutting down');
        agent.close().then(resolve, () => process.exit(1));
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
  } finally {
    clearInterval(keepAlive);
  }
  return 0;
}
