// The outbound URL policy shared by build downloads (`fileUrl`) and webhooks: HTTPS to public
// addresses only. Every address the host name resolves to is checked (private, loopback,
// link-local, CGNAT, multicast, unique-local IPv6, IPv4-mapped/NAT64/6to4 forms of those…).
// `network.allowPrivateUrls` lifts the address and scheme rules for demos and tests. A request
// made after the check must connect through `pinnedLookup(verdict.addresses)`: a second DNS answer
// is never checked, so using it would let a rebinding name reach loopback or the internal network.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { embeddedIpv4 } from '../lib/ip-address';

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

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated): its traffic lands on some relay's network
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64], // discard
  ['64:ff9b:1::', 48], // NAT64 for local use (RFC 8215): its IPv4 side is the operator's network
  ['2001::', 23], // IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID; no web servers live here
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // SRv6 segment identifiers (RFC 9602): never globally reachable
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** True for an address that is not a public unicast address. */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return blocked.check(v4, 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return true;
}

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
