// Every message of the agent contract through the wire and back: domain → proto → bytes → proto
// → domain gives what went in. The cases come from the .proto itself (the descriptor set that
// proto:generate writes and proto:check keeps current), so a oneof case or an enum value added to
// the proto and not to the contract fails here.
import { readFileSync } from 'node:fs';
import { createFileRegistry, fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import * as agentV1 from './gen/pixelfleet/agent/v1/agent';
import {
  AgentContractError,
  ackFromProto,
  ackToProto,
  commandFromProto,
  commandToProto,
  fromAgentFromProto,
  fromAgentToProto,
  helloFromProto,
  helloToProto,
  sessionEventFromProto,
  sessionEventToProto,
  toAgentFromProto,
  toAgentToProto,
  type AgentCommand,
  type AgentHello,
  type Codec,
  type StartSessionCommand,
  type FromAgent,
  type ToAgent,
} from './agent-contract';
import { descriptorSetPath } from './index';

const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(descriptorSetPath)));

/** The camelCase names of a oneof's cases, as the .proto declares them. */
function oneofCases(message: string, oneof: string): string[] {
  const desc = registry.getMessage(`pixelfleet.agent.v1.${message}`);
  const o = desc?.oneofs.find((x) => x.name === oneof);
  if (!o) throw new Error(`no oneof ${message}.${oneof}`);
  return o.fields.map((f) => f.localName).sort();
}

/** The values of a generated enum other than UNSPECIFIED (0) and UNRECOGNIZED (-1). */
function enumValues(e: Record<string, string | number>): number[] {
  return Object.values(e).filter((v): v is number => typeof v === 'number' && v > 0);
}

const AT = Date.parse('2026-03-01T12:00:00.123Z');

/** One of each command kind; the Record makes the compiler ask for a new kind's sample. */
const COMMANDS: Record<NonNullable<agentV1.Command['kind']>['$case'], AgentCommand> = {
  startSession: {
    kind: 'startSession', sessionId: 'session_1_1', projectId: 'prj_1', uploadId: 'upl_1', streamingId: 'str_1', playerId: 'player_1', codec: 'VP9',
    minBitrateBps: 100_000, maxBitrateBps: 40_000_000, resX: 1920, resY: 1080, fps: 60, launchArgs: ['-AudioMixer', '-X=1'], maxRunTimeMinutes: 30, startupTimeoutSeconds: 60, warm: true,
  },
  stopSession: { kind: 'stopSession', sessionId: 'session_1_1', reason: 'viewer left', graceMs: 5_000 },
  prepareBuild: { kind: 'prepareBuild', uploadId: 'upl_1', projectId: 'prj_1', downloadUrl: 'https://x/y', sizeBytes: 5_000_000_000, sha256: 'ab'.repeat(32) },
  deleteBuild: { kind: 'deleteBuild', uploadId: 'upl_1' },
};

const HELLO: AgentHello = {
  workerId: 'wrk_1', agentVersion: '0.1.0', region: 'europe', slots: 2, lastAckedSeq: 7,
  runningSessions: [{ sessionId: 'session_1_1', projectId: 'prj_1', startedAtMs: AT }],
  cachedBuilds: [{ uploadId: 'upl_1', sha256: 'cd'.repeat(32), ready: true }],
  hostname: 'gpu-1', instanceId: 'a1b2c3d4',
};

const TO_AGENT: Record<NonNullable<agentV1.ConnectResponse['msg']>['$case'], ToAgent[]> = {
  welcome: [{ type: 'welcome', connectionEpoch: 3, heartbeatIntervalMs: 10_000, leaseTtlMs: 30_000, serverTimeMs: AT, draining: true }],
  command: Object.values(COMMANDS).map((command, i) => ({ type: 'command', seq: i + 1, commandId: `cmd_${i}`, connectionEpoch: 3, notAfterMs: i % 2 ? AT : undefined, command })),
  drainNotice: [{ type: 'drainNotice', draining: false }],
  signal: [{ type: 'signal', signal: { sessionId: 'session_1_1', playerId: 'player_1', json: '{"type":"answer","sdp":"v=0"}' } }],
};

const FROM_AGENT: Record<Exclude<NonNullable<agentV1.ConnectRequest['msg']>['$case'], 'hello'>, FromAgent[]> = {
  heartbeat: [
    {
      type: 'heartbeat', sentAtMs: AT, runningSessions: 2,
      activity: [
        { sessionId: 'session_1_1', lastInputAtMs: AT - 5, relay: { keyframeRequestsMade: 1, keyframeRequestsToApp: 2, keyframeRequestsCoalesced: 3, ingestPacketsMissing: 4, ingestPacketsAbandoned: 5, viewerPacketsResent: 6, viewerNackMisses: 7, rembBps: 8_000_000, viewersShownVideo: 9 } },
        { sessionId: 'session_1_2', lastInputAtMs: undefined, relay: undefined },
      ],
    },
  ],
  ack: (['ACCEPTED', 'IN_PROGRESS', 'SUCCEEDED', 'FAILED'] as const).map((phase, i) => ({
    type: 'ack', ack: { seq: i, commandId: `cmd_${i}`, phase, errorCode: phase === 'FAILED' ? 'STALE' : '', errorMessage: phase === 'FAILED' ? 'late' : '', progressPercent: phase === 'IN_PROGRESS' ? 40 : 0 },
  })),
  sessionEvent: enumValues(agentV1.SessionEventKind).map((kind, i) => ({
    type: 'sessionEvent',
    event: { ...sessionEventFromProto({ sessionId: 'session_1_1', kind, occurredAt: new Date(AT), exitCode: 0, message: '', streamingId: '' }), exitCode: i - 1, message: `m${i}`, streamingId: `s${i}` },
  })),
  signal: [{ type: 'signal', signal: { sessionId: 'session_1_1', playerId: 'player_1', json: '{"type":"iceCandidate"}' } }],
};

