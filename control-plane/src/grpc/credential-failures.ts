// Failed credential checks on the gRPC services (the admin token, the agents' join token, a
// worker's token), counted per client address (an IPv6 /64): CREDENTIAL_FAILURE_BURST back to
// back, then CREDENTIAL_FAILURES_PER_MINUTE. An address past that is refused without a check
// (RESOURCE_EXHAUSTED) until its bucket refills, so guessing a token from one address is slow
// whatever the network allows; an agent with a good token on another address is not affected. The
// warn line of a refusal is sampled per address and message (SampledLog: the first at once, then at
// most one a minute with `count`), so a loop of wrong guesses cannot fill the disk with log.
import type { Logger } from 'pino';
import { SampledLog, type Clock } from '@pixelfleet/common';
import { AddressRateLimit } from '../lib/address-rate-limit';
import { clientBlock } from '../lib/ip-address';

/** Failed checks an address may make back to back. */
export const CREDENTIAL_FAILURE_BURST = 10;
/** Failed checks given back to an address per minute, past the burst. */
export const CREDENTIAL_FAILURES_PER_MINUTE = 6;
/** The message of a check refused unchecked, and the gRPC details it answers with. */
export const TOO_MANY_FAILURES_MESSAGE = 'credential check refused: too many failed checks from this address';
export const TOO_MANY_FAILURES_DETAILS = 'too many failed credential checks from this address; try again in a minute';

/**
 * The client address of a grpc-js peer (`203.0.113.5:51234`, `[2001:db8::1]:51234`, with or without
 * an `ipv4:`/`ipv6:` scheme), or the peer as it is (a Unix socket).
 */
export function peerAddress(peer: string): string {
  const bare = peer.replace(/^ipv[46]:/, '');
  const v6 = /^\[([^\]]+)\]:\d+$/.exec(bare);
  if (v6) return v6[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(bare);
  return v4 ? v4[1]! : peer;
}

export class CredentialFailures {
  private readonly limit: AddressRateLimit;
  private readonly log: SampledLog;

  constructor(clock: Pick<Clock, 'now'>, log: Logger) {
    this.limit = new AddressRateLimit(clock, { burst: CREDENTIAL_FAILURE_BURST, perMinute: CREDENTIAL_FAILURES_PER_MINUTE });
    this.log = new SampledLog(clock, log);
  }

  /**
   * False when the peer's address has used up its failed checks: refuse the call without checking
   * its credential (RESOURCE_EXHAUSTED, TOO_MANY_FAILURES_DETAILS). The refusal is logged, sampled.
   */
  mayCheck(peer: string, fields: Record<string, unknown>): boolean {
    const address = peerAddress(peer);
    if (this.limit.wouldAdmit(address)) return true;
    this.log.for(clientBlock(address)).warn({ peer, address, ...fields }, TOO_MANY_FAILURES_MESSAGE);
    return false;
  }

  /** A check failed: it counts against the peer's address, and `message` is logged, sampled. */
  failed(peer: string, message: string, fields: Record<string, unknown>): void {
    const address = peerAddress(peer);
    this.limit.take(address);
    this.log.for(clientBlock(address)).warn({ peer, address, ...fields }, message);
  }
}
