// Converts between generated AgentService types and the agent's domain values. The only agent
// module that knows the generated types (besides the gRPC client in control-link.ts).
import { agentV1 } from '@pixelfleet/proto';
import type { AckPhase, AgentCommand, Codec, CommandAck, DeliveredCommand } from '../commands/command';
import type { SessionEventKind, SessionEventReport, SignalEnvelope } from '../sessions/session-events';
import type { SessionActivityReport } from '../agent-inventory';

const CODEC_FROM_PROTO: Record<agentV1.Codec, Codec> = {
  [agentV1.Codec.CODEC_UNSPECIFIED]: 'H264',
  [agentV1.Codec.CODEC_H264]: 'H264',
  [agentV1.Codec.CODEC_VP8]: 'VP8',
  [agentV1.Codec.CODEC_VP9]: 'VP9',
  [agentV1.Codec.CODEC_AV1]: 'AV1',
  [agentV1.Codec.UNRECOGNIZED]: 'H264',
};

const PHASE_TO_PROTO: Record<AckPhase, agentV1.CommandPhase> = {
  ACCEPTED: agentV1.CommandPhase.COMMAND_PHASE_ACCEPTED,
  IN_PROGRESS: agentV1.CommandPhase.COMMAND_PHASE_IN_PROGRESS,
  SUCCEEDED: agentV1.CommandPhase.COMMAND_PHASE_SUCCEEDED,
  FAILED: agentV1.CommandPhase.COMMAND_PHASE_FAILED,
};

/** A command the agent cannot understand; it is failed with UNKNOWN_COMMAND. */
export class UnknownCommandError extends Error {
  override readonly name = 'UnknownCommandError';
}

export function commandFromProto(c: agentV1.Command): DeliveredCommand {
  const kind = c.kind;
  let command: AgentCommand;
  switch (kind?.$case) {
    case 'startSession':
      command = { kind: 'startSession', ...kind.value, codec: CODEC_FROM_PROTO[kind.value.codec] };
      break;
    case 'stopSession':
      command = { kind: 'stopSession', ...kind.value };
      break;
    case 'prepareBuild':
      command = { kind: 'prepareBuild', ...kind.value };
      break;
    case 'deleteBuild':
      command = { kind: 'deleteBuild', ...kind.value };
      break;
    case undefined:
      throw new UnknownCommandError(`command ${c.commandId} has no kind`);
    default: {
      const unreachable: never = kind;
      throw new UnknownCommandError(`command ${c.commandId} has an unknown kind ${String(unreachable)}`);
    }
  }
  return { seq: c.seq, commandId: c.commandId, connectionEpoch: c.connectionEpoch, notAfterMs: c.notAfter?.getTime(), command };
}

export function ackToProto(a: CommandAck): agentV1.ConnectRequest {
  return { msg: { $case: 'ack', value: { ...a, phase: PHASE_TO_PROTO[a.phase] } } };
}

export interface HelloState {
  workerId: string;
  agentVersion: string;
  region: string;
  slots: number;
  lastAckedSeq: number;
  runningSessions: { sessionId: string; projectId: string; startedAtMs: number }[];
  cachedBuilds: { uploadId: string; sha256: string; ready: boolean }[];
}

export function helloToProto(h: HelloState): agentV1.ConnectRequest {
  return {
    msg: {
      $case: 'hello',
      value: {
        workerId: h.workerId,
        agentVersion: h.agentVersion,
        region: h.region,
        slots: h.slots,
        lastAckedSeq: h.lastAckedSeq,
        runningSessions: h.runningSessions.map((r) => ({ sessionId: r.sessionId, projectId: r.projectId, startedAt: new Date(r.startedAtMs) })),
        cachedBuilds: h.cachedBuilds,
      },
    },
  };
}

export interface HeartbeatState {
  runningSessions: number;
  activity: SessionActivityReport[];
}

export function heartbeatToProto(h: HeartbeatState): agentV1.ConnectRequest {
  return {
    msg: {
      $case: 'heartbeat',
      value: {
        sentAt: new Date(),
        runningSessions: h.runningSessions,
        sessionActivity: h.activity.map((a) => ({
          sessionId: a.sessionId,
          lastInputAt: a.lastInputAtMs === undefined ? undefined : new Date(a.lastInputAtMs),
          relay: a.relay === undefined ? undefined : { ...a.relay },
        })),
      },
    },
  };
}

const EVENT_TO_PROTO: Record<SessionEventKind, agentV1.SessionEventKind> = {
  appStarted: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_STARTED,
  appIdentified: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_IDENTIFIED,
  viewerConnected: agentV1.SessionEventKind.SESSION_EVENT_KIND_VIEWER_CONNECTED,
  viewerDisconnected: agentV1.SessionEventKind.SESSION_EVENT_KIND_VIEWER_DISCONNECTED,
  launchFailed: agentV1.SessionEventKind.SESSION_EVENT_KIND_LAUNCH_FAILED,
  appExited: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_EXITED,
  appStopped: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_STOPPED,
  appDisconnectedViewer: agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_DISCONNECTED_VIEWER,
};

export function sessionEventToProto(e: SessionEventReport): agentV1.ConnectRequest {
  return {
    msg: {
      $case: 'sessionEvent',
      value: {
        sessionId: e.sessionId,
        kind: EVENT_TO_PROTO[e.kind],
        occurredAt: new Date(e.occurredAtMs),
        exitCode: e.exitCode ?? 0,
        message: e.message ?? '',
        streamingId: e.streamingId ?? '',
      },
    },
  };
}

export function signalToProto(s: SignalEnvelope): agentV1.ConnectRequest {
  return { msg: { $case: 'signal', value: { sessionId: s.sessionId, playerId: s.playerId, json: s.json } } };
}
