// Which of a viewer's ICE candidates go on to its session's agent. Every candidate is an address
// the shared worker will send STUN checks to, from inside the operator's network: a page naming
// 10.0.0.5:22, 169.254.169.254:80 or a host name that resolves to one would have the worker probe
// its own network on the viewer's behalf. So by default only candidates whose address is a public
// unicast IP pass (the URL policy's table, lib/ip-address.ts). Nothing a real viewer needs is lost:
// a browser on the Internet offers its public address in its server-reflexive and relay
// candidates, and the relay learns peer-reflexive ones from the browser's own checks; its host
// candidates are private addresses or mDNS names (`….local`) that the worker could not reach
// anyway. `network.allowPrivateViewerCandidates` lets every candidate through, for deployments
// where viewers and workers share a LAN, and for the demo on loopback.
import { isNonPublicAddress } from '../lib/ip-address';

/** The connection address of an ICE candidate line (RFC 8839 §5.1: the fifth field), or undefined when the line is not one. */
export function candidateAddress(candidate: string): string | undefined {
  const fields = candidate.replace(/^a=/, '').trim().split(/\s+/);
  if (!/^candidate:/i.test(fields[0] ?? '') || fields.length < 8 || fields[6] !== 'typ') return undefined;
  return fields[4];
}

/**
 * Whether a viewer's candidate may reach the agent. The empty candidate (end of candidates) names
 * no address and always passes; a line that is not a candidate, a host name, an mDNS name or a
 * non-public address passes only when private candidates are allowed.
 */
export function viewerCandidateAllowed(candidate: string, allowPrivate: boolean): boolean {
  if (allowPrivate || candidate.trim() === '') return true;
  const address = candidateAddress(candidate);
  return address !== undefined && !isNonPublicAddress(address);
}
