// Doctor's TLS line: the control link's transport as the agent would dial it. With TLS, one real
// handshake (inspectTls) says whom it verified, or why it failed with the setting to fix; in
// plaintext, whether that stays on this machine (loopback) or crosses the network (tls.insecure).
import { clientChannel, hostOf, inspectTls, isLoopbackHost, TlsFileError, usesTls } from '@pixelfleet/common';
import type { AgentConfig } from '../config';
import { AGENT_TLS_KEYS } from '../link/control-link';
import type { DoctorLine } from './doctor-line';

/** A server certificate that expires within this many days is a warning (renew it soon). */
export const CERT_EXPIRY_WARNING_DAYS = 14;

const DAY_MS = 86_400_000;

export interface TlsCheck {
  line: DoctorLine;
  /** False when TLS was tried and failed: a token check would only fail the same way. */
  usable: boolean;
}

/** `2026-11-27 10:19 UTC`. */
function utcMinute(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * @param reached whether the TCP connect succeeded (checkReachability)
 * @param options.timeoutMs handshake timeout in ms; options.expiryWarningDays default CERT_EXPIRY_WARNING_DAYS
 */
export async function checkTls(
  config: Pick<AgentConfig, 'controlPlane' | 'tls'>,
  reached: boolean,
  options: { timeoutMs: number; expiryWarningDays?: number | undefined },
): Promise<TlsCheck> {
  const line = (verdict: DoctorLine['verdict'], detail: string): DoctorLine => ({ check: 'tls', verdict, detail });
  const host = hostOf(config.controlPlane);
  if (!usesTls(config.controlPlane, config.tls)) {
    // The agent's own rule (agent.ts): plaintext to another machine only with tls.insecure, and then a warning at every start.
    if (isLoopbackHost(host)) return { line: line('ok', 'not used: plaintext to a loopback control plane (this machine only)'), usable: true };
    return {
      line: line('warn', `plaintext to ${host} (tls.insecure: true): the join and worker tokens cross the network unencrypted; give the control plane a certificate and remove tls.insecure`),
      usable: true,
    };
  }
  try {
    // The same checks of the TLS files the control link makes, each named by its setting.
    clientChannel(config.controlPlane, config.tls, AGENT_TLS_KEYS);
  } catch (err) {
    if (err instanceof TlsFileError) return { line: line('fail', err.message), usable: false };
    throw err;
  }
  if (!reached) return { line: line('warn', 'not checked: the control plane was not reached'), usable: true };
  const r = await inspectTls(config.controlPlane, config.tls, AGENT_TLS_KEYS, options.timeoutMs);
  switch (r.kind) {
    case 'verified': {
      const days = Math.floor((r.validTo.getTime() - Date.now()) / DAY_MS);
      const what = `verified ${r.serverName} (issuer ${r.issuer}, expires ${utcMinute(r.validTo)}`;
      if (days < (options.expiryWarningDays ?? CERT_EXPIRY_WARNING_DAYS)) {
        return { line: line('warn', `${what}, in ${days} day${days === 1 ? '' : 's'}: renew it on the server soon)`), usable: true };
      }
      return { line: line('ok', `${what})`), usable: true };
    }
    case 'refused':
      return { line: line('fail', r.reason.replace(/^TLS: /, '')), usable: false };
    case 'failed':
      return { line: line('fail', `no TLS session with ${config.controlPlane}: ${r.reason}`), usable: false };
    default: {
      const unreachable: never = r;
      throw new Error(`unknown TLS inspection ${String(unreachable)}`);
    }
  }
}
