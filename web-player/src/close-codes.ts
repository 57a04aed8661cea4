// How the page describes a closed signalling socket: the sentence and telemetry name of each code
// come from the one table of viewer closes (`@pixelfleet/signaling/viewer-closes`).
import { VIEWER_CLOSE_NAME_BY_CODE, VIEWER_CLOSES, type ViewerCloseName } from '@pixelfleet/signaling/viewer-closes';

/**
 * Names written to telemetry `reasonName`: the name of a known code's first table entry,
 * `unknown`, or `webRtcFailed` when the page itself ended a session whose media connection failed.
 */
export type ViewerCloseReasonName = ViewerCloseName | 'unknown' | 'webRtcFailed';

/** What the page knows about a closed socket. */
export interface CloseDescription {
  readonly code: number;
  /** The reason text the server sent (may be empty). */
  readonly reason: string;
  readonly reasonName: ViewerCloseReasonName;
  /** The sentence shown to the viewer: the table's for known codes, else the server's reason. */
  readonly sentence: string;
}

/** Describe a close: known codes get the table's sentence; unknown codes show the server's reason. */
export function describeClose(code: number, reason: string): CloseDescription {
  const name = VIEWER_CLOSE_NAME_BY_CODE.get(code);
  if (name !== undefined) {
    return { code, reason, reasonName: name, sentence: VIEWER_CLOSES[name].sentence };
  }
  const text = reason.trim();
  return {
    code,
    reason,
    reasonName: 'unknown',
    sentence: text === '' ? `The connection was closed (code ${code}).` : text,
  };
}
