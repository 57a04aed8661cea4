// Viewer signals (subscribe, answer, ICE) for sessions whose worker's control link is down: a
// control plane that restarted takes viewers back before their agents have redialled, and a
// viewer's answer sent then must reach its relay once the agent is connected, not be dropped.
import type { Logger } from 'pino';
import type { SignalEnvelope } from '@pixelfleet/proto';

/** Signals kept per session (a negotiation: subscribe, answer, up to 64 ICE candidates); the oldest go past it. */
export const MAX_PENDING_VIEWER_SIGNALS = 128;

export class PendingViewerSignals {
  private readonly held = new Map<string, { workerId: string; signals: SignalEnvelope[] }>();

  constructor(private readonly log: Logger) {}

  /** Keeps a signal for the session's worker until takeFor(workerId). */
  hold(workerId: string, signal: SignalEnvelope): void {
    let entry = this.held.get(signal.sessionId);
    if (entry === undefined || entry.workerId !== workerId) {
      entry = { workerId, signals: [] };
      this.held.set(signal.sessionId, entry);
    }
    entry.signals.push(signal);
    if (entry.signals.length <= MAX_PENDING_VIEWER_SIGNALS) return;
    entry.signals.shift();
    this.log.warn({ sessionId: signal.sessionId, workerId, limit: MAX_PENDING_VIEWER_SIGNALS }, 'viewer signal dropped: too many held for a worker that is away');
  }

  /** What was held for the worker's sessions, each session's in order; forgotten here. */
  takeFor(workerId: string): SignalEnvelope[] {
    const out: SignalEnvelope[] = [];
    for (const [sessionId, entry] of this.held) {
      if (entry.workerId !== workerId) continue;
      out.push(...entry.signals);
      this.held.delete(sessionId);
    }
    return out;
  }

  /** The session is over: nothing of it is owed to its worker. */
  forget(sessionId: string): void {
    this.held.delete(sessionId);
  }
}
