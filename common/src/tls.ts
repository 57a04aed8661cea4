// The client side of gRPC over TLS, shared by the agent's control link and the admin CLI: which
// transport a target gets (TLS unless told otherwise or a loopback target has no TLS settings),
// the channel credentials (system roots or a CA file, an optional client certificate, the server
// name checked and overridable for an IP), and a plain sentence for a failed handshake.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { checkServerIdentity as checkServerIdentityOf, connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { credentials, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';

export interface ClientTlsSettings {
  /** PEM file of the CA(s) that sign the server's certificate; unset: the system roots. */
  caFile?: string | undefined;
  /** The name the server's certificate must carry; unset: the target's host. */
  serverName?: string | undefined;
  /** Client certificate and key (PEM) for a server that requires mutual TLS. */
  certFile?: string | undefined;
  keyFile?: string | undefined;
  /**
   * true: plaintext. false: TLS. Unset: TLS, except for a loopback target (127.0.0.0/8, ::1,
   * localhost) with none of the settings above (the demo and tests on one machine).
   */
  insecure?: boolean | undefined;
}

/** A TLS file that cannot be read; the message names the setting. */
export class TlsFileError extends Error {
  override readonly name = 'TlsFileError';
}

/** The host part of `host:port` or `[v6]:port`. */
export function hostOf(target: string): string {
  const m = /^\[([^\]]+)\]:\d+$/.exec(target);
  if (m) return m[1]!;
  const colon = target.lastIndexOf(':');
  return colon < 0 ? target : target.slice(0, colon);
}

/** 127.0.0.0/8 (also IPv4-mapped, ::ffff:127.0.0.1), ::1 and localhost: addresses no other machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) !== 6) return false;
  // WHATWG URL writes every spelling of an IPv6 address one way: ::1, and ::ffff:7fxx:xxxx for 127.x.x.x.
  const canonical = new URL(`http://[${h}]/`).hostname;
  if (canonical === '[::1]') return true;
  const mapped = /^\[::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}\]$/.exec(canonical);
  return mapped !== null && parseInt(mapped[1]!, 16) >> 8 === 0x7f;
}

/**
 * Plain http:// to a host other than a loopback one (isLoopbackHost): the bytes cross a network
 * unencrypted. False for a string that is no URL (whoever parses it refuses it first).
 */
export function crossesNetworkInPlaintext(url: string | URL): boolean {
  let u: URL;
  try {
    u = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return false;
  }
  return u.protocol === 'http:' && !isLoopbackHost(u.hostname);
}

/** Whether a client dialing `target` with these settings uses TLS. */
export function usesTls(target: string, tls: ClientTlsSettings): boolean {
  if (tls.insecure !== undefined) return !tls.insecure;
  const anySetting = tls.caFile !== undefined || tls.serverName !== undefined || tls.certFile !== undefined || tls.keyFile !== undefined;
  return anySetting || !isLoopbackHost(hostOf(target));
}

function readPem(file: string, key: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new TlsFileError(`${key} ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/**
 * Channel credentials and options for `target`. `keys` names each setting as the caller's user
 * knows it (`tls.caFile` in the agent's config, `--ca` on the admin CLI) for error messages.
 */
export function clientChannel(
  target: string,
  tls: ClientTlsSettings,
  keys: Record<'caFile' | 'certFile' | 'keyFile', string>,
): { credentials: ChannelCredentials; options: ChannelOptions; tls: boolean } {
  if (!usesTls(target, tls)) return { credentials: credentials.createInsecure(), options: {}, tls: false };
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new TlsFileError(`${keys.certFile} and ${keys.keyFile} go together: set both or neither`);
  }
  const ca = tls.caFile === undefined ? null : readPem(tls.caFile, keys.caFile);
  const key = tls.keyFile === undefined ? null : readPem(tls.keyFile, keys.keyFile);
  const cert = tls.certFile === undefined ? null : readPem(tls.certFile, keys.certFile);
  const options: ChannelOptions = tls.serverName === undefined ? {} : { 'grpc.ssl_target_name_override': tls.serverName, 'grpc.default_authority': tls.serverName };
  return { credentials: credentials.createSsl(ca, key, cert), options, tls: true };
}

/**
 * A sentence for a gRPC failure caused by TLS (the handshake's error as grpc-js reports it in a
 * status's details), or undefined for any other failure. `keys` names the settings to check.
 * `channel` says how the client dialed: a connection the server cut right after it was made
 * ("Failed to connect", no reason given) is then explained by what the usual cause would be.
 */
export function describeTlsFailure(
  details: string,
  keys: { caFile: string; serverName: string; certFile: string },
  channel?: { tls: boolean; clientCert: boolean },
): string | undefined {
  const d = details.toLowerCase();
  if (channel !== undefined && d.includes('failed to connect')) {
    if (!channel.tls) return `the server cut the connection: it may require TLS (this client dialed in plaintext; set ${keys.caFile})`;
    if (channel.clientCert) return "TLS: the server cut the connection after the handshake: it may not accept this client certificate (not signed by its client CA)";
  }
  if (d.includes('certificate has expired') || d.includes('cert_has_expired')) {
    return "TLS: the server's certificate has expired (renew it on the server)";
  }
  if (d.includes('certificate is not yet valid')) return "TLS: the server's certificate is not valid yet (check both clocks)";
  if (d.includes('does not match certificate') || d.includes('altnames') || d.includes('err_tls_cert_altname_invalid')) {
    return `TLS: the server's certificate does not name the host dialed (dial a name it carries, or set ${keys.serverName} to one)`;
  }
  if (
    d.includes('self-signed certificate') ||
    d.includes('self signed certificate') ||
    d.includes('unable to verify the first certificate') ||
    d.includes('unable to get local issuer certificate') ||
    d.includes('unable to get issuer certificate')
  ) {
    return `TLS: the server's certificate is not signed by a trusted CA (set ${keys.caFile} to the CA that signed it)`;
  }
  if (d.includes('certificate required') || d.includes('peer did not return a certificate')) {
    return `TLS: the server requires a client certificate (set ${keys.certFile})`;
  }
  if (d.includes('unknown ca') || d.includes('bad certificate') || d.includes('certificate unknown')) {
    return "TLS: the server does not accept this client certificate (it is not signed by the server's client CA)";
  }
  if (d.includes('wrong version number') || d.includes('packet length too long') || d.includes('disconnected before secure tls connection')) {
    return 'TLS: the server does not speak TLS on this port (or TLS is off on this side while the server requires it)';
  }
  return undefined;
}

