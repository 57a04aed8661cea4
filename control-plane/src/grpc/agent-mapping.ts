// Converts between generated AgentService types and the registry's domain messages.
// The only control-plane module (with admin-mapping.ts) that knows the generated types.
import { agentV1 } from '@pixelfleet/proto';
import type {
  AckPhase,
  AgentCommand,
  AgentHello,
  AgentSessionEvent,
  Codec,
  FromAgent,
  SessionEventKind,
  ToAgent,
} from '../workers/agent-messages';
import type { LogUploadPart } from '../sessions/log-uploads';

const CODEC_TO_PROTO: Record<Codec, agentV1.Codec> = {
  H264: agentV1.Codec.CODEC_H264,
  VP8: agentV1.Codec.CODEC_VP8,
  VP9: agentV1.Codec.CODEC_VP9,
  AV1: agentV1.Codec.CODEC_AV1,
};

const PHASE_FROM_PROTO: Partial<Record<agentV1.CommandPhase, AckPhase>> = {
  [agentV1.CommandPhase.COMMAND_PHASE_ACCEPTED]: 'ACCEPTED',
  [agentV1.CommandPhase.COMMAND_PHASE_IN_PROGRESS]: 'IN_PROGRESS',
  [agentV1.CommandPhase.COMMAND_PHASE_SUCCEEDED]: 'SUCCEEDED',
  [agentV1.CommandPhase.COMMAND_PHASE_FAILED]: 'FAILED',
};

const EVENT_FROM_PROTO: Partial<Record<agentV1.SessionEventKind, SessionEventKind>> = {
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_STARTED]: 'appStarted',
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_IDENTIFIED]: 'appIdentified',
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_VIEWER_CONNECTED]: 'viewerConnected',
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_VIEWER_DISCONNECTED]: 'viewerDisconnected',
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_LAUNCH_FAILED]: 'launchFailed',
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_EXITED]: 'appExited',
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_STOPPED]: 'appStopped',
  [agentV1.SessionEventKind.SESSION_EVENT_KIND_APP_DISCONNECTED_VIEWER]: 'appDisconnectedViewer',
};

/** A message the agent sent that cannot be understood; the stream is ended with its text. */
export class AgentProtocolError extends Error {
  override readonly name = 'AgentProtocolError';
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
  };
}

/** Everything after the Hello. A second Hello or an empty message is a protocol error. */
export function fromAgentProto(m: agentV1.ConnectRequest): FromAgent {
  const msg = m.msg;
  switch (msg?.$case) {
    case 'heartbeat':
      return {
        type: 'heartbeat',
        sentAtMs: msg.value.sentAt?.getTime(),
        runningSessions: msg.value.runningSessions,
        activity: msg.value.sessionActivity.map((a) => ({ sessionId: a.sessionId, lastInputAtMs: a.lastInputAt?.getTime(), relay: a.relay === undefined ? undefined : { ...a.relay } })),
      };
    case 'ack': {
      const phase = PHASE_FROM_PROTO[msg.value.phase];
      if (!phase) throw new AgentProtocolError(`ack for ${msg.value.commandId} has no valid phase`);
      return {
        type: 'ack',
        ack: { seq: msg.value.seq, commandId: msg.value.commandId, phase, errorCode: msg.value.errorCode, errorMessage: msg.value.errorMessage, progressPercent: msg.value.progressPercent },
      };
    }
    case 'sessionEvent': {
      const kind = EVENT_FROM_PROTO[msg.value.kind];
      if (!kind) throw new AgentProtocolError(`session event for ${msg.value.sessionId} has no valid kind`);
      const event: AgentSessionEvent = {
        sessionId: msg.value.sessionId,
        kind,
        occurredAtMs: msg.value.occurredAt?.getTime(),
        exitCode: msg.value.exitCode,
        message: msg.value.message,
        streamingId: msg.value.streamingId,
      };
      return { type: 'sessionEvent', event };
    }
    case 'signal':
      return { type: 'signal', signal: { sessionId: msg.value.sessionId, playerId: msg.value.playerId, json: msg.value.json } };
    case 'hello':
      throw new AgentProtocolError('Hello may only be the first message of a stream');
    case undefined:
      throw new AgentProtocolError('empty message');
    default: {
      const unreachable: never = msg;
      throw new AgentProtocolError(`unknown message ${String(unreachable)}`);
    }
  }
}

function commandKindToProto(c: AgentCommand): agentV1.Command['kind'] {
  switch (c.kind) {
    case 'startSession': {
      const { kind: _kind, codec, ...fields } = c;
      return { $case: 'startSession', value: { ...fields, codec: CODEC_TO_PROTO[codec] } };
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

export function toAgentProto(m: ToAgent): agentV1.ConnectResponse {
  switch (m.type) {
    case 'welcome':
      return {
        msg: {
          $case: 'welcome',
          value: {
            connectionEpoch: m.connectionEpoch,
            heartbeatIntervalMs: m.heartbeatIntervalMs,
            leaseTtlMs: m.leaseTtlMs,
            serverTime: new Date(m.serverTimeMs),
            draining: m.draining,
          },
        },
      };
    case 'command':
      return {
        msg: {
          $case: 'command',
          value: {
            seq: m.seq,
            commandId: m.commandId,
            connectionEpoch: m.connectionEpoch,
            notAfter: m.notAfterMs === undefined ? undefined : new Date(m.notAfterMs),
            kind: commandKindToProto(m.command),
          },
        },
      };
    case 'drainNotice':
      return { msg: { $case: 'drainNotice', value: { draining: m.draining } } };
    case 'signal':
      return { msg: { $case: 'signal', value: m.signal } };
    default: {
      const unreachable: never = m;
      throw new Error(`unknown message ${String(unreachable)}`);
    }
  }
}

/** The parts of a log upload stream as domain values; an empty part is a protocol error. */
export async function* logUploadParts(requests: AsyncIterable<agentV1.UploadSessionLogsRequest>): AsyncGenerator<LogUploadPart> {
  for await (const r of requests) {
    const part = r.part;
    switch (part?.$case) {
      case 'header':
        yield { type: 'header', sessionId: part.value.sessionId, fileName: part.value.fileName, fileSize: part.value.fileSize };
        break;
      case 'chunk':
        yield { type: 'chunk', bytes: part.value };
        break;
      case undefined:
        throw new AgentProtocolError('empty upload message');
      default: {
        const unreachable: never = part;
        throw new AgentProtocolError(`unknown upload part ${String(unreachable)}`);
      }
    }
  }
}
