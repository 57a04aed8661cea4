// The agent's domain view of control-plane commands and their acks. The gRPC edge
// (link/mapping.ts) converts to and from the generated types.

export type Codec = 'H264' | 'VP8' | 'VP9' | 'AV1';

export interface StartSessionCommand {
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

export interface StopSessionCommand {
  kind: 'stopSession';
  sessionId: string;
  reason: string;
  graceMs: number;
}

export interface PrepareBuildCommand {
  kind: 'prepareBuild';
  uploadId: string;
  projectId: string;
  downloadUrl: string;
  sizeBytes: number;
  sha256: string;
}

export interface DeleteBuildCommand {
  kind: 'deleteBuild';
  uploadId: string;
}

export type AgentCommand = StartSessionCommand | StopSessionCommand | PrepareBuildCommand | DeleteBuildCommand;

/** A command as delivered on the Connect stream. */
export interface DeliveredCommand {
  seq: number;
  commandId: string;
  connectionEpoch: number;
  notAfterMs: number | undefined;
  command: AgentCommand;
}

export type AckPhase = 'ACCEPTED' | 'IN_PROGRESS' | 'SUCCEEDED' | 'FAILED';

export interface CommandAck {
  seq: number;
  commandId: string;
  phase: AckPhase;
  errorCode: string;
  errorMessage: string;
  progressPercent: number;
}

/** A handler's refusal with a stable code the control plane can act on. */
export class CommandFailure extends Error {
  override readonly name = 'CommandFailure';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the agent does for each command kind. Handlers must be idempotent by their key. */
export interface CommandHandlers {
  startSession(c: StartSessionCommand): Promise<void>;
  stopSession(c: StopSessionCommand): Promise<void>;
  prepareBuild(c: PrepareBuildCommand, progress: (percent: number) => void): Promise<void>;
  deleteBuild(c: DeleteBuildCommand): Promise<void>;
}
