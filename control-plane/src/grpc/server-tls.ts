// TLS for the control plane's listeners (loadServerTls, for gRPC and HTTPS) and the gRPC server's credentials: certificate and key (PEM) read from files at start and again
// on reload() (SIGHUP), swapped into the listening server without closing it — connections made
// after the reload get the new certificate, open ones keep theirs. With a client CA the server
// requires mutual TLS: a client without a certificate that CA signed is refused in the handshake.
import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { ServerCredentials } from '@grpc/grpc-js';

export interface ServerTlsFiles {
  certFile: string;
  keyFile: string;
  clientCaFile?: string | undefined;
}

/** A TLS file that cannot be read or used; the message names the config key. */
export class ServerTlsError extends Error {
  override readonly name = 'ServerTlsError';
}

function read(file: string, key: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ServerTlsError(`config key "${key}": ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/** Reads and checks the files (the key matches the certificate, each PEM parses); `prefix` is the config key holding them. */
export function loadServerTls(files: ServerTlsFiles, prefix: 'grpc.tls' | 'http.tls' = 'grpc.tls'): SecureContextOptions {
  const options: SecureContextOptions = {
    cert: read(files.certFile, `${prefix}.certFile`),
    key: read(files.keyFile, `${prefix}.keyFile`),
    ...(files.clientCaFile === undefined ? {} : { ca: read(files.clientCaFile, `${prefix}.clientCaFile`) }),
  };
  try {
    createSecureContext(options);
  } catch (err) {
    throw new ServerTlsError(`config keys "${prefix}.certFile"/"${prefix}.keyFile": ${files.certFile} and ${files.keyFile} are not a usable certificate and key (${(err as Error).message})`);
  }
  return options;
}

/**
 * Server credentials whose certificate can be replaced while the server listens: grpc-js passes
 * each update to the listening server's setSecureContext (its SecureContextWatcher mechanism).
 */
export class ReloadableServerCredentials extends ServerCredentials {
  constructor(private readonly files: ServerTlsFiles) {
    const mutual = files.clientCaFile !== undefined;
    super({ requestCert: mutual, rejectUnauthorized: mutual }, loadServerTls(files));
  }

  /** Reads the files again and serves them to new connections; on error throws and keeps the current ones. */
  reload(): void {
    this.updateSecureContextOptions(loadServerTls(this.files));
  }

  override _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}
