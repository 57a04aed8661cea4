// The session status table (spec: Enqueued, Starting, Running, Terminating, Terminated).
// Every change is asked of this table; the ones in SNAPSHOT_STATUSES are recorded as snapshot rows.

export const SESSION_STATUSES = ['Enqueued', 'Starting', 'Running', 'Terminating', 'Terminated'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/** status → statuses it may move to. Enqueued and Starting may end at once (nothing to stop yet). */
export const SESSION_TRANSITIONS: Readonly<Record<SessionStatus, readonly SessionStatus[]>> = {
  Enqueued: ['Starting', 'Terminated'],
  Starting: ['Running', 'Terminating', 'Terminated'],
  Running: ['Terminating', 'Terminated'],
  Terminating: ['Terminated'],
  Terminated: [],
};

/**
 * Statuses written as snapshot rows. The spec: "The snapshot order recorded for a normal session
 * is Enqueued, Starting, Running, Terminated". Terminating is a status of the session (its slot
 * is still held, it is not live, the admin CLI shows it) but not a recorded snapshot.
 */
export const SNAPSHOT_STATUSES: ReadonlySet<SessionStatus> = new Set<SessionStatus>(['Enqueued', 'Starting', 'Running', 'Terminated']);

export function canMoveSession(from: SessionStatus, to: SessionStatus): boolean {
  return SESSION_TRANSITIONS[from].includes(to);
}

/** Sessions that hold a worker slot. */
export function holdsSlot(status: SessionStatus): boolean {
  return status === 'Starting' || status === 'Running' || status === 'Terminating';
}

/** Sessions counted in `liveUser`: past Enqueued and not yet ending (the repository's countLive counts the same). */
export function isLive(status: SessionStatus): boolean {
  return status === 'Starting' || status === 'Running';
}
