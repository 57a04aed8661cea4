// What a session is called and how it is recorded: the ids derived from its session id (known from
// the start, so every snapshot carries them) and the spec's snapshot `data`.
import { isRegionCode, regionDisplayName } from '@pixelfleet/proto';
import type { SessionRecord, SnapshotData } from '../repositories/sessions';

const SESSION_ID_PREFIX = 'session_';

/** The Pixel Streaming streamer id a session's app is launched with. */
export function streamingIdOf(sessionId: string): string {
  return `streamer_${sessionId.slice(SESSION_ID_PREFIX.length)}`;
}

/** The Pixel Streaming player id of a session's one viewer. */
export function playerIdOf(sessionId: string): string {
  return `player_${sessionId.slice(SESSION_ID_PREFIX.length)}`;
}

/** The spec's snapshot `data` for a session in its current state. */
export function snapshotOf(s: SessionRecord): SnapshotData {
  const data: SnapshotData = {
    sessionId: s.sessionId,
    projectId: s.projectId,
    status: s.status,
    region: isRegionCode(s.region) ? regionDisplayName(s.region) : s.region,
  };
  if (s.assignedWorker !== undefined) data.assignedWorker = s.assignedWorker;
  if (s.streamingId !== undefined) data.streamingId = s.streamingId;
  if (s.playerId !== undefined) data.playerId = s.playerId;
  if (s.maxRunTime !== undefined) data.maxRunTime = s.maxRunTime;
  return data;
}
