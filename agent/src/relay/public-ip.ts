// Announcing a public address behind 1:1 NAT: werift only gathers addresses it can bind, so each
// non-loopback IPv4 host candidate is repeated with the public address and the same port; the NAT
// forwards the browser's checks to the private socket. Private candidates stay, for LAN viewers.
import { mediaKind, parseSdp, serializeSdp } from './sdp-text';

/** The public twin of one candidate (`candidate:…` or `a=candidate:…`), or undefined when it has none. */
export function publicIpCandidate(candidate: string, publicIp: string): string | undefined {
  const prefix = candidate.startsWith('a=') ? 'a=' : '';
  const fields = candidate.slice(prefix.length).split(' ');
  const [foundation, component, transport, priority, address, port, typ, type] = fields;
  if (foundation === undefined || component === undefined || priority === undefined || address === undefined || port === undefined) return undefined;
  if (typ !== 'typ' || type !== 'host' || transport?.toLowerCase() !== 'udp') return undefined;
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(address) || address.startsWith('127.') || address === publicIp) return undefined;
  // A distinct foundation (RFC 8445: same type, base and server share one) and a slightly lower
  // priority than the real host candidate, so a LAN viewer still prefers the private address.
  const publicFoundation = `${foundation.replace(/^candidate:/, 'candidate:p')}`.slice(0, 'candidate:'.length + 32);
  const rest = fields.slice(6);
  return `${prefix}${publicFoundation} ${component} ${transport} ${Math.max(0, Number(priority) - 1)} ${publicIp} ${port} ${rest.join(' ')}`;
}

/** Adds the public twin after every qualifying host candidate; unchanged when werift already gathered publicIp itself. */
export function advertisePublicIp(sdp: string, publicIp: string): string {
  const parsed = parseSdp(sdp);
  const alreadyThere = parsed.media.flat().some((line) => line.startsWith('a=candidate:') && line.split(' ')[4] === publicIp);
  if (alreadyThere) return sdp;
  parsed.media = parsed.media.map((section) =>
    mediaKind(section) === '' ? section : section.flatMap((line) => {
      if (!line.startsWith('a=candidate:')) return [line];
      const twin = publicIpCandidate(line, publicIp);
      return twin === undefined ? [line] : [line, twin];
    }),
  );
  return serializeSdp(parsed);
}
