// The spec's reading rules for a session's telemetry (Resources, Telemetry row), applied to the
// few facts the telemetry repository reads with one index probe each.
import type { DiagnosisFacts } from '../repositories/telemetry-diagnosis';

/**
 * What a session's telemetry says, in the spec's words:
 * - `neverReported`: no rows: the player never reported;
 * - `telemetryExpired`: the player reported, but its rows are older than `retention.telemetryDays`
 *   and were deleted (the session itself is kept longer): nothing left to read. Since the diagnosis
 *   is stored with each batch (repositories/telemetry.ts, migration 20), only sessions whose rows
 *   were gone before then keep this;
 * - `videoDelivered`: framesDecoded rising with FPS above 0; or, with no statistics row to say
 *   otherwise, the relay's witness that video reached the viewer (its receiver reports acknowledged
 *   a whole keyframe: agent relay/video-shown.ts), for a viewer who left before its player reported;
 * - `mediaNeverConnected`: sdpAnswer without connected: the media connection never came up;
 * - `connectedWithoutVideo`: events but framesDecoded never above 0.
 */
export const DIAGNOSES = ['neverReported', 'telemetryExpired', 'mediaNeverConnected', 'connectedWithoutVideo', 'videoDelivered'] as const;
export type Diagnosis = (typeof DIAGNOSES)[number];

/**
 * The rules in order. framesDecoded is cumulative, so the newest statistics row holds its highest
 * value: "never above 0" is that row at 0. "Rising with FPS above 0" is that row above 0 and
 * either above the oldest statistics row or reporting FPS above 0 itself (one row can be both
 * the oldest and the newest).
 */
export function diagnose(facts: DiagnosisFacts): Diagnosis {
  if (!facts.hasRows) return facts.videoShown ? 'videoDelivered' : facts.rowsEverAccepted > 0 ? 'telemetryExpired' : 'neverReported';
  const newest = facts.newestStatistics;
  const oldest = facts.oldestStatistics;
  if (newest !== undefined && newest.framesDecoded > 0 && (newest.fps > 0 || (oldest !== undefined && newest.framesDecoded > oldest.framesDecoded))) {
    return 'videoDelivered';
  }
  // The player's statistics, when there are any, outrank the relay: they saw whether frames decoded.
  if (newest === undefined && facts.videoShown) return 'videoDelivered';
  if (facts.sdpAnswer && !facts.connected) return 'mediaNeverConnected';
  return 'connectedWithoutVideo';
}
