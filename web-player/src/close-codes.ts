// WebSocket close codes of the player signalling socket, and the sentence a viewer reads for each.
// Shared by the page (which shows the sentence) and the control plane (which closes with the code).

/** One close code: its number, the stable name reported in telemetry (`reasonName`), the viewer's sentence. */
export interface CloseCodeEntry {
  readonly code: number;
  readonly sentence: string;
}

/**
 * Every close code the gateway uses (4000–4006: hosted-service convention) plus the standard codes a
 * viewer can meet. Keys are the `reasonName` values written to telemetry.
 */
export const VIEWER_CLOSE_CODES = Object.freeze({
  normalClosure: { code: 1000, sentence: 'The session has ended.' },
  goingAway: { code: 1001, sentence: 'The session has ended.' },
  noStatus: { code: 1005, sentence: 'The connection to the server was lost.' },
  connectionLost: { code: 1006, sentence: 'The connection to the server was lost.' },
  projectDisabled: { code: 4000, sentence: 'This stream is not available. The link may be wrong or the project is disabled.' },
  noServerAvailable: { code: 4001, sentence: 'No streaming server is available right now. Please try again in a few minutes.' },
  appNotFound: { code: 4002, sentence: 'This application has not been published yet.' },
  appLaunchFailed: { code: 4003, sentence: 'The application failed to start. Please try again.' },
  maxRunTimeReached: { code: 4004, sentence: 'Your session reached its maximum run time.' },
  streamerNotFound: { code: 4005, sentence: 'The stream could not be found. Please try again.' },
  appClosed: { code: 4006, sentence: 'The application closed unexpectedly.' },
  // Ours: the page's socket dropped and the session could not be taken back over a new one.
  resumeRefused: { code: 4008, sentence: 'The connection to the server was lost.' },
  // Ours: admission limits (control plane config viewers.maxPerAddress, viewers.maxQueuedPerProject).
  tooManyConnections: { code: 4010, sentence: 'Too many streams are open from your network. Close one and try again.' },
  queueFull: { code: 4011, sentence: 'Too many viewers are waiting for this stream. Please try again later.' },
  // Ours: the app sent Pixel Streaming's `disconnectPlayer`; the close reason carries its own words.
  disconnectedByApp: { code: 4012, sentence: 'The application ended your session.' },
} as const satisfies Record<string, CloseCodeEntry>);

/** Stable name of a known close code, as written to telemetry `reasonName`. */
export type CloseReasonName = keyof typeof VIEWER_CLOSE_CODES;

/** Close code → the sentence shown to the viewer (known codes only). */
export const CLOSE_CODE_SENTENCES: Readonly<Record<number, string>> = Object.freeze(
  Object.fromEntries(Object.values(VIEWER_CLOSE_CODES).map((entry) => [entry.code, entry.sentence])),
);

const NAME_BY_CODE: ReadonlyMap<number, CloseReasonName> = new Map(
  (Object.entries(VIEWER_CLOSE_CODES) as [CloseReasonName, CloseCodeEntry][]).map(([name, entry]) => [entry.code, name]),
);

/**
 * Names written to telemetry `reasonName`: a known code's name, `unknown`, or `webRtcFailed` when the
 * page itself ended a session whose media connection failed.
 */
export type ViewerCloseReasonName = CloseReasonName | 'unknown' | 'webRtcFailed';

/** What the page knows about a closed socket. */
export interface CloseDescription {
  readonly code: number;
  /** The reason text the server sent (may be empty). */
  readonly reason: string;
  readonly reasonName: ViewerCloseReasonName;
  /** The sentence shown to the viewer: ours for known codes, else the server's reason. */
  readonly sentence: string;
}

/** Describe a close: known codes get our sentence; unknown codes show the server's reason. */
export function describeClose(code: number, reason: string): CloseDescription {
  const name = NAME_BY_CODE.get(code);
  if (name !== undefined) {
    return { code, reason, reasonName: name, sentence: VIEWER_CLOSE_CODES[name].sentence };
  }
  const text = reason.trim();
  return {
    code,
    reason,
    reasonName: 'unknown',
    sentence: text === '' ? `The connection was closed (code ${code}).` : text,
  };
}
