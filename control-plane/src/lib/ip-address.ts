// IP address facts shared by the outbound URL policy, the viewers' ICE candidates, GeoIP and the
// per-client limits: which addresses are not public unicast, the IPv4 address hidden in an IPv6
// form, the eight 16-bit words of an IPv6 address, and the block a client is counted by (one IPv6
// subscriber is given a whole /64: counting single addresses would let it rotate through 2^64 of
// them).
import { BlockList, isIP } from 'node:net';

/** The IPv4 address embedded in an IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64 or 6to4 IPv6 address. */
export function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::ffff:0:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const words = expandIpv6(lower);
  if (!words) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (n: number) => words.slice(0, n).every((w) => w === 0);
  if (zeros(5) && words[5] === 0xffff) return v4(words[6]!, words[7]!); // ::ffff:a.b.c.d
  if (zeros(4) && words[4] === 0xffff && words[5] === 0) return v4(words[6]!, words[7]!); // ::ffff:0:a.b.c.d (SIIT)
  if (zeros(6) && (words[6] !== 0 || words[7]! > 1)) return v4(words[6]!, words[7]!); // ::a.b.c.d
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!); // 6to4
  return undefined;
}

export function expandIpv6(address: string): number[] | undefined {
  if (address.includes('.')) return undefined;
  const [head = '', tail] = address.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((w) => parseInt(w, 16)));
  const h = part(head);
  const t = tail === undefined ? [] : part(tail);
  const fill = 8 - h.length - t.length;
  if (fill < 0 || (tail === undefined && fill !== 0)) return undefined;
  return [...h, ...Array<number>(fill).fill(0), ...t];
}

/**
 * The key a client address is counted by: an IPv4 address as it is (also when it arrives in an
 * IPv6 form, as on a dual-stack listener), an IPv6 address by its /64 prefix.
 */
export function clientBlock(address: string): string {
  if (isIP(address) !== 6) return address;
  const v4 = embeddedIpv4(address);
  if (v4 !== undefined) return v4;
  const words = expandIpv6(address.toLowerCase().replace(/%.*$/, ''));
  if (!words) return address;
  return `${words.slice(0, 4).map((w) => w.toString(16)).join(':')}::/64`;
}

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
