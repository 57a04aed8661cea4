// Entry point of the `pixelfleet` command: `serve` runs the control plane, `admin` talks to one.
// The only module besides config.ts that reads process.env. serve's start, its shutdown signals
// and everything it loads live in serve-command.ts, imported only when serve runs.
import { command, group, runCommandLine, type CliProgram } from '@pixelfleet/common';
import { adminCommands, type AdminIo } from './admin-cli/admin-cli';
import { CONTROL_PLANE_VERSION } from './lib/version';

/** What `serve` says on stderr when it was given no config file (it still starts, on defaults and the environment). */
export const NO_CONFIG_HINT =
  'pixelfleet: no config file given (pixelfleet serve --config <file>, or PIXELFLEET_CONFIG=<file>); using the defaults and PIXELFLEET_* environment variables';

/** The `pixelfleet` command line: `serve`, and `admin` with its commands (admin-cli.ts). */
export function controlPlaneCli(io: AdminIo): CliProgram {
  return {
    name: 'pixelfleet',
    version: CONTROL_PLANE_VERSION,
    commands: [
      group({ words: [], about: 'the Pixelfleet control plane: serve runs it, admin talks to one' }),
      command({
        words: ['serve'],
        synopsis: '[--config <file>]',
        about: 'runs the control plane',
        details:
          '  The config file is JSON (docs/configuration.md); without --config, PIXELFLEET_CONFIG names it;\n' +
          '  without either, the defaults and PIXELFLEET_* environment variables apply (adminToken and\n' +
          '  agentJoinToken are required).\n' +
          '  Exit codes: 0 after a clean shutdown, 2 usage, 69 a listener cannot open, 78 bad configuration.\n',
        options: { config: { type: 'string' } },
        run: (flags) => serve(flags.config),
      }),
      ...adminCommands(io),
    ],
  };
}

/** The words of every `pixelfleet` command and group (`[]` is the program, `['admin', 'user', 'create']`): each answers --help and --version. */
export function controlPlaneCommandWords(): string[][] {
  return controlPlaneCli({ env: {}, stdout: () => undefined, stderr: () => undefined }).commands.map((c) => [...c.words]);
}

export function runControlPlaneCli(argv: readonly string[]): Promise<number> {
  const io: AdminIo = { env: process.env, stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };
  return runCommandLine(controlPlaneCli(io), argv, { out: io.stdout, err: io.stderr });
}

async function serve(file: string | undefined): Promise<number> {
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
