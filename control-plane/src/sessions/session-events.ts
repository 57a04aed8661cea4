// What the session lifecycle tells its listeners (the viewer gateway): event → its listeners'
// arguments. Emitted by the lifecycle (session-service.ts) and by what workers report
// (worker-events.ts), so it lives beside both rather than in either.
import type { RelayToViewerSignal } from '@pixelfleet/signaling';
import type { SessionRecord } from '../repositories/sessions';
import type { ViewerClose } from './session-end';

/** What the viewer gateway hears about sessions: event → its listeners' arguments. */
export type SessionEvents = {
  /** The line of a project changed (someone joined, left or was placed). */
  queueChanged: [projectId: string];
  /** The session was placed on a worker. */
  placed: [session: SessionRecord];
  /** The app identified itself: viewers may subscribe to this streamer id. */
  streamerReady: [session: SessionRecord, streamerId: string];
  running: [session: SessionRecord];
  /** The session is over for its viewer (it may still be Terminating on the worker). */
  ended: [session: SessionRecord, close: ViewerClose];
  /** The relay first saw video reach the session's viewer (its receiver reports acknowledged a whole keyframe). */
  videoShown: [session: SessionRecord, atMs: number];
  /** A signalling message from the session's relay to its viewer, decoded and checked. */
  signal: [sessionId: string, signal: RelayToViewerSignal];
};
