// Where each session's signalling goes: session → its worker and player id, kept in memory from
// the lifecycle's every status change, so relaying a viewer's answer or a relay's ICE candidate
// reads no SQL. A session has a route from placement until it is Terminated; while Terminating its
// relay may still be heard (the last candidates of a closing peer), but no viewer signal goes to it.
import type { SessionRecord } from '../repositories/sessions';

interface SignalRoute {
  readonly workerId: string;
  readonly playerId: string;
  /** Starting or Running: the relay takes the viewer's signals. */
  readonly open: boolean;
}

export class SignalRoutes {
  private readonly routes = new Map<string, SignalRoute>();

  /** The session's new state (from the lifecycle's move). */
  track(s: SessionRecord): void {
    if (s.status === 'Terminated' || s.assignedWorker === undefined) {
      this.routes.delete(s.sessionId);
      return;
    }
    this.routes.set(s.sessionId, { workerId: s.assignedWorker, playerId: s.playerId ?? '', open: s.status === 'Starting' || s.status === 'Running' });
  }

  /** Where a viewer's signal for the session goes; undefined once the session is ending or before it is placed. */
  toRelay(sessionId: string): { workerId: string; playerId: string } | undefined {
    const route = this.routes.get(sessionId);
    return route?.open ? route : undefined;
  }

  /** True when the worker holds the session and it is not yet Terminated (its relay may speak to the viewer). */
  heldBy(sessionId: string, workerId: string): boolean {
    return this.routes.get(sessionId)?.workerId === workerId;
  }
}
