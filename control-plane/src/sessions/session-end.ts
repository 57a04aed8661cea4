// Why a session ends, and what the viewer's WebSocket is closed with. The 40xx codes follow
// the hosted-service convention (architecture §2): one table, used by the gateway and tests.
import { limitCloseReason } from '@pixelfleet/signaling';

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
  | 'streamerNotFound'
  | 'appExited'
  | 'workerLost'
  | 'appDisconnectedViewer'
  | 'controlPlaneRestarted';

export interface ViewerClose {
  code: number;
  reason: string;
}

/** cause → the end reason recorded on the session and the close sent to the viewer. */
export const SESSION_END: Readonly<Record<SessionEndCause, { endReason: string; close: ViewerClose }>> = {
  viewerLeft: { endReason: 'viewer left', close: { code: 1000, reason: 'viewer left' } },
  ended: { endReason: 'ended', close: { code: 1000, reason: 'session ended' } },
  endedByOperator: { endReason: 'ended by operator', close: { code: 1000, reason: 'session ended by an operator' } },
  projectDisabled: { endReason: 'project disabled', close: { code: 4000, reason: 'project disabled' } },
  noWorker: { endReason: 'no worker available', close: { code: 4001, reason: 'no streaming server available in this region' } },
  appNotFound: { endReason: 'app not found', close: { code: 4002, reason: 'app not found: the project has no live build' } },
  launchFailed: { endReason: 'app failed to launch', close: { code: 4003, reason: 'app failed to launch' } },
  maxRunTime: { endReason: 'maxRunTime', close: { code: 4004, reason: 'maximum run time reached' } },
  // Not among the hosted convention's codes; the viewer page shows the reason as sent.
  afkTimeout: { endReason: 'afkTimeout', close: { code: 4007, reason: 'ended after a period without input' } },
  streamerNotFound: { endReason: 'streamer not found', close: { code: 4005, reason: 'streamer not found' } },
  appExited: { endReason: 'app closed or crashed', close: { code: 4006, reason: 'app closed or crashed' } },
  workerLost: { endReason: 'worker lost the session', close: { code: 4006, reason: 'streaming server lost' } },
  // Ours: the app sent Pixel Streaming's `disconnectPlayer` (Wilbur closes that player with 1011,
  // which the page could not tell from a server fault). The app's own reason follows (viewerCloseFor).
  appDisconnectedViewer: { endReason: 'app disconnected the viewer', close: { code: 4012, reason: 'the app disconnected the viewer' } },
  controlPlaneRestarted: { endReason: 'control plane restarted', close: { code: 1012, reason: 'service restarting' } },
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
