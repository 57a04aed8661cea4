// Every close a viewer's signalling socket can end with, once: the code, the reason the server
// sends, and the sentence the page shows. The gateway and the session ends close with these
// entries; the page describes a close from them. Free of Node and of the rest of the package (but
// the RFC codes), so that the browser bundle can import it on its own (`@pixelfleet/signaling/viewer-closes`).
import { CLOSE_CODES } from './close-codes';

/** What a close frame carries: a code and a reason (at most 123 bytes of UTF-8). */
export interface ViewerClose {
  readonly code: number;
  readonly reason: string;
}

/** One close a viewer can meet. */
export interface ViewerCloseEntry extends ViewerClose {
  /**
   * The reason as sent. '' where no fixed reason exists: no close frame at all (1005, 1006), or
   * a rejected frame, whose reason names the fault (the parser's words, or none from ws).
   */
  readonly reason: string;
  /** What the viewer reads; the same for every entry of one code. */
  readonly sentence: string;
}

const ENDED = 'The session has ended.';
const LOST = 'The connection to the server was lost.';
const REJECTED = 'The connection was closed after a signalling error. Please reload the page.';

/**
 * Every viewer close, keyed by name. Entries of one code sit together, and the first names the
 * code: that name is the `reasonName` the page writes to telemetry (the page only sees the code).
 * 4000–4006 follow the hosted-service convention; the rest of 40xx are ours.
 */
