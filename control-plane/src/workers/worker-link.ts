// The state table of a worker's control link. The registry asks this table for every change;
// a test walks every (state, event) pair. Draining is an operator flag beside the link, like a
// cordon: a drained worker keeps its link state but gets no new sessions.

export type WorkerLink = 'connected' | 'disconnected' | 'unreachable';

/**
 * How long an unreachable worker is waited for by default (`workers.lostGraceSeconds`), counted
 * from its lease's end: its sessions are kept (media can outlive a control-link blip) and its
 * region's queued viewers keep their places.
 */
export const WORKER_LOST_GRACE_MS = 120_000;
export type WorkerLinkEvent = 'hello' | 'heartbeat' | 'streamClosed' | 'leaseExpired';

interface Transition {
  next: WorkerLink;
  /** Fleet event recorded when the state actually changes. */
  fires: 'worker.connected' | 'worker.disconnected' | 'worker.unreachable';
}

/** state → event → transition; a missing entry means the event is ignored in that state. */
export const WORKER_LINK_TABLE: Readonly<Record<WorkerLink, Partial<Record<WorkerLinkEvent, Transition>>>> = {
  connected: {
    hello: { next: 'connected', fires: 'worker.connected' },
    heartbeat: { next: 'connected', fires: 'worker.connected' },
    streamClosed: { next: 'disconnected', fires: 'worker.disconnected' },
    leaseExpired: { next: 'unreachable', fires: 'worker.unreachable' },
  },
  disconnected: {
    hello: { next: 'connected', fires: 'worker.connected' },
    leaseExpired: { next: 'unreachable', fires: 'worker.unreachable' },
  },
  unreachable: {
    hello: { next: 'connected', fires: 'worker.connected' },
    // A frozen agent that wakes up on its old stream is alive again.
    heartbeat: { next: 'connected', fires: 'worker.connected' },
  },
};

export function nextWorkerLink(state: WorkerLink, event: WorkerLinkEvent): Transition | undefined {
  return WORKER_LINK_TABLE[state][event];
}

/** What operators see: `draining` wins over the link state. */
export function workerStatus(link: WorkerLink, draining: boolean): WorkerLink | 'draining' {
  return draining ? 'draining' : link;
}
