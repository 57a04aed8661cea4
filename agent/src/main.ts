// Entry point of the `pixelfleet-agent` command. Reads flags and the environment, builds the
// agent and wires signals (a second signal forces exit).
import { parseArgs } from 'node:util';
import { AGENT_VERSION, buildAgent } from './agent';
import { chooseLogFormat, logDestination } from '@pixelfleet/signaling';
import { AgentConfigError, loadAgentConfig } from './config';
import { runDoctor } from './doctor/doctor';
import { formatDoctorLines } from './doctor/doctor-line';
import { EnrollRefusedError } from './link/control-link';
import { runServiceCli } from './service/service-cli';
import { TlsFileError } from '@pixelfleet/proto';

const USAGE = `Usage:
  pixelfleet-agent run [--config <file>]    run the agent
  pixelfleet-agent doctor [--config <file>]   check the config, control plane, token, disk, GPU and UDP ports
  pixelfleet-agent service install|uninstall|status [...]   the agent as a Windows service (service --help)
  pixelfleet-agent --help | --version
`;

const RUN_USAGE = `Usage: pixelfleet-agent run [--config <file>]
  Runs the agent. The config file is JSON (README: Configuration reference); without --config,
  PIXELFLEET_AGENT_CONFIG names it; PIXELFLEET_AGENT_* environment variables override single keys.
  Exit codes: 0 after a clean shutdown, 2 usage, 77 enrollment refused, 78 bad configuration.
Options: --config <file>, --help, --version.
`;

export async function runAgentCli(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === 'service') {
    return await runServiceCli(rest, {
      platform: process.platform,
      env: process.env,
      scriptPath: process.argv[1],
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    });
  }
  if (command === 'doctor') {
    let doctorFile: string | undefined;
    try {
      const { values } = parseArgs({ args: [...rest], options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true });
      if (values.help === true) {
        process.stdout.write(USAGE);
        return 0;
      }
      doctorFile = values.config;
    } catch (err) {
      process.stderr.write(`error: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    const lines = await runDoctor({ file: doctorFile ?? process.env.PIXELFLEET_AGENT_CONFIG, env: process.env });
    process.stdout.write(formatDoctorLines(lines));
    return lines.some((l) => l.verdict === 'fail') ? 1 : 0;
  }
  if (command === '--version' || command === '-v') {
    process.stdout.write(`pixelfleet-agent ${AGENT_VERSION}\n`);
    return 0;
  }
  if (command !== 'run') {
    process.stderr.write(command === undefined ? USAGE : `unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  let file: string | undefined;
  try {
    const { values } = parseArgs({ args: [...rest], options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } }, strict: true });
    if (values.help === true || values.version === true) {
      process.stdout.write(values.help === true ? RUN_USAGE : `pixelfleet-agent ${AGENT_VERSION}\n`);
      return 0;
    }
    file = values.config;
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n\n${RUN_USAGE}`);
    return 2;
  }
  let config;
  try {
    config = loadAgentConfig({ file: file ?? process.env.PIXELFLEET_AGENT_CONFIG, env: process.env });
  } catch (err) {
    if (err instanceof AgentConfigError) {
      process.stderr.write(`pixelfleet-agent: refusing to start: ${err.message}\n`);
      return 78; // EX_CONFIG
    }
    throw err;
  }
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
