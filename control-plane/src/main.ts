// Entry point of the `pixelfleet` command: `serve` runs the control plane, `admin` talks to one.
// The only module besides config.ts that reads process.env; it wires signals (a second signal
// forces exit).
import { parseArgs } from 'node:util';
import { buildControlPlane } from './app';
import { loadControlPlaneConfig } from './config';
import { ConfigError } from './lib/config-loader';
import { runAdminCli } from './admin-cli/admin-cli';
import { ServerTlsError } from './grpc/server-tls';

const USAGE = `Usage:
  pixelfleet serve [--config <file>]     run the control plane
  pixelfleet admin <command> …           operator commands (pixelfleet admin --help)
`;

export async function runControlPlaneCli(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'admin':
      return runAdminCli(rest, {
        env: process.env,
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
      });
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(command === undefined ? USAGE : `unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

async function serve(argv: readonly string[]): Promise<number> {
  let file: string | undefined;
  try {
    file = parseArgs({ args: [...argv], options: { config: { type: 'string' } }, strict: true }).values.config;
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
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
  let cp;
  let started;
  try {
    cp = buildControlPlane(config);
    started = await cp.start();
  } catch (err) {
    if (err instanceof ServerTlsError) {
      process.stderr.write(`pixelfleet: refusing to start: ${err.message}\n`);
      await cp?.close();
      return 78; // EX_CONFIG
    }
    throw err;
  }
  const app = cp;
  // SIGHUP: the certificates are read again (a renewal); a bad file is logged and the current ones stay.
  process.on('SIGHUP', () => {
    try {
      app.reloadTls();
    } catch (err) {
      app.log.error({ err: (err as Error).message }, 'TLS reload failed; still serving the previous certificates');
    }
  });
  process.stdout.write(
    `pixelfleet control plane\n  HTTP   ${started.httpOrigin}\n  gRPC   ${started.grpcAddress}\n  API    ${started.publicUrls.api}\n  Share  ${started.publicUrls.share}/<projectId>\n`,
  );
  await new Promise<void>((resolve) => {
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
  return 0;
}
