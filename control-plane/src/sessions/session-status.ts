// The session status table (spec: Enqueued, Starting, Running, Terminating, Terminated).
// Every change is asked of this table and recorded as a snapshot row.

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
