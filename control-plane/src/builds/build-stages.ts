// The build pipeline's state table (spec: States and transitions, Build pipeline): status → event
// fired on entering it → statuses the pipeline may move it to next. Every status change asks this
// table (build-service.ts); `builds.status` carries the same list as a SQL CHECK (migration 5).
import { DomainError } from '../errors';
import type { BuildEvent } from '../webhooks/webhook-envelope';

/** The spec's status strings, in pipeline order. */
export const BUILD_STATUSES = [
  'pending',
  'Downloading Files',
  'Extracting & Scanning',
  'Saving to Repository',
  'Ready',
  'Distributing to Servers',
  'Approved',
  'Reject',
  'Download Failed',
] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];

/** A build's first status, entered when upload-file accepts it. */
export const INITIAL_BUILD_STATUS = 'pending' satisfies BuildStatus;
/** The status a distribution (automatic or activated) puts a build in. */
export const DISTRIBUTING = 'Distributing to Servers' satisfies BuildStatus;

export interface BuildStage {
  /** Fired (fleet event and webhook) when a build enters the status. */
  event: BuildEvent;
  /** Where the pipeline may take the build next; empty for a terminal status. */
  next: readonly BuildStatus[];
  /**
   * Whether an activation (distribute-file, set-active-build) may start a distribution from here:
   * a ready or approved build (spec: distribute-file "pushes an approved or ready build"), or one
   * already distributing (re-queued; our decision where the spec is silent).
   */
  activatable: boolean;
  /** The status `build.distributing` reports instead when the dashboard's Set Live started it (spec). */
  setLiveStatus?: 'Distribute';
}

/**
 * Moves the pipeline makes that the spec's table does not list (docs/decisions.md): a URL that
 * serves no zip, or more than the size cap, is rejected as it downloads (a validation failure, not
 * a fetch failure, so `Reject` rather than `Download Failed`), and a build the repository cannot
 * store (its disk is full) is rejected from `Saving to Repository`.
 */
export const DECIDED_MOVES: Readonly<Partial<Record<BuildStatus, readonly BuildStatus[]>>> = {
  'Downloading Files': ['Reject'],
  'Saving to Repository': ['Reject'],
};

export const BUILD_STAGES: Readonly<Record<BuildStatus, BuildStage>> = {
  pending: { event: 'build.uploaded', next: ['Downloading Files'], activatable: false },
  'Downloading Files': { event: 'build.downloading', next: ['Extracting & Scanning', 'Download Failed', ...DECIDED_MOVES['Downloading Files']!], activatable: false },
  'Extracting & Scanning': { event: 'build.extracting', next: ['Saving to Repository', 'Reject'], activatable: false },
  // autoRelease true: Distributing to Servers; false: Ready.
  'Saving to Repository': { event: 'build.saving', next: ['Distributing to Servers', 'Ready', ...DECIDED_MOVES['Saving to Repository']!], activatable: false },
  // Waits for an activation.
  Ready: { event: 'build.ready', next: ['Distributing to Servers'], activatable: true },
  'Distributing to Servers': { event: 'build.distributing', next: ['Approved', 'Reject'], activatable: true, setLiveStatus: 'Distribute' },
  // The project's live build: the pipeline is done with it; an activation may push it again.
  Approved: { event: 'build.approved', next: [], activatable: true },
  Reject: { event: 'build.rejected', next: [], activatable: false },
  'Download Failed': { event: 'build.rejected', next: [], activatable: false },
};

/**
 * How a status changes: `pipeline` (the pipeline's own steps, the table's `next`) or `activation`
 * (an operator's distribute-file / set-active-build: to DISTRIBUTING from an activatable status).
 */
export type BuildMove = 'pipeline' | 'activation';

export function isBuildStatus(status: string): status is BuildStatus {
  return (BUILD_STATUSES as readonly string[]).includes(status);
}

export function isTerminal(status: BuildStatus): boolean {
  return BUILD_STAGES[status].next.length === 0;
}

export function canMoveBuild(from: BuildStatus, to: BuildStatus, move: BuildMove): boolean {
  return move === 'activation' ? to === DISTRIBUTING && BUILD_STAGES[from].activatable : BUILD_STAGES[from].next.includes(to);
}

/**
 * The stage `to` when the table allows the move, else a DomainError (`precondition`, answered 400
 * by the HTTP edge) naming the build and its status.
 */
export function requireBuildMove(uploadId: string, from: BuildStatus, to: BuildStatus, move: BuildMove): BuildStage {
  if (!canMoveBuild(from, to, move)) {
    throw new DomainError(
      'precondition',
      move === 'activation' ? `Build ${uploadId} cannot be distributed while its status is ${from}` : `Build ${uploadId} cannot move from ${from} to ${to}`,
    );
  }
  return BUILD_STAGES[to];
}
