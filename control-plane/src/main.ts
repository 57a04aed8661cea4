// Entry point of the `pixelfleet` command: `serve` runs the control plane, `admin` talks to one.
// The only module besides config.ts that reads process.env; it wires signals (a second signal
// forces exit).
import { parseArgs } from 'node:util';
import { buildControlPlane } from './app';
import { loadControlPlaneConfig } from './config';
import { ConfigError } from './lib/config-loader';
import { adminCommandWords, runAdminCli } from './admin-cli/admin-cli';
import { ServerTlsError } from './grpc/server-tls';
import { LISTEN_FAILED_EXIT_CODE, ListenError } from './lib/listen-error';
import { setLogger as setGrpcLogger } from '@grpc/grpc-js';
import { format } from 'node:util';
import { CONTROL_PLANE_VERSION } from './lib/version';
import { chooseLogFormat, createLogger, logDestination } from '@pixelfleet/signaling';

/** What `serve` says on stderr when it was given no config file (it still starts, on defaults and the environment). */
export const NO_CONFIG_HINT =
  'pixelfleet: no config file given (pixelfleet serve --config <file>, or PIXELFLEET_CONFIG=<file>); using the defaults and PIXELFLEET_* environment variables';

/** A `pixelfleet` command: its usage line, what it does, and its run (given the arguments after its name). */
interface Command {
  synopsis: string;
  about: string;
  run: (args: readonly string[]) => Promise<number>;
}

/** `pixelfleet`'s commands: the usage lists them and the dispatch looks them up (admin's own are in admin-cli.ts). */
const COMMANDS: ReadonlyMap<string, Command> = new Map<string, Command>([
  ['serve', { synopsis: '[--config <file>]', about: 'run the control plane', run: (args) => serve(args) }],
  [
    'admin',
    {
      synopsis: '<command> …',
      about: 'operator commands (pixelfleet admin --help)',
      run: (args) => runAdminCli(args, { env: process.env, stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) }),
    },
  ],
]);

const USAGE = `Usage: pixelfleet <command>
${[...COMMANDS]
  .map(([name, c]) => `  ${`pixelfleet ${name} ${c.synopsis}`.padEnd(38)} ${c.about}`)
  .join('\n')}
  pixelfleet --help | --version
Every command takes --help (its own usage) and --version.
`;

/** The words of every `pixelfleet` command and group (`[]` is the program, `['admin', 'user', 'create']`): each answers --help and --version. */
export function controlPlaneCommandWords(): string[][] {
  return [[], ...[...COMMANDS.keys()].map((name) => [name]), ...adminCommandWords().map((words) => ['admin', ...words])];
}

const SERVE_USAGE = `Usage: pixelfleet serve [--config <file>]
  Runs the control plane. The config file is JSON (README: Configuration reference); without
  --config, PIXELFLEET_CONFIG names it; without either, the defaults and PIXELFLEET_* environment
  variables apply (adminToken and agentJoinToken are required). Exit codes: 0 after a clean
  shutdown, 2 usage, 69 a listener cannot open, 78 bad configuration.
Options: --config <file>, --help, --version.
`;

export async function runControlPlaneCli(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  const found = command === undefined ? undefined : COMMANDS.get(command);
  if (found !== undefined) return await found.run(rest);
  switch (command) {
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case '--version':
    case '-v':
      process.stdout.write(`pixelfleet ${CONTROL_PLANE_VERSION}\n`);
      return 0;
    default:
      process.stderr.write(command === undefined ? USAGE : `unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

async function serve(argv: readonly string[]): Promise<number> {
  let file: string | undefined;
  try {
    const { values } = parseArgs({ args: [...argv], options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } }, strict: true });
    if (values.help === true || values.version === true) {
      process.stdout.write(values.help === true ? SERVE_USAGE : `pixelfleet ${CONTROL_PLANE_VERSION}\n`);
      return 0;
    }
    file = values.config;
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n\n${SERVE_USAGE}`);
    return 2;
  }
  // SIGHUP re-reads the TLS certificates once the control plane is up. Listened for from here on:
  // without a listener Node's default ends the process, and one arriving during start-up (a
  // certificate renewal's reload) would stop the service for good (systemd counts it a clean stop).
  // Before the start has finished there is nothing to do: the start reads the files itself.
  let reloadTls: (() => void) | undefined = undefined;
  process.on('SIGHUP', () => reloadTls?.());
  const noConfigFile = file === undefined && process.env.PIXELFLEET_CONFIG === undefined;
  if (noConfigFile) process.stderr.write(`${NO_CONFIG_HINT}\n`);
  let config;
  try {
    config = loadControlPlaneConfig({ file: file ?? process.env.PIXELFLEET_CONFIG, env: process.env });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`pixelfleet: refusing to start: ${err.message}\n`);
      return 78; // EX_CONFIG
    }
    throw err;
  }
  // Readable lines at a terminal, JSON lines under systemd, in files and pipes.
  let cp;
  try {
    cp = buildControlPlane(config, { logger: createLogger(config.logLevel, logDestination(chooseLogFormat(process.stdout.isTTY))) });
  } catch (err) {
    if (!(err instanceof ServerTlsError)) throw err;
    process.stderr.write(`pixelfleet: refusing to start: ${err.message}\n`);
    return 78; // EX_CONFIG
  }
  // grpc-js writes its own errors to stderr; they go through our logger instead (a bind failure,
  // which it also reports, is ours to explain in one line below).
  const grpcLog = (...args: unknown[]) => {
    const message = format(...args);
    if (message.includes('No address added out of total')) cp.log.debug({ grpc: message }, 'grpc-js');
    else cp.log.warn({ grpc: message }, 'grpc-js');
  };
  setGrpcLogger({ error: grpcLog, info: grpcLog, debug: grpcLog });
  let started;
  try {
    started = await cp.start();
  } catch (err) {
    if (!(err instanceof ListenError) && !(err instanceof ServerTlsError)) throw err;
    process.stderr.write(`pixelfleet: refusing to start: ${err.message}\n`);
    await cp.close().catch(() => undefined);
    return err instanceof ListenError ? LISTEN_FAILED_EXIT_CODE : 78; // EX_CONFIG for TLS files
  }
  const app = cp;
  // SIGHUP: the certificates are read again (a renewal); a bad file is logged and the current ones stay.
  reloadTls = () => {
    try {
      app.reloadTls();
    } catch (err) {
      app.log.error({ err: (err as Error).message }, 'TLS reload failed; still serving the previous certificates');
    }
  };
  // The handlers are in place before the banner: whoever waits for it may signal at once (a signal
  // with no listener yet would kill the process without its ordered shutdown).
  const stopped = new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals += 1;
      if (signals > 1) {
        app.log.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      app.log.info({ signal }, 'shutting down');
      app.close().then(resolve, (err: unknown) => {
        app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  process.stdout.write(
    `pixelfleet control plane\n  HTTP   ${started.httpOrigin}\n  gRPC   ${started.grpcAddress}\n  API    ${started.publicUrls.api}\n  Share  ${started.publicUrls.share}/<projectId>\n`,
  );
  await stopped;
  return 0;
}
