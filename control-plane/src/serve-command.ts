// `pixelfleet serve` once its flags are read: loads the config, builds and starts the control
// plane, wires SIGINT/SIGTERM (a second signal forces exit) and returns the exit code. Loaded by
// main.ts only for serve, so the other commands do not pay for loading the control plane.
import { format } from 'node:util';
import { setLogger as setGrpcLogger } from '@grpc/grpc-js';
import { chooseLogFormat, createLogger, logDestination, ConfigError } from '@pixelfleet/common';
import { buildControlPlane } from './app';
import { loadControlPlaneConfig } from './config';
import { ServerTlsError } from './grpc/server-tls';
import { LISTEN_FAILED_EXIT_CODE, ListenError } from './lib/listen-error';

/**
 * Runs the control plane until a signal has shut it down. `file` is the config file (--config, else
 * PIXELFLEET_CONFIG), `env` the process environment. `onStarted` receives the TLS reload once the
 * control plane is up (main.ts listens for SIGHUP from before this module loads).
 * @returns 0 after a clean shutdown, 78 bad configuration or TLS files, 69 a listener cannot open.
 */
export async function runServe(file: string | undefined, env: NodeJS.ProcessEnv, onStarted: (reloadTls: () => void) => void): Promise<number> {
  let config;
  try {
    config = loadControlPlaneConfig({ file, env });
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
  onStarted(() => {
    try {
      app.reloadTls();
    } catch (err) {
      app.log.error({ err: (err as Error).message }, 'TLS reload failed; still serving the previous certificates');
    }
  });
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
