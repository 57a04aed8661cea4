// The outbound URL policy shared by build downloads (`fileUrl`) and webhooks: HTTPS to public
// addresses only. Every address the host name resolves to is checked (private, loopback,
// link-local, CGNAT, multicast, unique-local IPv6, IPv4-mapped/NAT64/6to4 forms of those…).
// `network.allowPrivateUrls` lifts the address and scheme rules for demos and tests. A request
// made after the check must connect through `pinnedLookup(verdict.addresses)`: a second DNS answer
// is never checked, so using it would let a rebinding name reach loopback or the internal network.
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { isNonPublicAddress } from '../lib/ip-address';

/** Resolves a host name to every address it has (injected in tests: no real DNS). */
export type HostResolver = (hostname: string) => Promise<string[]>;

export const systemResolver: HostResolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/** Longest URL accepted, in characters. */
export const MAX_URL_CHARS = 2048;

export interface UrlPolicyOptions {
  allowPrivateUrls: boolean;
  resolve: HostResolver;
  /** How long a host name may take to resolve before the URL is refused (default DNS_TIMEOUT_MS). */
  dnsTimeoutMs?: number;
}

/**
 * How long a host name may take to resolve, ms. getaddrinfo has no deadline of its own: a name
 * whose servers never answer would otherwise hold a build submission or a webhook for minutes.
 */
export const DNS_TIMEOUT_MS = 5_000;

/**
 * An allowed URL with the addresses that were checked (connect only to those; undefined when
 * allowPrivateUrls lets every address through), or why it is refused (a sentence for the 400).
 */
export type UrlVerdict = { ok: true; url: URL; addresses: string[] | undefined } | { ok: false; reason: string };

/** Checks a URL against the policy, resolving its host name. Never throws. */
export async function checkOutboundUrl(raw: string, options: UrlPolicyOptions): Promise<UrlVerdict> {
  if (raw.length > MAX_URL_CHARS) return { ok: false, reason: `must be at most ${MAX_URL_CHARS} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'must be an absolute URL' };
  }
  const schemes = options.allowPrivateUrls ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) return { ok: false, reason: options.allowPrivateUrls ? 'must be an http(s) URL' : 'must be an https URL' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'must not carry credentials' };
  if (options.allowPrivateUrls) return { ok: true, url, addresses: undefined };
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    const timeoutMs = options.dnsTimeoutMs ?? DNS_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    try {
      const answer = await Promise.race([options.resolve(host), timedOut]);
      if (answer === 'timeout') return { ok: false, reason: `host ${host} did not resolve within ${timeoutMs / 1000} s` };
      addresses = answer;
    } catch {
      return { ok: false, reason: `host ${host} could not be resolved` };
    } finally {
      clearTimeout(timer);
    }
  }
  if (addresses.length === 0) return { ok: false, reason: `host ${host} could not be resolved` };
  if (addresses.some(isNonPublicAddress)) return { ok: false, reason: 'must point to a public address (private, loopback and link-local addresses are refused)' };
  return { ok: true, url, addresses };
}

/**
 * A `lookup` for http(s).request or net.connect that answers only with the given addresses (the
 * ones the policy checked) instead of asking DNS again. The URL's host name still goes in the
 * Host header and the TLS server name, so certificates are verified against it.
 */
export function pinnedLookup(addresses: readonly string[]): LookupFunction {
  return (hostname, options, callback) => {
    const answer = addresses
      .map((address) => ({ address, family: isIP(address) }))
      .filter((a) => a.family !== 0 && (options.family === undefined || options.family === 0 || a.family === options.family || options.family === `IPv${a.family}`));
    // net and tls expect the answer on a later tick, as from dns.lookup (tls crashes otherwise).
    process.nextTick(() => {
      const first = answer[0];
      if (first === undefined) {
        callback(Object.assign(new Error(`no checked address of ${hostname} for this family`), { code: 'ENOTFOUND' }), '', 0);
        return;
      }
      if (options.all) callback(null, answer);
      else callback(null, first.address, first.family);
    });
  };
}
