// Warn lines a remote peer can cause at will (a wrong token, an agent's report about a session it
// does not hold), sampled per peer and message: the first at once, then at most one per interval
// with `count`, this occurrence and those not logged since. A loop of bad requests then costs a
// line a minute, not a line each, and the log keeps saying that it goes on.
import type { Logger } from 'pino';
import type { Clock } from './clock';

/** One line per peer and message at most this often. */
export const SAMPLED_LOG_INTERVAL_MS = 60_000;
/** Peer and message pairs held at most (the least recently logged are forgotten first). */
const MAX_SAMPLED_KEYS = 10_000;

export class SampledLog {
  /** Per peer and message: occurrences not yet logged, and when the last line went out. */
  private readonly seen = new Map<string, { unlogged: number; loggedAt: number }>();

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    private readonly log: Logger,
  ) {}

  /** The log of one peer (an address block, a worker id), whose warn takes fields and a message as pino's does. */
  for(peer: string): { warn(fields: Record<string, unknown>, message: string): void } {
    return { warn: (fields, message) => this.write(peer, fields, message) };
  }

  private write(peer: string, fields: Record<string, unknown>, message: string): void {
    const key = `${peer}\n${message}`;
    const now = this.clock.now();
    const entry = this.seen.get(key);
    if (entry !== undefined && now - entry.loggedAt < SAMPLED_LOG_INTERVAL_MS) {
      entry.unlogged += 1;
      return;
    }
    // Re-inserted, so that the map's first key is always the least recently logged.
    this.seen.delete(key);
    this.seen.set(key, { unlogged: 0, loggedAt: now });
    if (this.seen.size > MAX_SAMPLED_KEYS) this.seen.delete(this.seen.keys().next().value!);
    this.log.warn({ ...fields, count: (entry?.unlogged ?? 0) + 1 }, message);
  }
}
