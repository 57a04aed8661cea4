// ControlLink against a scripted Connect stream: heartbeats and the redial wait run on the
// injected clock (no sleeps), and a command the contract cannot decode is failed with its reason
// instead of running or crashing the link.
import { EventEmitter } from 'node:events';
import { status } from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentV1, fromAgentFromProto, type DeliveredCommand } from '@pixelfleet/proto';
import { ManualClock } from '@pixelfleet/common';
import { ControlLink } from './control-link';
import { OUTBOX_MESSAGES_PER_SESSION } from './session-outbox';

/** One Connect stream as the link sees it: what the link wrote, and a way to speak as the control plane. */
class ScriptedCall extends EventEmitter {
  readonly written: agentV1.ConnectRequest[] = [];
  write(m: agentV1.ConnectRequest): boolean {
    this.written.push(m);
    return true;
  }
  cancel(): void {
    this.emit('error', { code: status.CANCELLED, details: 'Cancelled on client' });
  }
  say(msg: agentV1.ConnectResponse['msg']): void {
    // Through the real encoding, as grpc-js would hand it over.
    this.emit('data', agentV1.ConnectResponse.decode(agentV1.ConnectResponse.encode({ msg }).finish()));
  }
}

const WELCOME: agentV1.ConnectResponse['msg'] = { $case: 'welcome', value: { connectionEpoch: 7, heartbeatIntervalMs: 10_000, leaseTtlMs: 30_000, serverTime: undefined, draining: false } };

const links: ControlLink[] = [];
afterEach(async () => {
  for (const link of links.splice(0)) await link.close();
});

function linkOn(clock: ManualClock, extra: { onConnected?: () => void; onIdentityRefused?: (details: string) => void; logLines?: string[]; backoff?: { initialMs: number; maxMs: number } } = {}) {
  const calls: ScriptedCall[] = [];
  const commands: DeliveredCommand[] = [];
  const client = {
    connect: () => {
      const call = new ScriptedCall();
      calls.push(call);
      return call;
    },
  } as unknown as agentV1.AgentServiceClient;
  const link = new ControlLink({
    client,
    workerToken: 'token',
    helloState: () => ({ workerId: 'wrk_1', agentVersion: '0.1.0', region: 'europe', slots: 1, lastAckedSeq: 0, runningSessions: [], cachedBuilds: [], hostname: 'gpu-1', instanceId: 'inst_1' }),
    heartbeatState: () => ({ runningSessions: 0, activity: [] }),
    onCommand: (c) => commands.push(c),
    backoff: extra.backoff ?? { initialMs: 1_000, maxMs: 1_000 },
    log: extra.logLines ? pino({ level: 'warn' }, { write: (line: string) => void extra.logLines!.push(line) }) : pino({ level: 'silent' }),
    clock,
    ...(extra.onConnected ? { onConnected: extra.onConnected } : {}),
    ...(extra.onIdentityRefused ? { onIdentityRefused: extra.onIdentityRefused } : {}),
  });
  links.push(link);
  link.start();
  return { link, calls, commands };
}

const written = (call: ScriptedCall | undefined, kind: NonNullable<agentV1.ConnectRequest['msg']>['$case']) => (call?.written ?? []).filter((m) => m.msg?.$case === kind);

describe('ControlLink on the injected clock', () => {
  it('sends a heartbeat each heartbeatIntervalMs of the clock, stamped with the clock', () => {
    const clock = new ManualClock();
    const { calls } = linkOn(clock);
    const call = calls[0]!;
    expect(written(call, 'hello')).toHaveLength(1);
    call.say(WELCOME);
    clock.advance(9_999);
    expect(written(call, 'heartbeat')).toHaveLength(0);
    clock.advance(1);
    expect(written(call, 'heartbeat')).toEqual([{ msg: { $case: 'heartbeat', value: { sentAt: new Date(clock.now()), runningSessions: 0, sessionActivity: [] } } }]);
    clock.advance(20_000);
    expect(written(call, 'heartbeat')).toHaveLength(3);
  });

  it('waits out the redial delay on the clock, then dials again with a Hello', async () => {
    const clock = new ManualClock();
    const { link, calls } = linkOn(clock);
    calls[0]!.emit('error', { code: status.UNAVAILABLE, details: 'connection refused' });
    await vi.waitFor(() => expect(link.linkState).toBe('waiting'));
    expect(calls).toHaveLength(1);
    clock.advance(1_000); // the backoff ceiling: the delay is below it
    await vi.waitFor(() => expect(calls).toHaveLength(2));
    expect(written(calls[1], 'hello')).toHaveLength(1);
  });
});

