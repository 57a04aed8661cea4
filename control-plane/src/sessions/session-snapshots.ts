// What a session is called, how it is recorded and what its worker is told: the ids derived from its
// session id (known from the start, so every snapshot carries them), a new viewer's record, the
// spec's snapshot `data`, and the StartSession command that launches its app with the project's settings.
import { isRegionCode, regionDisplayName, type StartSessionCommand } from '@pixelfleet/proto';
import type { Project } from '../repositories/projects';
import type { ClientDimensions } from '../repositories/session-dimensions';
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

/** A new viewer's session, Enqueued in the project's region with the project's run time. */
export function enqueuedSession(sessionId: string, project: Project, now: number, client: ClientDimensions | undefined): SessionRecord {
  return {
    sessionId,
    projectId: project.projectId,
    region: project.region,
    status: 'Enqueued',
    assignedWorker: undefined,
    // Known from the start (the app is launched with it), so every snapshot carries it.
    streamingId: streamingIdOf(sessionId),
    playerId: playerIdOf(sessionId),
    maxRunTime: project.settings.maxRunTime,
    endReason: undefined,
    createdAt: now,
    updatedAt: now,
    ...(client === undefined ? {} : { client }),
  };
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

/** What the worker a session was placed on is told: launch the project's live build with its settings. */
export function startSessionCommand(placed: SessionRecord, project: Project): StartSessionCommand {
  const settings = project.settings;
  return {
    kind: 'startSession',
    sessionId: placed.sessionId,
    projectId: placed.projectId,
    uploadId: project.liveUploadId ?? '',
    streamingId: placed.streamingId ?? streamingIdOf(placed.sessionId),
    playerId: placed.playerId ?? '',
    codec: settings.codec,
    minBitrateBps: settings.minBitrate,
    maxBitrateBps: settings.maxBitrate,
    resX: settings.resX,
    resY: settings.resY,
    fps: settings.fps,
    launchArgs: [...settings.launchArgs],
    maxRunTimeMinutes: settings.maxRunTime,
    startupTimeoutSeconds: settings.startupTimeoutSeconds,
    // A warm instance's relay takes its app's video from its identification, so the viewer who claims
    // it joins a running stream: measured 250–300 ms sooner to the first frame than subscribing at
    // the claim (docs/streaming.md "Warm pools", bench:stream (e)).
    warm: placed.pooled === true,
  };
}
