// Where each session's signalling goes: session → its worker and player id, kept in memory from
// the lifecycle's every status change, so relaying a viewer's answer or a relay's ICE candidate
// reads no SQL. A session has a route from placement until it is Terminated; while Terminating its
// relay may still be heard (the last candidates of a closing peer), but no viewer signal goes to it.
// A viewer's signal for a worker whose link is down (it has not redialled a control plane that
// restarted, or its network dropped) is held (pending-viewer-signals.ts) and sent, in order, when
// the worker is back; a session that begins ending owes its worker nothing more.
import type { Logger } from 'pino';
import type { SignalEnvelope } from '@pixelfleet/proto';
import { encodeRelayedSignal, type ViewerToRelaySignal } from '@pixelfleet/signaling';
import type { SessionRecord } from '../repositories/sessions';
import { PendingViewerSignals } from './pending-viewer-signals';

interface SignalRoute {
  readonly workerId: string;
  readonly playerId: string;
  /** Starting or Running: the relay takes the viewer's signals. */
  readonly open: boolean;
}

export class SignalRoutes {
  private readonly routes = new Map<string, SignalRoute>();
  private readonly pending: PendingViewerSignals;

  constructor(
    /** Writes to the worker's control stream; false while its link is down. */
    private readonly sendToWorker: (workerId: string, envelope: SignalEnvelope) => boolean,
    log: Logger,
  ) {
    this.pending = new PendingViewerSignals(log);
  }

  /** The session's new state (from the lifecycle's move). */
  track(s: SessionRecord): void {
    const open = s.status === 'Starting' || s.status === 'Running';
    if (!open) this.pending.forget(s.sessionId);
    if (s.status === 'Terminated' || s.assignedWorker === undefined) {
      this.routes.delete(s.sessionId);
      return;
    }
    this.routes.set(s.sessionId, { workerId: s.assignedWorker, playerId: s.playerId ?? '', open });
  }

  /**
   * Relays a viewer's signalling message to the session's relay, or holds it while the worker's
   * link is down. False only when the session has no relay to go to (not placed yet, or ending).
   */
  toAgent(sessionId: string, signal: ViewerToRelaySignal): boolean {
    const route = this.toRelay(sessionId);
    if (route === undefined) return false;
    const envelope = { sessionId, playerId: route.playerId, json: encodeRelayedSignal(signal) };
    if (!this.sendToWorker(route.workerId, envelope)) this.pending.hold(route.workerId, envelope);
    return true;
  }

  /** The worker is connected again: what was held for its sessions still negotiating goes now, in order. Returns how many. */
  sendHeldFor(workerId: string): number {
    const held = this.pending.takeFor(workerId).filter((signal) => this.toRelay(signal.sessionId)?.workerId === workerId);
    for (const signal of held) this.sendToWorker(workerId, signal);
    return held.length;
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
