// `pixelfleet admin …`: operators' commands over gRPC AdminService, as commands of the `pixelfleet`
// command line (@pixelfleet/common's runner answers --help and --version and reads the flags).
// Each entry of ADMIN_COMMANDS becomes one command here, with the connection flags every command
// takes. Human-readable output by default, --json for scripts. Server and token come from
// --server/--token or PIXELFLEET_ADMIN_SERVER/PIXELFLEET_ADMIN_TOKEN. Exit codes: 0 ok, 1 the
// server refused, 2 usage (130 for an interrupted backup).
import { CliUsageError, command, group, runCommandLine, TlsFileError, type CliCommand, type ClientTlsSettings } from '@pixelfleet/common';
import { CONTROL_PLANE_VERSION } from '../lib/version';
import { AdminClient, describeGrpcError } from './admin-client';
import { ADMIN_COMMANDS, ADMIN_GROUPS, type AdminCall, type AdminCommandSpec, type AdminIo } from './admin-commands';

export type { AdminIo } from './admin-commands';

/** The flags of every admin command: how to reach the server, and --json. */
const CONNECTION_OPTIONS = {
  json: { type: 'boolean' },
  server: { type: 'string' },
  token: { type: 'string' },
  ca: { type: 'string' },
  'server-name': { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  tls: { type: 'boolean' },
  insecure: { type: 'boolean' },
} as const;

/** The end of every admin command's --help (and of `pixelfleet admin --help`). */
export const CONNECTION_HELP = `Options of every admin command:
  --json         one JSON document instead of a table
  Server and token: --server host:port and --token T, or PIXELFLEET_ADMIN_SERVER / PIXELFLEET_ADMIN_TOKEN.
  TLS (on unless the server is a loopback address and no TLS option is given):
  --ca <file>            CA (PEM) that signed the server's certificate (default: the system roots)
  --server-name <name>   the name the certificate must carry (default: the --server host)
  --cert <file> --key <file>   client certificate for a server requiring mutual TLS
  --tls / --insecure     force TLS (system roots) / plaintext
  or PIXELFLEET_ADMIN_CA, PIXELFLEET_ADMIN_SERVER_NAME, PIXELFLEET_ADMIN_CERT, PIXELFLEET_ADMIN_KEY.
  Exit codes: 0 ok, 1 the server refused, 2 usage.
`;

/** `pixelfleet admin`, its groups and its commands, for the `pixelfleet` command table. */
export function adminCommands(io: AdminIo): CliCommand[] {
  return [
    group({ words: ['admin'], about: 'operator commands, over gRPC AdminService', details: CONNECTION_HELP }),
    ...Object.entries(ADMIN_GROUPS).map(([word, about]) => group({ words: ['admin', word], about })),
    ...ADMIN_COMMANDS.map((spec) => adminCommand(spec, io)),
  ];
}

/** Runs `pixelfleet admin <argv>`; returns the process exit code. */
export function runAdminCli(argv: readonly string[], io: AdminIo): Promise<number> {
  const program = { name: 'pixelfleet', version: CONTROL_PLANE_VERSION, commands: [group({ words: [], about: 'the Pixelfleet control plane' }), ...adminCommands(io)] };
  return runCommandLine(program, ['admin', ...argv], { out: io.stdout, err: io.stderr });
}

type FlagValue = string | boolean | undefined;

function adminCommand(spec: AdminCommandSpec, io: AdminIo): CliCommand {
  const options = {
    ...CONNECTION_OPTIONS,
    ...Object.fromEntries((spec.strings ?? []).map((name) => [name, { type: 'string' } as const])),
    ...Object.fromEntries((spec.booleans ?? []).map((name) => [name, { type: 'boolean' } as const])),
  };
  return command({
    words: ['admin', ...spec.words],
    // The connection flags are every command's: its details list them.
    synopsis: spec.args,
    about: spec.about,
    details: CONNECTION_HELP,
    options,
    run: (flags) => runConnected(spec, flags as Record<string, FlagValue>, io),
  });
}

/** Connects as the flags and environment say, runs the command, and turns a refusal into exit 1 with one line. */
async function runConnected(spec: AdminCommandSpec, flags: Record<string, FlagValue>, io: AdminIo): Promise<number> {
  const text = (name: string): string | undefined => (typeof flags[name] === 'string' ? flags[name] : undefined);
  const server = text('server') ?? io.env.PIXELFLEET_ADMIN_SERVER;
  const token = text('token') ?? io.env.PIXELFLEET_ADMIN_TOKEN;
  if (!server || !token) {
    io.stderr('error: the server and admin token are required (--server/--token or PIXELFLEET_ADMIN_SERVER/PIXELFLEET_ADMIN_TOKEN)\n');
    return 2;
  }
  if (flags.tls === true && flags.insecure === true) throw new CliUsageError('--tls and --insecure contradict each other');
  const tls: ClientTlsSettings = {
    caFile: text('ca') ?? io.env.PIXELFLEET_ADMIN_CA,
    serverName: text('server-name') ?? io.env.PIXELFLEET_ADMIN_SERVER_NAME,
    certFile: text('cert') ?? io.env.PIXELFLEET_ADMIN_CERT,
    keyFile: text('key') ?? io.env.PIXELFLEET_ADMIN_KEY,
    insecure: flags.insecure === true ? true : flags.tls === true ? false : undefined,
  };
  let client: AdminClient;
  try {
    client = new AdminClient(server, token, tls);
  } catch (err) {
    if (!(err instanceof TlsFileError)) throw err;
    io.stderr(`error: ${err.message}\n`);
    return 2;
  }
  const json = flags.json === true;
  const call: AdminCall = {
    client,
    io,
    json,
    need: (name) => {
      const value = text(name);
      if (value === undefined || value === '') throw new CliUsageError(`--${name} is required for "${spec.words.join(' ')}"`);
      return value;
    },
    value: text,
    isSet: (name) => flags[name] === true,
    print: (document, human) => io.stdout(json ? `${JSON.stringify(document)}\n` : human),
  };
  try {
    return (await spec.run(call)) ?? 0;
  } catch (err) {
    if (err instanceof CliUsageError) throw err;
    io.stderr(`error: ${describeGrpcError(err, client.channel)}\n`);
    return 1;
  } finally {
    client.close();
  }
}
