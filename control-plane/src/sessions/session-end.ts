// Why a session ends, and what the viewer's WebSocket is closed with: each cause names an entry
// of signaling's one table of viewer closes (viewer-closes.ts), never a code of its own.
import { limitCloseReason, viewerClose, type ViewerClose } from '@pixelfleet/signaling';

export type { ViewerClose };

export type SessionEndCause =
  | 'viewerLeft'
  | 'ended'
  | 'endedByOperator'
  | 'projectDisabled'
  | 'noWorker'
  | 'appNotFound'
  | 'launchFailed'
  | 'maxRunTime'
  | 'afkTimeout'
  | 'appExited'
  | 'workerLost'
  | 'appDisconnectedViewer'
  | 'connectTimeout'
  | 'streamLost'
  | 'controlPlaneRestarted'
  | 'warmInstanceAged'
  | 'warmInstanceReplaced'
  | 'warmInstancePreempted'
  | 'warmInstanceSurplus';

/** cause → the end reason recorded on the session and the close sent to the viewer. */
export const SESSION_END: Readonly<Record<SessionEndCause, { endReason: string; close: ViewerClose }>> = {
  viewerLeft: { endReason: 'viewer left', close: viewerClose('viewerLeft') },
  ended: { endReason: 'ended', close: viewerClose('normalClosure') },
  endedByOperator: { endReason: 'ended by operator', close: viewerClose('endedByOperator') },
  projectDisabled: { endReason: 'project disabled', close: viewerClose('projectDisabled') },
  noWorker: { endReason: 'no worker available', close: viewerClose('noServerAvailable') },
  appNotFound: { endReason: 'app not found', close: viewerClose('appNotFound') },
  launchFailed: { endReason: 'app failed to launch', close: viewerClose('appLaunchFailed') },
  maxRunTime: { endReason: 'maxRunTime', close: viewerClose('maxRunTimeReached') },
  afkTimeout: { endReason: 'afkTimeout', close: viewerClose('idleTimeout') },
  appExited: { endReason: 'app closed or crashed', close: viewerClose('appClosed') },
  workerLost: { endReason: 'worker lost the session', close: viewerClose('workerLost') },
  // Ours: the app sent Pixel Streaming's `disconnectPlayer` (Wilbur closes that player with 1011,
  // which the page could not tell from a server fault). The app's own reason follows (viewerCloseFor).
  appDisconnectedViewer: { endReason: 'app disconnected the viewer', close: viewerClose('disconnectedByApp') },
  // Ours: the viewer's peer connection never came up after placement (sessions.connectTimeoutSeconds),
  // or its media legs dropped and were not renegotiated within the resume grace.
  connectTimeout: { endReason: 'viewer never connected', close: viewerClose('connectTimeout') },
  streamLost: { endReason: 'stream connection lost', close: viewerClose('streamLost') },
  controlPlaneRestarted: { endReason: 'control plane restarted', close: viewerClose('serviceRestarting') },
  // Ours, for warm instances no viewer claimed (warm-pool.ts): nobody hears their close.
  warmInstanceAged: { endReason: 'warm instance reached its maximum age', close: viewerClose('normalClosure') },
  warmInstanceReplaced: { endReason: 'warm instance of a build no longer live', close: viewerClose('normalClosure') },
  warmInstancePreempted: { endReason: "warm instance stopped for another project's viewer", close: viewerClose('normalClosure') },
  warmInstanceSurplus: { endReason: 'warm instance no longer wanted', close: viewerClose('normalClosure') },
};

const CLOSE_BY_END_REASON: ReadonlyMap<string, ViewerClose> = new Map(Object.values(SESSION_END).map((e) => [e.endReason, e.close]));

/**
 * The close a viewer hears for cause. A detail (the app's reason for appDisconnectedViewer: free
 * text from the app) follows the table's reason after ': ', with control characters and runs of
 * white space made one space, and the whole is cut to the 123 bytes a close frame carries, never
 * inside a character. An empty detail leaves the table's close as it is.
 */
export function viewerCloseFor(cause: SessionEndCause, detail = ''): ViewerClose {
  const { close } = SESSION_END[cause];
  const words = detail.replace(/[\p{Cc}\s]+/gu, ' ').trim();
  if (words === '') return close;
  return { code: close.code, reason: limitCloseReason(`${close.reason}: ${words}`).trimEnd() };
}

/** The close a viewer hears for a session that ended with endReason; undefined for a reason not in the table. */
export function closeForEndReason(endReason: string): ViewerClose | undefined {
  return CLOSE_BY_END_REASON.get(endReason);
}