export const VIEWER_CLOSES = Object.freeze({
  // 1000: a session that ended normally (the viewer left, the API or an operator ended it).
  normalClosure: { code: CLOSE_CODES.normal, reason: 'session ended', sentence: ENDED },
  viewerLeft: { code: CLOSE_CODES.normal, reason: 'viewer left', sentence: ENDED },
  endedByOperator: { code: CLOSE_CODES.normal, reason: 'session ended by an operator', sentence: ENDED },
  // 1001: the control plane is shutting down (its open sockets).
  // Sent by the browser as its page goes away (the control plane closes with serviceRestarting when it stops).
  goingAway: { code: CLOSE_CODES.goingAway, reason: '', sentence: ENDED },
  // 1002, 1003, 1007, 1008, 1009: a frame the server rejected (signaling's parser, ws, the gateway's bounds).
  protocolError: { code: CLOSE_CODES.protocolError, reason: '', sentence: REJECTED },
  unsupportedData: { code: CLOSE_CODES.unsupportedData, reason: 'binary frames are not accepted', sentence: REJECTED },
  // 1005, 1006: reported by the browser, never sent: a close frame without a code, or no close frame.
  noStatus: { code: CLOSE_CODES.noStatus, reason: '', sentence: LOST },
  connectionLost: { code: CLOSE_CODES.abnormal, reason: '', sentence: LOST },
  invalidPayload: { code: CLOSE_CODES.invalidPayload, reason: '', sentence: REJECTED },
  policyViolation: { code: CLOSE_CODES.policyViolation, reason: '', sentence: REJECTED },
  tooManyMessages: { code: CLOSE_CODES.policyViolation, reason: 'too many messages', sentence: REJECTED },
  tooManyIceCandidates: { code: CLOSE_CODES.policyViolation, reason: 'too many ICE candidates', sentence: REJECTED },
  resumeNotResuming: { code: CLOSE_CODES.policyViolation, reason: 'pixelfleetResume is only accepted first on a resuming socket', sentence: REJECTED },
  messageTooBig: { code: CLOSE_CODES.messageTooBig, reason: '', sentence: REJECTED },
  // 1012: a session held for a viewer who was away when the control plane restarted.
  serviceRestarting: { code: CLOSE_CODES.serviceRestart, reason: 'service restarting', sentence: 'The service is restarting. Please try again in a minute.' },
  projectDisabled: {
    code: 4000,
    reason: 'project disabled',
    sentence: 'This stream is not available. The link may be wrong or the project is disabled.',
  },
  projectNotFound: {
    code: 4000,
    reason: 'project not found',
    sentence: 'This stream is not available. The link may be wrong or the project is disabled.',
  },
  noServerAvailable: {
    code: 4001,
    reason: 'no streaming server available in this region',
    sentence: 'No streaming server is available right now. Please try again in a few minutes.',
  },
  appNotFound: { code: 4002, reason: 'app not found: the project has no live build', sentence: 'This application has not been published yet.' },
  appLaunchFailed: { code: 4003, reason: 'app failed to launch', sentence: 'The application failed to start. Please try again.' },
  maxRunTimeReached: { code: 4004, reason: 'maximum run time reached', sentence: 'Your session reached its maximum run time.' },
  appClosed: { code: 4006, reason: 'app closed or crashed', sentence: 'The application closed unexpectedly.' },
  workerLost: { code: 4006, reason: 'streaming server lost', sentence: 'The application closed unexpectedly.' },
  // Ours: the project's afkTimeout passed without input from the viewer.
  idleTimeout: { code: 4007, reason: 'ended after a period without input', sentence: 'Your session ended after a period without input.' },
  // Ours: a resume the gateway cannot honour, or a socket a resumed one replaced.
  resumeRefused: { code: 4008, reason: 'session cannot be resumed', sentence: LOST },
  resumeNotRequested: { code: 4008, reason: 'no resume request', sentence: LOST },
  resumeNotFirst: { code: 4008, reason: 'the first message must be pixelfleetResume', sentence: LOST },
  resumeReplaced: { code: 4008, reason: 'replaced by a resumed connection', sentence: LOST },
  // Ours, sent by the page: it gave its socket up as silent and is resuming; the gateway holds the session.
  resuming: { code: 4009, reason: 'no message from the server', sentence: LOST },
  resumingKeepalive: { code: 4009, reason: 'keepalive timeout', sentence: LOST },
  // Ours: admission limits (control plane config viewers.maxPerAddress, viewers.maxQueuedPerProject); no session is made.
  tooManyConnections: {
    code: 4010,
    reason: 'too many viewer connections from this address',
    sentence: 'Too many streams are open from your network. Close one and try again.',
  },
  queueFull: { code: 4011, reason: 'the queue for this stream is full', sentence: 'Too many viewers are waiting for this stream. Please try again later.' },
  // Ours: the app sent Pixel Streaming's `disconnectPlayer`; the app's own reason follows after ': '.
  disconnectedByApp: { code: 4012, reason: 'the app disconnected the viewer', sentence: 'The application ended your session.' },
  // Ours: the video connection never came up after a server was assigned (control plane config
  // sessions.connectTimeoutSeconds), or it dropped and was not renegotiated within viewers.resumeGraceSeconds.
  connectTimeout: {
    code: 4013,
    reason: 'the video connection did not come up in time',
    sentence: 'The video connection could not be established or was lost. Please check your network and try again.',
  },
  streamLost: { code: 4013, reason: 'the video connection was lost', sentence: 'The video connection could not be established or was lost. Please check your network and try again.' },
  // Ours: session creation rate limit per client address (control plane config viewers.sessionsPerMinute,
  // viewers.sessionBurst); no session is made. A resume is not a creation and is never refused with it.
  tooManySessions: {
    code: 4014,
    reason: 'too many new sessions from this address',
    sentence: 'Too many streams were started from your network. Please wait a minute and try again.',
  },
  // Ours: the project's subscription is not `active` (past_due, canceled, expired, suspended); no
  // session is made. Sessions already streaming are not cut: they end as they would have.
  subscriptionInactive: { code: 4015, reason: "the project's subscription is not active", sentence: 'This stream is not available right now.' },
  // 4016: a page on a site the project's embedOrigins does not list opened the signalling socket.
  originRefused: { code: 4016, reason: 'this site may not open the stream', sentence: 'This stream cannot be played on this site.' },
} as const satisfies Record<string, ViewerCloseEntry>);

/** A viewer close's name. */
export type ViewerCloseName = keyof typeof VIEWER_CLOSES;

const ENTRIES = Object.entries(VIEWER_CLOSES) as [ViewerCloseName, ViewerCloseEntry][];

/** The close frame (code and reason) of a named entry, as the server sends it. */
export function viewerClose(name: ViewerCloseName): ViewerClose {
  const { code, reason } = VIEWER_CLOSES[name];
  return { code, reason };
}

/** Code → the name of its first entry (the telemetry `reasonName`). */
export const VIEWER_CLOSE_NAME_BY_CODE: ReadonlyMap<number, ViewerCloseName> = new Map(
  ENTRIES.filter(([name, entry]) => ENTRIES.find(([, first]) => first.code === entry.code)?.[0] === name).map(([name, entry]) => [entry.code, name] as const),
);

/** Close code → the sentence shown to the viewer (known codes only). */
export const VIEWER_CLOSE_SENTENCES: Readonly<Record<number, string>> = Object.freeze(
  Object.fromEntries([...VIEWER_CLOSE_NAME_BY_CODE].map(([code, name]) => [code, VIEWER_CLOSES[name].sentence])),
);