/** How long probeTls waits for the handshake and the server's first bytes. */
export const TLS_PROBE_TIMEOUT_MS = 10_000;

/** What one TLS connection to the server found (inspectTls). */
export type TlsInspection =
  /** The handshake verified the server and it sent its first HTTP/2 bytes. */
  | { kind: 'verified'; serverName: string; issuer: string; subject: string; validTo: Date }
  /** A TLS failure: describeTlsFailure's sentence (it names the setting to fix). */
  | { kind: 'refused'; reason: string }
  /** Another failure (refused, reset, no answer in time): what happened, as a sentence. */
  | { kind: 'failed'; reason: string };

/** A certificate name's readable part: its CN, else its O, else every field. */
function nameOf(name: Record<string, unknown> | undefined): string {
  if (name === undefined) return '?';
  const pick = (v: unknown) => (Array.isArray(v) ? v.join(', ') : typeof v === 'string' ? v : undefined);
  return pick(name.CN) ?? pick(name.O) ?? Object.entries(name).map(([k, v]) => `${k}=${String(v)}`).join(', ');
}

/**
 * Makes one TLS connection to `target` as the gRPC channel would (same CA, client certificate,
 * server name, ALPN h2) and waits for the server's first HTTP/2 bytes, which a server refusing
 * our client certificate under TLS 1.3 never sends (its alert arrives after the handshake).
 * Reads the TLS files at once: a missing one throws (synchronously), as clientChannel would.
 * @param timeoutMs how long the handshake and the first bytes may take (default TLS_PROBE_TIMEOUT_MS)
 */
export function inspectTls(
  target: string,
  tls: ClientTlsSettings,
  keys: { caFile: string; serverName: string; certFile: string },
  timeoutMs: number = TLS_PROBE_TIMEOUT_MS,
): Promise<TlsInspection> {
  const host = hostOf(target);
  const port = Number(target.slice(target.lastIndexOf(':') + 1));
  const options: ConnectionOptions = {
    host,
    port,
    ALPNProtocols: ['h2'],
    servername: tls.serverName ?? (isIP(host) === 0 ? host : undefined),
    ...(tls.caFile === undefined ? {} : { ca: readFileSync(tls.caFile) }),
    ...(tls.certFile === undefined || tls.keyFile === undefined ? {} : { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }),
  };
  if (tls.serverName !== undefined) {
    const name = tls.serverName;
    options.checkServerIdentity = (_host, cert) => checkServerIdentityOf(name, cert);
  }
  const channel = { tls: true, clientCert: tls.certFile !== undefined };
  return new Promise((resolve) => {
    const socket = tlsConnect(options);
    let peer: TlsInspection | undefined;
    const done = (result: TlsInspection) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const failure = (details: string, otherwise: string): TlsInspection => {
      const reason = describeTlsFailure(details, keys, channel);
      return reason === undefined ? { kind: 'failed', reason: otherwise } : { kind: 'refused', reason };
    };
    const timer = setTimeout(
      () => done({ kind: 'failed', reason: `no ${peer === undefined ? 'TLS handshake' : 'HTTP/2 answer after the TLS handshake'} within ${timeoutMs / 1000} s` }),
      timeoutMs,
    );
    socket.once('secureConnect', () => {
      const cert = socket.getPeerCertificate();
      peer = {
        kind: 'verified',
        serverName: tls.serverName ?? host,
        issuer: nameOf(cert.issuer),
        subject: nameOf(cert.subject),
        validTo: new Date(cert.valid_to),
      };
    });
    socket.once('data', () => done(peer ?? { kind: 'failed', reason: 'data before the TLS handshake ended' }));
    socket.once('error', (err: NodeJS.ErrnoException) => done(failure(`${err.code ?? ''} ${err.message}`, `${err.code ?? 'error'}: ${err.message}`)));
    socket.once('end', () => done(failure('Failed to connect', 'the server closed the connection before its first HTTP/2 bytes')));
  });
}

/**
 * inspectTls, reduced to what the agent's control link needs: describeTlsFailure's sentence for a
 * TLS failure, undefined otherwise (it worked, or failed for another reason: refused, unreachable,
 * timed out). A gRPC call queued with waitForReady never reports why the channel cannot connect;
 * this finds out.
 */
export function probeTls(target: string, tls: ClientTlsSettings, keys: { caFile: string; serverName: string; certFile: string }): Promise<string | undefined> {
  return inspectTls(target, tls, keys).then((r) => (r.kind === 'refused' ? r.reason : undefined));
}
