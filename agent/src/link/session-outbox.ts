// What the agent owes the control plane about its sessions while the control link is down: the
// session events and relayed signals it could not send, kept per session in order and sent once
// the link is back, so a control plane restart does not lose a session's negotiation.
import type { Logger } from 'pino';
import type { AgentSessionEvent, SignalEnvelope } from '@pixelfleet/proto';

/** Messages kept per session while the link is down (a negotiation is a config, an offer and its ICE candidates). */
export const OUTBOX_MESSAGES_PER_SESSION = 128;

export type OutboxMessage = { type: 'sessionEvent'; event: AgentSessionEvent } | { type: 'signal'; signal: SignalEnvelope };

export class SessionOutbox {
  private readonly held = new Map<string, OutboxMessage[]>();
  /** Sessions that lost messages since the last drain (warned once each). */
  private readonly overflowed = new Set<string>();

  constructor(
    private readonly log: Logger,
    /** Per session; the oldest is dropped past it (default OUTBOX_MESSAGES_PER_SESSION). */
    private readonly perSession = OUTBOX_MESSAGES_PER_SESSION,
  ) {}

  /** Messages held, all sessions together. */
  get size(): number {
    let n = 0;
    for (const messages of this.held.values()) n += messages.length;
    return n;
  }

  /** Keeps a message for the next stream; past the per-session bound the session's oldest goes, with one warning. */
  hold(message: OutboxMessage): void {
    const sessionId = message.type === 'sessionEvent' ? message.event.sessionId : message.signal.sessionId;
    let messages = this.held.get(sessionId);
    if (messages === undefined) {
      messages = [];
      this.held.set(sessionId, messages);
    }
    messages.push(message);
    if (messages.length <= this.perSession) return;
    const dropped = messages.shift()!;
    if (this.overflowed.has(sessionId)) return;
    this.overflowed.add(sessionId);
    this.log.warn(
      { sessionId, limit: this.perSession, dropped: dropped.type === 'sessionEvent' ? dropped.event.kind : 'signal' },
      'control link down: too many session messages held; dropping the oldest',
    );
  }

  /** Everything held, each session's messages in the order they were held; the outbox is empty afterwards. */
  drain(): OutboxMessage[] {
    const all = [...this.held.values()].flat();
    this.held.clear();
    this.overflowed.clear();
    return all;
  }
}
