// The agent contract in domain terms, once for both ends of the Connect stream: what the control
// plane sends (welcome, commands, drain notices, signals) and what the agent sends (hello,
// heartbeats, acks, session events, signals), with the one pair of to/from-proto functions per
// message. Generated types stop here: the control plane and the agent see only these shapes.
import * as agentV1 from './gen/pixelfleet/agent/v1/agent';

/** Video codecs a project may stream with, as the settings API and the agent write them. */
export const CODECS = ['H264', 'VP8', 'VP9', 'AV1'] as const;
export type Codec = (typeof CODECS)[number];

// The command kinds are the proto's messages (their fields documented in agent.proto), tagged
// with `kind`; only the codec is a domain value.
export type StartSessionCommand = { kind: 'startSession' } & Omit<agentV1.StartSession, 'codec'> & { codec: Codec };
export type StopSessionCommand = { kind: 'stopSession' } & agentV1.StopSession;
export type PrepareBuildCommand = { kind: 'prepareBuild' } & agentV1.PrepareBuild;
export type DeleteBuildCommand = { kind: 'deleteBuild' } & agentV1.DeleteBuild;

export type AgentCommand = StartSessionCommand | StopSessionCommand | PrepareBuildCommand | DeleteBuildCommand;
export type AgentCommandKind = AgentCommand['kind'];

/** A command as delivered on the Connect stream. */
export interface DeliveredCommand {
  seq: number;
  commandId: string;
  connectionEpoch: number;
  /** After this time (ms since the epoch) the command is stale; undefined: no deadline. */
  notAfterMs: number | undefined;
  command: AgentCommand;
}

export type AckPhase = 'ACCEPTED' | 'IN_PROGRESS' | 'SUCCEEDED' | 'FAILED';

