// Which stream keeps a worker when a second Connect presents its identity (issue 27 item 5): the
// newer one, as before, unless it is another agent process (a server cloned with the agent's
// worker.json) while the worker's stream still holds its lease; then the newer one is refused.

/** What the registry knows of an agent stream for this decision. */
export interface StreamClaim {
  /** The agent process's random id from its Hello; '' from an agent older than the field. */
  instanceId: string;
}

export type TakeoverReason =
  /** The live stream's agent sent no instance id (an older agent): a redial and a clone look alike, so the newer wins. */
  | 'unidentifiedIncumbent'
  /** The same process redials (it found its stream dead; the control plane may still hold it half-open). */
  | 'sameInstance'
  /** Another process, and the live stream let the lease run out: that agent is gone (crashed, cut off). */
  | 'quietIncumbent'
  /** Another process, and the live stream renews the lease: two agents present one identity. */
  | 'liveIncumbent';

export type TakeoverVerdict = { replace: true; reason: Exclude<TakeoverReason, 'liveIncumbent'> } | { replace: false; reason: 'liveIncumbent' };

/**
 * Whether a new stream's Hello may replace the worker's live stream.
 *
 * "Alive" is the lease the control plane already keeps, renewed only by the live stream's Hello and
 * heartbeats: no new clock to tune, and the worker counts as connected exactly while its stream may
 * not be taken. A crashed agent whose old stream is still half-open here stops renewing at once, so
 * its restarted process (a new instance id) gets in at most `workers.leaseSeconds` after its last
 * heartbeat; a process that redials itself (same instance id) replaces at once, as before. Most
 * crashes close the TCP connection anyway (the kernel does), so the stream ends before any redial.
 *
 * @param leaseExpiresAtMs the worker's lease end (ms since the epoch), as the live stream last renewed it
 */
export function takeoverVerdict(incumbent: StreamClaim, newcomer: StreamClaim, leaseExpiresAtMs: number | undefined, nowMs: number): TakeoverVerdict {
  if (incumbent.instanceId === '') return { replace: true, reason: 'unidentifiedIncumbent' };
  if (newcomer.instanceId === incumbent.instanceId) return { replace: true, reason: 'sameInstance' };
  if (leaseExpiresAtMs === undefined || leaseExpiresAtMs <= nowMs) return { replace: true, reason: 'quietIncumbent' };
  return { replace: false, reason: 'liveIncumbent' };
}