describe('ControlLink refused because another agent process holds the identity', () => {
  const details = 'worker wrk_1 is already connected from host gpu-a (…); this agent on host gpu-1 (…) presents the same identity (a copy of its worker.json): re-enroll one of them';

  it('names its instance in every Hello, says the refusal once per try at error level, and asks again only at the longest backoff', async () => {
    const clock = new ManualClock();
    const logLines: string[] = [];
    const refusals: string[] = [];
    const { link, calls } = linkOn(clock, { logLines, backoff: { initialMs: 1_000, maxMs: 30_000 }, onIdentityRefused: (d) => refusals.push(d) });
    expect(written(calls[0], 'hello')[0]?.msg).toMatchObject({ value: { hostname: 'gpu-1', instanceId: 'inst_1' } });
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      calls.at(-1)!.emit('error', { code: status.ALREADY_EXISTS, details });
      await vi.waitFor(() => expect(link.linkState).toBe('waiting'));
      // Not the usual first steps (under 1 s, then 2 s): the other process will not be gone by then.
      clock.advance(29_999);
      await Promise.resolve();
      expect(calls).toHaveLength(attempt);
      clock.advance(1);
      await vi.waitFor(() => expect(calls).toHaveLength(attempt + 1));
    }
    expect(refusals).toEqual([details, details]);
    expect(logLines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ level: 50, code: 'ALREADY_EXISTS', details, retryInMs: 30_000, msg: 'another agent process presents this worker identity; this one waits until it stops: re-enroll one of them' }),
      expect.objectContaining({ level: 50, code: 'ALREADY_EXISTS', details, retryInMs: 30_000 }),
    ]);
    // Accepted once the other has stopped: connected, as any stream.
    calls.at(-1)!.say(WELCOME);
    expect(link.linkState).toBe('connected');
  });
});

