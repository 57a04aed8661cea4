// What the agent reports about its sessions to the control plane, and the signalling
// envelope relayed between a viewer and the session's relay.

export type SessionEventKind =
  | 'appStarted'
  | 'appIdentified'
  | 'viewerConnected'
  | 'viewerDisconnected'
  | 'launchFailed'
  | 'appExited'
  | 'appStopped'
  /** The app sent `disconnectPlayer` for the viewer's player; message is its reason ('' for none). */
  | 'appDisconnectedViewer';

export interface SessionEventReport {
  sessionId: string;
  kind: SessionEventKind;
  occurredAtMs: number;
  /** Process exit code on appExited/appStopped; -1 when killed by a signal. */
  exitCode?: number;
  message?: string;
  /** The streamer id the app identified with, on appIdentified. */
  streamingId?: string;
}

export interface SignalEnvelope {
  sessionId: string;
  playerId: string;
  /** One signalling message, JSON text. */
  json: string;
}
