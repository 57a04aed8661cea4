// Doctor's checks of the control plane: name resolution and a TCP connect (so an unresolvable
// host is reported as such, not as a gRPC deadline), then one real gRPC call that proves a token
// without side effects.
import { lookup } from 'node:dns/promises';
import { connect, isIP } from 'node:net';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { agentV1 } from '@pixelfleet/proto';
import type { DoctorLine } from './doctor-line';

/** How long the connect and each gRPC probe may take, in ms. */
export const PROBE_TIMEOUT_MS = 5_000;

export interface Reachability {
  line: DoctorLine;
  /** Set when a TCP connection was made, so a token check is worth trying. */
  reached: boolean;
}

/** Splits `host:port` (`[v6]:port` too) as config.ts validated it. */
export function splitHostPort(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(i + 1)) };
}

export async function checkReachability(address: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<Reachability> {
  const { host, port } = splitHostPort(address);
  let ip = host;
  let resolved = '';
  if (isIP(host) === 0) {
    try {
      ip = (await lookup(host)).address;
      resolved = ` → ${ip}`;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      const why = code === 'ENOTFOUND' ? 'no such host' : code === 'EAI_AGAIN' ? 'the DNS server did not answer' : (err as Error).message;
      return { line: { check: 'control plane', verdict: 'fail', detail: `cannot resolve host "${host}" (${code}: ${why}); check controlPlane and DNS` }, reached: false };
    }
  }
  const started = performance.now();
  const outcome = await new Promise<string | undefined>((resolve) => {
    const socket = connect({ host: ip, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`no answer from ${ip}:${port} within ${timeoutMs / 1000} s (a firewall dropping packets, or the wrong address?)`);
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(err.code === 'ECONNREFUSED' ? `nothing listening at ${ip}:${port} (connection refused); is the control plane running, is the port right?` : `cannot connect to ${ip}:${port} (${err.code ?? err.message})`);
    });
  });
  if (outcome !== undefined) return { line: { check: 'control plane', verdict: 'fail', detail: `${address}${resolved}: ${outcome}` }, reached: false };
  return { line: { check: 'control plane', verdict: 'ok', detail: `${address}${resolved}, TCP connect in ${Math.max(1, Math.round(performance.now() - started))} ms` }, reached: true };
}

function bearer(token: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

const deadline = (timeoutMs: number) => ({ deadline: new Date(Date.now() + timeoutMs) });

/**
 * Proves the worker token with an UploadSessionLogs call that sends nothing: the control plane
 * checks the token first (UNAUTHENTICATED), then refuses the empty upload (INVALID_ARGUMENT), so
 * nothing is stored and the running agent's stream is left alone.
 */
export function checkWorkerToken(client: agentV1.AgentServiceClient, workerId: string, workerToken: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<DoctorLine> {
  return new Promise((resolve) => {
    const call = client.uploadSessionLogs(bearer(workerToken), deadline(timeoutMs), (err: ServiceError | null) => {
      if (err?.code === status.INVALID_ARGUMENT) resolve({ check: 'token', verdict: 'ok', detail: `worker token of ${workerId} accepted` });
      else if (err?.code === status.UNAUTHENTICATED) {
        resolve({ check: 'token', verdict: 'fail', detail: `the control plane rejected the worker token of ${workerId}; remove worker.json from the data dir to enroll again with joinToken` });
      } else resolve(grpcFailure(err));
    });
    call.end();
  });
}

/**
 * Proves the join token without enrolling: an Enroll with an empty hostname is refused after the
 * token check (UNAUTHENTICATED for a bad token, INVALID_ARGUMENT for the request), so no worker is made.
 */
export function checkJoinToken(client: agentV1.AgentServiceClient, joinToken: string, region: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<DoctorLine> {
  return new Promise((resolve) => {
    client.enroll({ hostname: '', region, slots: 1, agentVersion: 'doctor' }, bearer(joinToken), deadline(timeoutMs), (err: ServiceError | null) => {
      if (err?.code === status.INVALID_ARGUMENT) resolve({ check: 'token', verdict: 'ok', detail: 'not enrolled yet; joinToken accepted (the agent enrolls at its first start)' });
      else if (err?.code === status.UNAUTHENTICATED) resolve({ check: 'token', verdict: 'fail', detail: 'the control plane rejected joinToken; copy agentJoinToken from its config' });
      else resolve(grpcFailure(err));
    });
  });
}

function grpcFailure(err: ServiceError | null): DoctorLine {
  if (err === null) return { check: 'token', verdict: 'fail', detail: 'the control plane accepted an empty call it should refuse; is this a Pixelfleet control plane?' };
  return { check: 'token', verdict: 'fail', detail: `gRPC call failed: ${status[err.code]}: ${err.details} (reached over TCP; is this the control plane's gRPC port?)` };
}