const wireToAgent = (m: ToAgent): ToAgent => toAgentFromProto(agentV1.ConnectResponse.decode(agentV1.ConnectResponse.encode(toAgentToProto(m)).finish()));
const wireFromAgent = (m: FromAgent): FromAgent => fromAgentFromProto(agentV1.ConnectRequest.decode(agentV1.ConnectRequest.encode(fromAgentToProto(m)).finish()));

describe('the agent contract on the wire', () => {
  it('has a sample for every oneof case the proto declares', () => {
    expect(Object.keys(COMMANDS).sort()).toEqual(oneofCases('Command', 'kind'));
    expect(Object.keys(TO_AGENT).sort()).toEqual(oneofCases('ConnectResponse', 'msg'));
    expect([...Object.keys(FROM_AGENT), 'hello'].sort()).toEqual(oneofCases('ConnectRequest', 'msg'));
  });

  it('carries every command kind, control plane → agent, unchanged', () => {
    for (const m of Object.values(TO_AGENT).flat()) expect(wireToAgent(m)).toEqual(m);
  });

  it('carries every session event kind, ack phase, heartbeat and signal, agent → control plane, unchanged', () => {
    const kinds = FROM_AGENT.sessionEvent.map((m) => (m.type === 'sessionEvent' ? m.event.kind : undefined));
    expect(new Set(kinds).size).toBe(enumValues(agentV1.SessionEventKind).length);
    expect(FROM_AGENT.ack).toHaveLength(enumValues(agentV1.CommandPhase).length);
    for (const m of Object.values(FROM_AGENT).flat()) expect(wireFromAgent(m)).toEqual(m);
  });

  it('carries the Hello unchanged', () => {
    expect(helloFromProto(agentV1.Hello.decode(agentV1.Hello.encode(helloToProto(HELLO)).finish()))).toEqual(HELLO);
  });

  it('knows every codec the proto declares, and UNSPECIFIED is H264', () => {
    const start = COMMANDS.startSession as StartSessionCommand;
    for (const codec of enumValues(agentV1.Codec)) {
      const proto = commandToProto({ seq: 1, commandId: 'c', connectionEpoch: 1, notAfterMs: undefined, command: start });
      if (proto.kind?.$case !== 'startSession') throw new Error('not a start');
      proto.kind.value.codec = codec;
      const decoded = commandFromProto(proto).command as { codec: Codec };
      expect(commandToProto({ seq: 1, commandId: 'c', connectionEpoch: 1, notAfterMs: undefined, command: { ...start, codec: decoded.codec } }).kind).toEqual(proto.kind);
    }
    const unspecified = agentV1.Command.decode(agentV1.Command.encode({ seq: 1, commandId: 'c', connectionEpoch: 1, kind: { $case: 'startSession', value: { ...agentV1.StartSession.fromPartial({}) } } }).finish());
    expect(commandFromProto(unspecified).command).toMatchObject({ kind: 'startSession', codec: 'H264' });
  });
});

describe('what does not decode', () => {
  it('an unknown codec from the wire fails the command with UNSUPPORTED_CODEC, not H264', () => {
    // Codec 9, as a newer control plane would send it: ts-proto keeps the number it does not know.
    const start = agentV1.StartSession.fromPartial({ sessionId: 's', codec: 9 as agentV1.Codec });
    const wire = agentV1.Command.decode(agentV1.Command.encode({ seq: 4, commandId: 'cmd_new', connectionEpoch: 1, kind: { $case: 'startSession', value: start } }).finish());
    expect(() => commandFromProto(wire)).toThrow(new AgentContractError('UNSUPPORTED_CODEC', 'command cmd_new names codec 9, which this version does not know'));
    expect(() => commandFromProto(wire)).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_CODEC' }) as Error);
  });

  it('a command without a kind is UNKNOWN_COMMAND', () => {
    expect(() => commandFromProto({ seq: 1, commandId: 'cmd_x', connectionEpoch: 1, notAfter: undefined, kind: undefined })).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_COMMAND', message: 'command cmd_x has no kind' }) as Error,
    );
  });

  it('an unknown session event kind or ack phase, a second Hello and an empty message are INVALID_MESSAGE', () => {
    const event = sessionEventToProto({ sessionId: 'session_9_9', kind: 'appStarted', occurredAtMs: AT, exitCode: 0, message: '', streamingId: '' });
    const invalid = (message: string) => expect.objectContaining({ code: 'INVALID_MESSAGE', message }) as Error;
    expect(() => fromAgentFromProto({ msg: { $case: 'sessionEvent', value: { ...event, kind: 99 as agentV1.SessionEventKind } } })).toThrow(invalid('session event for session_9_9 has no valid kind'));
    expect(() => ackFromProto({ ...ackToProto({ seq: 1, commandId: 'cmd_1', phase: 'FAILED', errorCode: '', errorMessage: '', progressPercent: 0 }), phase: agentV1.CommandPhase.COMMAND_PHASE_UNSPECIFIED })).toThrow(invalid('ack for cmd_1 has no valid phase'));
    expect(() => fromAgentFromProto({ msg: { $case: 'hello', value: helloToProto(HELLO) } })).toThrow(invalid('Hello may only be the first message of a stream'));
    expect(() => fromAgentFromProto({ msg: undefined })).toThrow(invalid('empty message'));
    expect(() => toAgentFromProto({ msg: undefined })).toThrow(invalid('empty message'));
  });
});
