// Domain shapes of what flows on an agent's Connect stream. The gRPC edge converts these
// to and from the generated proto types (grpc/agent-mapping.ts); nothing else sees those.

export type Codec = 'H264' | 'VP8' | 'VP9' | 'AV1';

export type AgentCommand =
  | {
      kind: 'startSession';
      sessionId: string;
      projectId: string;
      uploadId: string;
      streamingId: string;
      playerId: string;
      codec: Codec;
      minBitrateBps: number;
      maxBitrateBps: number;
      resX: number;
      resY: number;
      fps: number;
      launchArgs: string[];
      maxRunTimeMinutes: number;
      startupTimeoutSeconds: number;
    }
  | { kind: 'stopSession'; sessionId: string; reason: string; graceMs: number }
  | { kind: 'prepareBuild'; uploadId: string; projectId: string; downloadUrl: string; sizeBytes: number; sha256: string }
  | { kind: 'deleteBuild'; uploadId: string };

export type AgentCommandKind = AgentCommand['kind'];

export interface SignalEnvelope {
  sessionId: string;
  playerId: string;
  json: string;
}

/** Control plane → agent. */
export type ToAgent =
  | { type: 'welcome'; connectionEpoch: number; heartbeatIntervalMs: number; leaseTtlMs: number; serverTimeMs: number; draining: boolean }
  | { type: 'command'; seq: number; commandId: string; connectionEpoch: number; notAfterMs: number | undefined; command: AgentCommand }
  | { type: 'drainNotice'; draining: boolean }
  | { type: 'signal'; signal: SignalEnvelope };

export interface AgentHello {
  workerId: string;
  agentVersion: string;
  region: string;
  slots: number;
  lastAckedSeq: number;
  runningSessions: { sessionId: string; projectId: string; startedAtMs: number | undefined }[];
  cachedBuilds: { uploadId: string; sha256: string; ready: boolean }[];
}

export type AckPhase = 'ACCEPTED' | 'IN_PROGRESS' | 'SUCCEEDED' | 'FAILED';

export interface AgentAck {
  seq: number;
  commandId: string;
  phase: AckPhase;
  errorCode: string;
  errorMessage: string;
  progressPercent: number;
}

export type SessionEventKind =
  | 'appStarted'
  | 'appIdentified'
  | 'viewerConnected'
  | 'viewerDisconnected'
  | 'launchFailed'
  | 'appExited'
  | 'appStopped'
  /** The app asked to drop the viewer (`disconnectPlayer`); message is its reason ('' for none). */
  | 'appDisconnectedViewer';

export interface AgentSessionEvent {
  sessionId: string;
  kind: SessionEventKind;
  occurredAtMs: number | undefined;
  exitCode: number;
  message: string;
  streamingId: string;
}

/** The latest viewer input a worker saw for one of its sessions (agent clock), and its relay's totals. */
export interface SessionActivity {
  sessionId: string;
  lastInputAtMs: number | undefined;
  /** Undefined from an agent whose session has no relay yet (or an older agent). */
  relay: RelayCounters | undefined;
}

/** One session relay's totals so far, as the agent counts them (for the fleet's metrics). */
export interface RelayCounters {
  keyframeRequestsMade: number;
  keyframeRequestsToApp: number;
  keyframeRequestsCoalesced: number;
  ingestPacketsMissing: number;
  ingestPacketsAbandoned: number;
  viewerPacketsResent: number;
  viewerNackMisses: number;
  rembBps: number;
}

/** Agent → control plane, after the Hello. */
export type FromAgent =
  | { type: 'heartbeat'; sentAtMs: number | undefined; runningSessions: number; activity: SessionActivity[] }
  | { type: 'ack'; ack: AgentAck }
  | { type: 'sessionEvent'; event: AgentSessionEvent }
  | { type: 'signal'; signal: SignalEnvelope };