export interface AgentAck {
  seq: number;
  commandId: string;
  phase: AckPhase;
  /** Stable machine-readable reason on FAILED (`STALE`, `UNKNOWN_COMMAND`, …); '' otherwise. */
  errorCode: string;
  errorMessage: string;
  /** 0–100 while IN_PROGRESS. */
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
  /** The app sent `disconnectPlayer` for the viewer's player; message is its reason ('' for none). */
  | 'appDisconnectedViewer'
  /** Video reached the viewer: its receiver reports acknowledged a whole keyframe (once per session). */
  | 'videoShown';

export interface AgentSessionEvent {
  sessionId: string;
  kind: SessionEventKind;
  /** Agent clock, ms since the epoch; undefined only when a peer left it unset. */
  occurredAtMs: number | undefined;
  /** Process exit code on appExited/appStopped (-1 when killed by a signal); 0 otherwise. */
  exitCode: number;
  /** Detail for humans; '' for none. */
  message: string;
  /** The streamer id the app identified with, on appIdentified; '' otherwise. */
  streamingId: string;
}

/** One Pixel Streaming signalling message between a viewer and a session's relay. */
export interface SignalEnvelope {
  sessionId: string;
  playerId: string;
  /** One signalling message, JSON text exactly as on the WebSocket. */
  json: string;
}

/** One session relay's totals so far (the fleet's metrics): loss and repair, keyframe requests, bitrate (fields in agent.proto). */
export type RelayCounters = agentV1.RelayCounters;

/** The latest viewer input a worker saw for one of its sessions (agent clock), and its relay's totals. */
export interface SessionActivity {
  sessionId: string;
  lastInputAtMs: number | undefined;
  /** Undefined before the session has a relay (or from an older agent). */
  relay: RelayCounters | undefined;
}

export interface RunningSession {
  sessionId: string;
  projectId: string;
  startedAtMs: number | undefined;
}

/** A build in the agent's cache (fields in agent.proto). */
export type CachedBuild = agentV1.CachedBuild;

/** The agent's whole state, first on every stream (fields in agent.proto; times in ms since the epoch). */
export type AgentHello = Omit<agentV1.Hello, 'runningSessions'> & { runningSessions: RunningSession[] };

export interface Heartbeat {
  /** Agent clock when sent, ms since the epoch. */
  sentAtMs: number | undefined;
  runningSessions: number;
  activity: SessionActivity[];
}

export interface Welcome {
  connectionEpoch: number;
  heartbeatIntervalMs: number;
  leaseTtlMs: number;
  /** Control plane clock when sent, ms since the epoch. */
  serverTimeMs: number | undefined;
  draining: boolean;
}

/** Control plane → agent. */
export type ToAgent =
  | ({ type: 'welcome' } & Welcome)
  | ({ type: 'command' } & DeliveredCommand)
  | { type: 'drainNotice'; draining: boolean }
  | { type: 'signal'; signal: SignalEnvelope };

/** Agent → control plane, after the Hello. */
export type FromAgent =
  | ({ type: 'heartbeat' } & Heartbeat)
  | { type: 'ack'; ack: AgentAck }
  | { type: 'sessionEvent'; event: AgentSessionEvent }
  | { type: 'signal'; signal: SignalEnvelope };

/**
 * A message that does not decode: no kind, an unknown enum value, a Hello out of place. `code`
 * is what the agent fails a command with (`UNKNOWN_COMMAND`, `UNSUPPORTED_CODEC`); the control
 * plane ends the stream with the message. Never thrown for anything a peer could not send.
 */
export class AgentContractError extends Error {
  override readonly name = 'AgentContractError';
  constructor(
    readonly code: 'UNKNOWN_COMMAND' | 'UNSUPPORTED_CODEC' | 'INVALID_MESSAGE',
    message: string,
  ) {
    super(message);
  }
}

const CODEC_TO_PROTO: Record<Codec, agentV1.Codec> = {
  H264: agentV1.Codec.CODEC_H264,
  VP8: agentV1.Codec.CODEC_VP8,
  VP9: agentV1.Codec.CODEC_VP9,
  AV1: agentV1.Codec.CODEC_AV1,
};

/** UNSPECIFIED is H264, as the proto says; UNRECOGNIZED (a newer sender's codec) is absent. */
const CODEC_FROM_PROTO: Partial<Record<agentV1.Codec, Codec>> = {
  [agentV1.Codec.CODEC_UNSPECIFIED]: 'H264',
  [agentV1.Codec.CODEC_H264]: 'H264',
  [agentV1.Codec.CODEC_VP8]: 'VP8',
  [agentV1.Codec.CODEC_VP9]: 'VP9',
  [agentV1.Codec.CODEC_AV1]: 'AV1',
};

const PHASE_TO_PROTO: Record<AckPhase, agentV1.CommandPhase> = {
  ACCEPTED: agentV1.CommandPhase.COMMAND_PHASE_ACCEPTED,
  IN_PROGRESS: agentV1.CommandPhase.COMMAND_PHASE_IN_PROGRESS,
  SUCCEEDED: agentV1.CommandPhase.COMMAND_PHASE_SUCCEEDED,
  FAILED: agentV1.CommandPhase.COMMAND_PHASE_FAILED,
};

const EVENT_TO_PROTO: Record<SessionEventKind, agentV1.SessionEventKind> = {
  appStarted: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_STARTED,
  appIdentified: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_IDENTIFIED,
  viewerConnected: agentV1.SessionEventKind.SESSION_EVENT_KIND_VIEWER_CONNECTED,
  viewerDisconnected: agentV1.SessionEventKind.SESSION_EVENT_KIND_VIEWER_DISCONNECTED,
  launchFailed: agentV1.SessionEventKind.SESSION_EVENT_KIND_LAUNCH_FAILED,
  appExited: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_EXITED,
  appStopped: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_STOPPED,
  appDisconnectedViewer: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_DISCONNECTED_VIEWER,
  videoShown: agentV1.SessionEventKind.SESSION_EVENT_KIND_VIDEO_SHOWN,
};

function inverse<K extends string, V extends number>(table: Record<K, V>): Partial<Record<V, K>> {
  const out: Partial<Record<V, K>> = {};
  for (const [k, v] of Object.entries(table) as [K, V][]) out[v] = k;
  return out;
}

const PHASE_FROM_PROTO = inverse(PHASE_TO_PROTO);
const EVENT_FROM_PROTO = inverse(EVENT_TO_PROTO);

const dateOf = (ms: number | undefined): Date | undefined => (ms === undefined ? undefined : new Date(ms));

/** The command's kind alone, as the proto's oneof (also the stored form, see stored-command.ts). */
export function agentCommandToProto(c: AgentCommand): NonNullable<agentV1.Command['kind']> {
  switch (c.kind) {
    case 'startSession': {
      const { kind: _kind, codec, ...fields } = c;
      return { $case: 'startSession', value: { ...fields, launchArgs: [...fields.launchArgs], codec: CODEC_TO_PROTO[codec] } };
    }
    case 'stopSession':
      return { $case: 'stopSession', value: { sessionId: c.sessionId, reason: c.reason, graceMs: c.graceMs } };
    case 'prepareBuild':
      return { $case: 'prepareBuild', value: { uploadId: c.uploadId, projectId: c.projectId, downloadUrl: c.downloadUrl, sizeBytes: c.sizeBytes, sha256: c.sha256 } };
    case 'deleteBuild':
      return { $case: 'deleteBuild', value: { uploadId: c.uploadId } };
    default: {
      const unreachable: never = c;
      throw new Error(`unknown command ${String(unreachable)}`);
    }
  }
}

/**
 * The command's kind as a domain value.
 * @throws AgentContractError UNKNOWN_COMMAND (no kind), UNSUPPORTED_CODEC (a codec this version does not know).
 */
export function agentCommandFromProto(kind: agentV1.Command['kind'], commandId: string): AgentCommand {
  switch (kind?.$case) {
    case 'startSession': {
      const codec = CODEC_FROM_PROTO[kind.value.codec];
      if (codec === undefined) throw new AgentContractError('UNSUPPORTED_CODEC', `command ${commandId} names codec ${String(kind.value.codec)}, which this version does not know`);
      return { kind: 'startSession', ...kind.value, launchArgs: [...kind.value.launchArgs], codec };
    }
    case 'stopSession':
      return { kind: 'stopSession', sessionId: kind.value.sessionId, reason: kind.value.reason, graceMs: kind.value.graceMs };
    case 'prepareBuild':
      return { kind: 'prepareBuild', uploadId: kind.value.uploadId, projectId: kind.value.projectId, downloadUrl: kind.value.downloadUrl, sizeBytes: kind.value.sizeBytes, sha256: kind.value.sha256 };
    case 'deleteBuild':
      return { kind: 'deleteBuild', uploadId: kind.value.uploadId };
    case undefined:
      throw new AgentContractError('UNKNOWN_COMMAND', `command ${commandId} has no kind`);
    default: {
      const unreachable: never = kind;
      throw new AgentContractError('UNKNOWN_COMMAND', `command ${commandId} has an unknown kind ${String(unreachable)}`);
    }
  }
}

export function commandToProto(c: DeliveredCommand): agentV1.Command {
  return { seq: c.seq, commandId: c.commandId, connectionEpoch: c.connectionEpoch, notAfter: dateOf(c.notAfterMs), kind: agentCommandToProto(c.command) };
}

/** @throws AgentContractError (see agentCommandFromProto). */
export function commandFromProto(c: agentV1.Command): DeliveredCommand {
  return { seq: c.seq, commandId: c.commandId, connectionEpoch: c.connectionEpoch, notAfterMs: c.notAfter?.getTime(), command: agentCommandFromProto(c.kind, c.commandId) };
}

export function ackToProto(a: AgentAck): agentV1.CommandAck {
  return { seq: a.seq, commandId: a.commandId, phase: PHASE_TO_PROTO[a.phase], errorCode: a.errorCode, errorMessage: a.errorMessage, progressPercent: a.progressPercent };
}

/** @throws AgentContractError when the phase is unset or unknown. */
export function ackFromProto(a: agentV1.CommandAck): AgentAck {
  const phase = PHASE_FROM_PROTO[a.phase];
  if (phase === undefined) throw new AgentContractError('INVALID_MESSAGE', `ack for ${a.commandId} has no valid phase`);
  return { seq: a.seq, commandId: a.commandId, phase, errorCode: a.errorCode, errorMessage: a.errorMessage, progressPercent: a.progressPercent };
}

export function sessionEventToProto(e: AgentSessionEvent): agentV1.SessionEvent {
  return { sessionId: e.sessionId, kind: EVENT_TO_PROTO[e.kind], occurredAt: dateOf(e.occurredAtMs), exitCode: e.exitCode, message: e.message, streamingId: e.streamingId };
}

/** @throws AgentContractError when the kind is unset or unknown. */
export function sessionEventFromProto(e: agentV1.SessionEvent): AgentSessionEvent {
  const kind = EVENT_FROM_PROTO[e.kind];
  if (kind === undefined) throw new AgentContractError('INVALID_MESSAGE', `session event for ${e.sessionId} has no valid kind`);
  return { sessionId: e.sessionId, kind, occurredAtMs: e.occurredAt?.getTime(), exitCode: e.exitCode, message: e.message, streamingId: e.streamingId };
}

export function signalToProto(s: SignalEnvelope): agentV1.SignalMessage {
  return { sessionId: s.sessionId, playerId: s.playerId, json: s.json };
}

export function signalFromProto(s: agentV1.SignalMessage): SignalEnvelope {
  return { sessionId: s.sessionId, playerId: s.playerId, json: s.json };
}

export function helloToProto(h: AgentHello): agentV1.Hello {
  return {
    workerId: h.workerId,
    agentVersion: h.agentVersion,
    region: h.region,
    slots: h.slots,
    lastAckedSeq: h.lastAckedSeq,
    runningSessions: h.runningSessions.map((r) => ({ sessionId: r.sessionId, projectId: r.projectId, startedAt: dateOf(r.startedAtMs) })),
    cachedBuilds: h.cachedBuilds.map((b) => ({ uploadId: b.uploadId, sha256: b.sha256, ready: b.ready })),
    hostname: h.hostname,
    instanceId: h.instanceId,
  };
}

export function helloFromProto(h: agentV1.Hello): AgentHello {
  return {
    workerId: h.workerId,
    agentVersion: h.agentVersion,
    region: h.region,
    slots: h.slots,
    lastAckedSeq: h.lastAckedSeq,
    runningSessions: h.runningSessions.map((r) => ({ sessionId: r.sessionId, projectId: r.projectId, startedAtMs: r.startedAt?.getTime() })),
    cachedBuilds: h.cachedBuilds.map((b) => ({ uploadId: b.uploadId, sha256: b.sha256, ready: b.ready })),
    hostname: h.hostname,
    instanceId: h.instanceId,
  };
}

export function heartbeatToProto(h: Heartbeat): agentV1.Heartbeat {
  return {
    sentAt: dateOf(h.sentAtMs),
    runningSessions: h.runningSessions,
    sessionActivity: h.activity.map((a) => ({ sessionId: a.sessionId, lastInputAt: dateOf(a.lastInputAtMs), relay: a.relay === undefined ? undefined : { ...a.relay } })),
  };
}

export function heartbeatFromProto(h: agentV1.Heartbeat): Heartbeat {
  return {
    sentAtMs: h.sentAt?.getTime(),
    runningSessions: h.runningSessions,
    activity: h.sessionActivity.map((a) => ({ sessionId: a.sessionId, lastInputAtMs: a.lastInputAt?.getTime(), relay: a.relay === undefined ? undefined : { ...a.relay } })),
  };
}

export function welcomeToProto(w: Welcome): agentV1.Welcome {
  return { connectionEpoch: w.connectionEpoch, heartbeatIntervalMs: w.heartbeatIntervalMs, leaseTtlMs: w.leaseTtlMs, serverTime: dateOf(w.serverTimeMs), draining: w.draining };
}

export function welcomeFromProto(w: agentV1.Welcome): Welcome {
  return { connectionEpoch: w.connectionEpoch, heartbeatIntervalMs: w.heartbeatIntervalMs, leaseTtlMs: w.leaseTtlMs, serverTimeMs: w.serverTime?.getTime(), draining: w.draining };
}

export function toAgentToProto(m: ToAgent): agentV1.ConnectResponse {
  switch (m.type) {
    case 'welcome':
      return { msg: { $case: 'welcome', value: welcomeToProto(m) } };
    case 'command':
      return { msg: { $case: 'command', value: commandToProto(m) } };
    case 'drainNotice':
      return { msg: { $case: 'drainNotice', value: { draining: m.draining } } };
    case 'signal':
      return { msg: { $case: 'signal', value: signalToProto(m.signal) } };
    default: {
      const unreachable: never = m;
      throw new Error(`unknown message ${String(unreachable)}`);
    }
  }
}

/** @throws AgentContractError for an empty message or a command that does not decode. */
export function toAgentFromProto(m: agentV1.ConnectResponse): ToAgent {
  const msg = m.msg;
  switch (msg?.$case) {
    case 'welcome':
      return { type: 'welcome', ...welcomeFromProto(msg.value) };
    case 'command':
      return { type: 'command', ...commandFromProto(msg.value) };
    case 'drainNotice':
      return { type: 'drainNotice', draining: msg.value.draining };
    case 'signal':
      return { type: 'signal', signal: signalFromProto(msg.value) };
    case undefined:
      throw new AgentContractError('INVALID_MESSAGE', 'empty message');
    default: {
      const unreachable: never = msg;
      throw new AgentContractError('INVALID_MESSAGE', `unknown message ${String(unreachable)}`);
    }
  }
}

export function fromAgentToProto(m: FromAgent): agentV1.ConnectRequest {
  switch (m.type) {
    case 'heartbeat':
      return { msg: { $case: 'heartbeat', value: heartbeatToProto(m) } };
    case 'ack':
      return { msg: { $case: 'ack', value: ackToProto(m.ack) } };
    case 'sessionEvent':
      return { msg: { $case: 'sessionEvent', value: sessionEventToProto(m.event) } };
    case 'signal':
      return { msg: { $case: 'signal', value: signalToProto(m.signal) } };
    default: {
      const unreachable: never = m;
      throw new Error(`unknown message ${String(unreachable)}`);
    }
  }
}

/** Everything after the Hello. @throws AgentContractError for a second Hello, an empty message or one that does not decode. */
export function fromAgentFromProto(m: agentV1.ConnectRequest): FromAgent {
  const msg = m.msg;
  switch (msg?.$case) {
    case 'heartbeat':
      return { type: 'heartbeat', ...heartbeatFromProto(msg.value) };
    case 'ack':
      return { type: 'ack', ack: ackFromProto(msg.value) };
    case 'sessionEvent':
      return { type: 'sessionEvent', event: sessionEventFromProto(msg.value) };
    case 'signal':
      return { type: 'signal', signal: signalFromProto(msg.value) };
    case 'hello':
      throw new AgentContractError('INVALID_MESSAGE', 'Hello may only be the first message of a stream');
    case undefined:
      throw new AgentContractError('INVALID_MESSAGE', 'empty message');
    default: {
      const unreachable: never = msg;
      throw new AgentContractError('INVALID_MESSAGE', `unknown message ${String(unreachable)}`);
    }
  }
}
