// Entry point of the `pixelfleet` command: `serve` runs the control plane, `admin` talks to one.
// The only module besides config.ts that reads process.env. serve's start, its shutdown signals
// and everything it loads live in serve-command.ts, imported only when serve runs.
import { parseArgs } from 'node:util';
import { adminCommandWords, runAdminCli } from './admin-cli/admin-cli';
import { CONTROL_PLANE_VERSION } from './lib/version';

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
  Runs the control plane. The config file is JSON (docs/configuration.md); without
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
    const { values } = parseArgs({ args: [...argv], options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } }, strict: true });
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
  if (file === undefined && process.env.PIXELFLEET_CONFIG === undefined) process.stderr.write(`${NO_CONFIG_HINT}\n`);
  // The control plane's code (fastify, SQLite, gRPC, GeoIP) loads only for serve: --help, --version
  // and every admin command start in a fraction of the time.
  const { runServe } = await import('./serve-command');
  return await runServe(file ?? process.env.PIXELFLEET_CONFIG, process.env, (reload) => (reloadTls = reload));
}