describe('ControlLink refused for what its Hello says', () => {
  it('says so at error level and asks again only at the longest backoff, for a region mismatch and an invalid Hello alike', async () => {
    const clock = new ManualClock();
    const logLines: string[] = [];
    const { link, calls } = linkOn(clock, { logLines, backoff: { initialMs: 1_000, maxMs: 30_000 } });
    const refusals = [
      { code: status.FAILED_PRECONDITION, details: 'worker wrk_1 serves region europe and cannot move to asia by itself: …' },
      { code: status.INVALID_ARGUMENT, details: 'slots must be 1 to 64' },
    ];
    for (const [i, refusal] of refusals.entries()) {
      calls.at(-1)!.emit('error', refusal);
      await vi.waitFor(() => expect(link.linkState).toBe('waiting'));
      clock.advance(29_999);
      await Promise.resolve();
      expect(calls).toHaveLength(i + 1);
      clock.advance(1);
      await vi.waitFor(() => expect(calls).toHaveLength(i + 2));
    }
    expect(logLines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual(
      refusals.map((r): unknown => expect.objectContaining({ level: 50, code: status[r.code], details: r.details, retryInMs: 30_000, msg: "control plane refused this agent's Hello; fix what it says" })),
    );
  });
});

describe('ControlLink and commands it cannot decode', () => {
  const start = (codec: number): agentV1.ConnectResponse['msg'] => ({
    $case: 'command',
    value: { seq: 3, commandId: 'cmd_3', connectionEpoch: 7, notAfter: undefined, kind: { $case: 'startSession', value: agentV1.StartSession.fromPartial({ sessionId: 'session_1_1', codec: codec }) } },
  });

  it('fails a StartSession with an unknown codec as UNSUPPORTED_CODEC, runs nothing, and keeps the stream', () => {
    const { link, calls, commands } = linkOn(new ManualClock());
    const call = calls[0]!;
    call.say(WELCOME);
    call.say(start(9));
    expect(commands).toEqual([]);
    expect(written(call, 'ack')).toEqual([
      { msg: { $case: 'ack', value: { seq: 3, commandId: 'cmd_3', phase: agentV1.CommandPhase.COMMAND_PHASE_FAILED, errorCode: 'UNSUPPORTED_CODEC', errorMessage: 'command cmd_3 names codec 9, which this version does not know', progressPercent: 0 } } },
    ]);
    expect(link.linkState).toBe('connected');
    // A known codec on the same stream still runs.
    call.say(start(agentV1.Codec.CODEC_H264));
    expect(commands.map((c) => c.command)).toMatchObject([{ kind: 'startSession', codec: 'H264' }]);
  });

  it('fails a command without a kind as UNKNOWN_COMMAND', () => {
    const { calls, commands } = linkOn(new ManualClock());
    const call = calls[0]!;
    call.say(WELCOME);
    call.say({ $case: 'command', value: { seq: 4, commandId: 'cmd_4', connectionEpoch: 7, notAfter: undefined, kind: undefined } });
    expect(commands).toEqual([]);
    expect(written(call, 'ack').map((m) => m.msg?.$case === 'ack' && [m.msg.value.errorCode, m.msg.value.errorMessage])).toEqual([['UNKNOWN_COMMAND', 'command cmd_4 has no kind']]);
  });
});

describe('ControlLink while the control plane is away', () => {
  const event = (sessionId: string, kind: 'appIdentified' | 'viewerConnected') => ({ sessionId, kind, occurredAtMs: 1, exitCode: 0, message: '', streamingId: kind === 'appIdentified' ? 'str_1' : '' });
  const signal = (sessionId: string, n: number) => ({ sessionId, playerId: 'ply_1', json: JSON.stringify({ type: 'iceCandidate', n }) });
  const sessionMessages = (call: ScriptedCall | undefined) =>
    (call?.written ?? []).flatMap((m) => {
      if (m.msg?.$case !== 'sessionEvent' && m.msg?.$case !== 'signal') return [];
      const decoded = fromAgentFromProto(m);
      return decoded.type === 'sessionEvent' ? [`${decoded.event.sessionId} ${decoded.event.kind}`] : decoded.type === 'signal' ? [`${decoded.signal.sessionId} ${decoded.signal.json}`] : [];
    });

  it('holds the session events and signals it could not send and sends them in order after the next Welcome, before telling the agent it is connected', async () => {
    const clock = new ManualClock();
    const order: string[] = [];
    const { link, calls } = linkOn(clock, { onConnected: () => order.push(`connected with ${link.heldMessages} held`) });
    calls[0]!.say(WELCOME);
    expect(link.sendSessionEvent(event('ses_a', 'appIdentified'))).toBe(true);
    // The control plane goes away (a restart): nothing can be written until the next stream's Welcome.
    calls[0]!.emit('error', { code: status.UNAVAILABLE, details: 'connection reset' });
    await vi.waitFor(() => expect(link.linkState).toBe('waiting'));
    expect(link.sendSignal(signal('ses_a', 1))).toBe(false);
    expect(link.sendSessionEvent(event('ses_b', 'appIdentified'))).toBe(false);
    expect(link.sendSignal(signal('ses_a', 2))).toBe(false);
    expect(link.sendSessionEvent(event('ses_a', 'viewerConnected'))).toBe(false);
    expect(link.heldMessages).toBe(4);
    clock.advance(1_000);
    await vi.waitFor(() => expect(calls).toHaveLength(2));
    // Not before the Welcome: the Hello goes first and is answered.
    expect(sessionMessages(calls[1])).toEqual([]);
    calls[1]!.say(WELCOME);
    expect(sessionMessages(calls[1])).toEqual(['ses_a {"type":"iceCandidate","n":1}', 'ses_a {"type":"iceCandidate","n":2}', 'ses_a viewerConnected', 'ses_b appIdentified']);
    // The agent hears of each new stream after what was held went out (it re-announces on top of it).
    expect(order).toEqual(['connected with 0 held', 'connected with 0 held']);
    expect(link.heldMessages).toBe(0);
    // Sent once: a later stream does not repeat them.
    calls[1]!.emit('error', { code: status.UNAVAILABLE, details: 'connection reset' });
    await vi.waitFor(() => expect(link.linkState).toBe('waiting'));
    clock.advance(1_000);
    await vi.waitFor(() => expect(calls).toHaveLength(3));
    calls[2]!.say(WELCOME);
    expect(sessionMessages(calls[2])).toEqual([]);
  });

  it('keeps at most OUTBOX_MESSAGES_PER_SESSION per session: the oldest go, with one warning; other sessions keep theirs', () => {
    const logLines: string[] = [];
    const clock = new ManualClock();
    const { link, calls } = linkOn(clock, { logLines });
    for (let n = 0; n < OUTBOX_MESSAGES_PER_SESSION + 10; n += 1) link.sendSignal(signal('ses_a', n));
    link.sendSessionEvent(event('ses_b', 'appIdentified'));
    expect(link.heldMessages).toBe(OUTBOX_MESSAGES_PER_SESSION + 1);
    const warnings = logLines.map((l) => JSON.parse(l) as { msg: string; sessionId: string });
    expect(warnings).toEqual([expect.objectContaining({ sessionId: 'ses_a', msg: 'control link down: too many session messages held; dropping the oldest' })]);
    calls[0]!.say(WELCOME);
    const sent = sessionMessages(calls[0]);
    expect(sent).toHaveLength(OUTBOX_MESSAGES_PER_SESSION + 1);
    expect(sent[0]).toBe('ses_a {"type":"iceCandidate","n":10}');
    expect(sent.at(-2)).toBe(`ses_a {"type":"iceCandidate","n":${OUTBOX_MESSAGES_PER_SESSION + 9}}`);
    expect(sent.at(-1)).toBe('ses_b appIdentified');
  });
});
