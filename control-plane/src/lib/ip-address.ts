// IP address forms shared by the outbound URL policy and the per-client limits: the IPv4 address
// hidden in an IPv6 form, the eight 16-bit words of an IPv6 address, and the block a client is
// counted by (one IPv6 subscriber is given a whole /64: counting single addresses would let it
// rotate through 2^64 of them).
import { isIP } from 'node:net';

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
