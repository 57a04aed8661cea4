// Bad and hostile input on the gRPC surface: wrong tokens, impersonation, protocol violations,
// oversized and undecodable messages, a rogue agent's Hello. Each gets an error status or is
// ignored; the server keeps serving, stores nothing without bound and never logs the tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentials, makeGenericClientConstructor, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { adminV1, agentV1, decodeStoredCommand } from '@pixelfleet/proto';
import { CREDENTIAL_FAILURE_BURST } from '@pixelfleet/control-plane/test-support';
import { startTestControlPlane, TEST_ADMIN_TOKEN, TEST_JOIN_TOKEN, TEST_METRICS_TOKEN, type TestControlPlane } from '../support/control-plane';
import { fleetEvents, seedProject, seedSession, seedWorkerCommand, sessionStatus, workerCommands } from '../support/seed';

let t: TestControlPlane;
let client: agentV1.AgentServiceClient;

beforeAll(async () => {
  t = await startTestControlPlane();
  client = new agentV1.AgentServiceClient(t.started.grpcAddress, credentials.createInsecure());
});

afterAll(async () => {
  client.close();
  await t.destroy();
});

const bearer = (token: string) => {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
};

function enroll(token: string, req: Partial<agentV1.EnrollRequest> = {}): Promise<agentV1.EnrollResponse> {
  return new Promise((resolve, reject) =>
    client.enroll({ hostname: 'h', region: 'europe', slots: 1, agentVersion: 't', ...req }, bearer(token), (err, res) => (err ? reject(err) : resolve(res))),
  );
}

/** Opens Connect, sends the messages, resolves with the status the server ended it with. */
function connectAndSend(token: string, messages: agentV1.ConnectRequest[]): Promise<{ code: status; details: string; received: agentV1.ConnectResponse[] }> {
  return new Promise((resolve) => {
    const received: agentV1.ConnectResponse[] = [];
    const call = client.connect(bearer(token));
    call.on('data', (m: agentV1.ConnectResponse) => received.push(m));
    call.on('error', (err: ServiceError) => resolve({ code: err.code, details: err.details, received }));
    call.on('end', () => resolve({ code: status.OK, details: '', received }));
    for (const m of messages) call.write(m);
  });
}

/** A Hello that names no host or agent instance, as agents older than those fields send it. */
const hello = (workerId: string): agentV1.ConnectRequest => ({
  msg: { $case: 'hello', value: { workerId, agentVersion: 't', region: 'europe', slots: 1, lastAckedSeq: 0, runningSessions: [], cachedBuilds: [], hostname: '', instanceId: '' } },
});

describe('authentication', () => {
  it('Enroll with a wrong or missing join token is UNAUTHENTICATED and the token is not logged', async () => {
    await expect(enroll('wrong-join-token-123456789')).rejects.toMatchObject({ code: status.UNAUTHENTICATED, details: 'invalid join token' });
    const noToken = await new Promise<ServiceError>((resolve) => client.enroll({ hostname: 'h', region: 'europe', slots: 1, agentVersion: 't' }, (err) => resolve(err!)));
    expect(noToken.code).toBe(status.UNAUTHENTICATED);
    expect(t.logs.text()).toContain('Enroll refused');
    expect(t.logs.text()).not.toContain('wrong-join-token-123456789');
    expect(t.logs.text()).not.toContain(TEST_JOIN_TOKEN);
  });

  it('a burst of wrong tokens from one address is backed off: past the burst the address is refused unchecked, even with the right token, and the log holds two lines, not one per guess', async () => {
    const own = await startTestControlPlane();
    const guesser = new agentV1.AgentServiceClient(own.started.grpcAddress, credentials.createInsecure());
    try {
      const tryEnroll = (token: string) =>
        new Promise<status>((resolve) => guesser.enroll({ hostname: 'h', region: 'europe', slots: 1, agentVersion: 't' }, bearer(token), (err) => resolve(err ? err.code : status.OK)));
      const codes: status[] = [];
      for (let i = 0; i < 40; i++) codes.push(await tryEnroll(`guess-${i}-0123456789abcdefghijklmnopqrstuv`));
      expect(codes.slice(0, CREDENTIAL_FAILURE_BURST)).toEqual(Array<status>(CREDENTIAL_FAILURE_BURST).fill(status.UNAUTHENTICATED));
      expect(codes.slice(CREDENTIAL_FAILURE_BURST)).toEqual(Array<status>(40 - CREDENTIAL_FAILURE_BURST).fill(status.RESOURCE_EXHAUSTED));
      // The right token from the guessing address waits too (the check is not made at all).
      expect(await tryEnroll(TEST_JOIN_TOKEN)).toBe(status.RESOURCE_EXHAUSTED);
      const refusals = own.logs.lines.filter((l) => l.includes('Enroll refused') || l.includes('credential check refused'));
      expect(refusals).toHaveLength(2);
      expect(JSON.parse(refusals[1]!)).toMatchObject({ msg: 'credential check refused: too many failed checks from this address', address: '127.0.0.1', count: 1 });
      // The admin service shares the count: a guesser of the join token cannot turn to the admin token.
      const admin = new adminV1.AdminServiceClient(own.started.grpcAddress, credentials.createInsecure());
      const adminCode = await new Promise<status>((resolve) => admin.listWorkers({}, bearer(TEST_ADMIN_TOKEN), (err) => resolve(err ? err.code : status.OK)));
      admin.close();
      expect(adminCode).toBe(status.RESOURCE_EXHAUSTED);
    } finally {
      guesser.close();
      await own.destroy();
    }
  });

  it('Enroll validates what the machine says about itself', async () => {
    await expect(enroll(TEST_JOIN_TOKEN, { region: 'moon' })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    await expect(enroll(TEST_JOIN_TOKEN, { slots: 0 })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'slots must be 1 to 64' });
    await expect(enroll(TEST_JOIN_TOKEN, { hostname: '' })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
  });

  it('Connect with a wrong worker token is UNAUTHENTICATED and the token is not logged', async () => {
    const r = await connectAndSend('pfw_not-a-real-token-abcdef', [hello('wrk_x')]);
    expect(r).toMatchObject({ code: status.UNAUTHENTICATED, details: 'invalid worker token' });
    expect(t.logs.text()).not.toContain('pfw_not-a-real-token-abcdef');
  });

  it('a Hello naming another worker is rejected', async () => {
    const a = await enroll(TEST_JOIN_TOKEN);
    const b = await enroll(TEST_JOIN_TOKEN);
    const r = await connectAndSend(a.workerToken, [hello(b.workerId)]);
    expect(r.code).toBe(status.PERMISSION_DENIED);
    expect(r.details).toContain(`Hello names worker ${b.workerId}`);
    expect(t.cp.registry.get(b.workerId).link).toBe('disconnected');
    expect(t.logs.text()).not.toContain(a.workerToken);
  });
});

describe('protocol violations', () => {
  it('a first message other than Hello ends the stream with INVALID_ARGUMENT', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    const r = await connectAndSend(w.workerToken, [{ msg: { $case: 'heartbeat', value: { sentAt: new Date(), runningSessions: 0, sessionActivity: [] } } }]);
    expect(r).toMatchObject({ code: status.INVALID_ARGUMENT, details: 'the first message must be a Hello' });
  });

  it('a second Hello or an empty message on a stream ends it', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    const twice = await connectAndSend(w.workerToken, [hello(w.workerId), hello(w.workerId)]);
    expect(twice).toMatchObject({ code: status.INVALID_ARGUMENT, details: 'Hello may only be the first message of a stream' });
    expect(twice.received[0]?.msg?.$case).toBe('welcome');
    const empty = await connectAndSend(w.workerToken, [hello(w.workerId), {}]);
    expect(empty).toMatchObject({ code: status.INVALID_ARGUMENT, details: 'empty message' });
  });

  it('a session event of a kind or an ack of a phase the contract does not know ends the stream with INVALID_ARGUMENT and the reason', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    const event = await connectAndSend(w.workerToken, [
      hello(w.workerId),
      { msg: { $case: 'sessionEvent', value: { sessionId: 'session_1_1', kind: 42 as agentV1.SessionEventKind, occurredAt: new Date(), exitCode: 0, message: '', streamingId: '' } } },
    ]);
    expect(event).toMatchObject({ code: status.INVALID_ARGUMENT, details: 'session event for session_1_1 has no valid kind' });
    const ack = await connectAndSend(w.workerToken, [
      hello(w.workerId),
      { msg: { $case: 'ack', value: { seq: 1, commandId: 'cmd_1', phase: 42 as agentV1.CommandPhase, errorCode: '', errorMessage: '', progressPercent: 0 } } },
    ]);
    expect(ack).toMatchObject({ code: status.INVALID_ARGUMENT, details: 'ack for cmd_1 has no valid phase' });
    // The server keeps serving the worker.
    const again = await connectAndSend(w.workerToken, [hello(w.workerId), {}]);
    expect(again.received[0]?.msg?.$case).toBe('welcome');
  });

  it('resends a command stored by the previous version (the domain object as JSON) decoded through the contract', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    seedWorkerCommand(t.cp, { workerId: w.workerId, commandId: `cmd_legacy_${w.workerId}`, kind: 'stopSession', payload: '{"kind":"stopSession","sessionId":"session_1_1","reason":"viewer left","graceMs":10000}' });
    const r = await connectAndSend(w.workerToken, [hello(w.workerId), {}]);
    expect(r.received.map((m) => m.msg?.$case)).toEqual(['welcome', 'command']);
    expect(r.received[1]?.msg).toMatchObject({ $case: 'command', value: { seq: 1, commandId: `cmd_legacy_${w.workerId}`, kind: { $case: 'stopSession', value: { sessionId: 'session_1_1', reason: 'viewer left', graceMs: 10_000 } } } });
  });

  it('a stored command that no longer decodes is failed with its reason, and the commands after it are still sent', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    seedWorkerCommand(t.cp, { workerId: w.workerId, commandId: `cmd_bad_${w.workerId}`, kind: 'stopSession', payload: '{"kind":"stopSession","sessionId":' });
    seedWorkerCommand(t.cp, { workerId: w.workerId, commandId: `cmd_good_${w.workerId}`, kind: 'stopSession', payload: '{"kind":"stopSession","sessionId":"session_1_1","reason":"viewer left","graceMs":10000}' });
    const r = await connectAndSend(w.workerToken, [hello(w.workerId), {}]);
    expect(r.received.map((m) => m.msg?.$case)).toEqual(['welcome', 'command']);
    expect(r.received[1]?.msg).toMatchObject({ $case: 'command', value: { seq: 2, commandId: `cmd_good_${w.workerId}` } });
    expect(workerCommands(t.cp, w.workerId).find((c) => c.commandId === `cmd_bad_${w.workerId}`)).toMatchObject({
      phase: 'FAILED',
      errorCode: 'UNDECODABLE',
      errorMessage: 'stored command is not JSON',
    });
  });

  it('a Starting session whose stored StartSession no longer decodes is ended at the Hello; one whose StartSession decodes waits for it', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    const { projectId } = await seedProject(t.cp);
    const lost = seedSession(t.cp, { projectId, status: 'Starting', workerId: w.workerId });
    const waiting = seedSession(t.cp, { projectId, status: 'Starting', workerId: w.workerId });
    seedWorkerCommand(t.cp, { workerId: w.workerId, commandId: `cmd_lost_${w.workerId}`, kind: 'startSession', payload: `{"kind":"startSession","sessionId":"${lost}",` });
    // The waiting session's start, stored as the session service stores it.
    t.cp.registry.sendCommand(w.workerId, {
      kind: 'startSession', sessionId: waiting, projectId, uploadId: '', streamingId: 'stream', playerId: '', codec: 'H264', minBitrateBps: 0, maxBitrateBps: 0,
      resX: 1280, resY: 720, fps: 30, launchArgs: [], maxRunTimeMinutes: 0, startupTimeoutSeconds: 60, warm: false,
    });
    const r = await connectAndSend(w.workerToken, [hello(w.workerId), {}]);
    // Only the decodable start is sent; the other session is over.
    expect(r.received.map((m) => m.msg?.$case)).toEqual(['welcome', 'command']);
    expect(r.received[1]?.msg).toMatchObject({ $case: 'command', value: { kind: { $case: 'startSession', value: { sessionId: waiting } } } });
    const statusOf = (id: string) => sessionStatus(t.cp, id).status;
    expect(statusOf(lost)).not.toBe('Starting');
    expect(statusOf(waiting)).toBe('Starting');
  });

  it('a newer Connect replaces the older stream of the same worker', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    const old = client.connect(bearer(w.workerToken));
    const oldEnded = new Promise<ServiceError>((resolve) => old.on('error', resolve));
    const oldWelcome = new Promise<void>((resolve) => old.once('data', () => resolve()));
    old.write(hello(w.workerId));
    await oldWelcome;

    const fresh = client.connect(bearer(w.workerToken));
    const freshWelcome = new Promise<agentV1.ConnectResponse>((resolve) => fresh.once('data', resolve));
    fresh.write(hello(w.workerId));
    const welcome = await freshWelcome;
    expect(welcome.msg).toMatchObject({ $case: 'welcome', value: { connectionEpoch: 2 } });
    expect(await oldEnded).toMatchObject({ code: status.ABORTED, details: 'replaced by a newer stream from the same worker' });
    // The replaced stream's close does not disconnect the worker.
    expect(t.cp.registry.get(w.workerId).link).toBe('connected');
    expect(t.cp.registry.liveStreamCount()).toBeGreaterThanOrEqual(1);
    const freshEnded = new Promise<ServiceError>((resolve) => fresh.on('error', resolve));
    fresh.cancel();
    expect((await freshEnded).code).toBe(status.CANCELLED);
  });
});

describe('oversized and undecodable messages', () => {
  it('a message over 4 MiB is RESOURCE_EXHAUSTED and the server keeps serving', async () => {
    const w = await enroll(TEST_JOIN_TOKEN);
    const big = hello(w.workerId);
    if (big.msg?.$case === 'hello') big.msg.value.agentVersion = 'x'.repeat(5 * 1024 * 1024);
    const r = await connectAndSend(w.workerToken, [big]);
    expect(r.code).toBe(status.RESOURCE_EXHAUSTED);
    await expect(enroll(TEST_JOIN_TOKEN)).resolves.toMatchObject({ workerId: expect.stringMatching(/^wrk_/) as unknown });
  });

  it('bytes that are not a protobuf message get an error status, not a crash', async () => {
    const Raw = makeGenericClientConstructor(
      {
        enroll: {
          path: '/pixelfleet.agent.v1.AgentService/Enroll',
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      'Raw',
    );
    const raw = new Raw(t.started.grpcAddress, credentials.createInsecure());
    // A field header claiming a 2^60-byte length-delimited field: undecodable.
    const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    const err = await new Promise<ServiceError>((resolve) => {
      (raw as unknown as { enroll: (req: Buffer, md: Metadata, cb: (e: ServiceError | null) => void) => void }).enroll(garbage, bearer(TEST_JOIN_TOKEN), (e) => resolve(e!));
    });
    expect(err.code).toBe(status.INTERNAL);
    raw.close();
    await expect(enroll(TEST_JOIN_TOKEN)).resolves.toHaveProperty('workerToken');
  });
});

describe('a rogue Hello', () => {
  const running = (sessionIds: string[]) => sessionIds.map((sessionId) => ({ sessionId, projectId: 'prj_x', startedAt: new Date() }));
  const helloWith = (workerId: string, fields: Partial<agentV1.Hello>): agentV1.ConnectRequest => {
    const m = hello(workerId);
    if (m.msg?.$case === 'hello') Object.assign(m.msg.value, fields);
    return m;
  };
  const stopsOf = (workerId: string) => workerCommands(t.cp, workerId, 'stopSession').map((c) => (decodeStoredCommand(c.payload) as { sessionId: string }).sessionId);

  /** Sends a Hello on a new stream, waits for the Welcome (reconciling is done by then), then cancels the stream. */
  async function welcomed(token: string, message: agentV1.ConnectRequest): Promise<void> {
    const call = client.connect(bearer(token));
    const closed = new Promise<void>((resolve) => call.on('error', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      call.on('data', (m: agentV1.ConnectResponse) => m.msg?.$case === 'welcome' && resolve());
      call.once('error', reject);
      call.write(message);
    });
    call.cancel();
    await closed;
  }

  it('listing more running sessions than 2 per declared slot ends the stream with INVALID_ARGUMENT and queues nothing', async () => {
    const w = await enroll(TEST_JOIN_TOKEN, { slots: 2 });
    const ids = Array.from({ length: 5 }, (_, i) => `session_1700000000000_${100_000_000 + i}`);
    const r = await new Promise<{ code: status; details: string }>((resolve) => {
      const call = client.connect(bearer(w.workerToken));
      call.on('data', () => undefined);
      call.on('error', (err: ServiceError) => resolve({ code: err.code, details: err.details }));
      call.on('end', () => resolve({ code: status.OK, details: '' }));
      call.write(helloWith(w.workerId, { slots: 2, runningSessions: running(ids) }));
      // Half-close: a stream the server accepted ends OK instead of staying open.
      call.end();
    });
    expect(r).toEqual({ code: status.INVALID_ARGUMENT, details: 'runningSessions lists 5 sessions; at most 4 (2 per slot) are accepted' });
    expect(stopsOf(w.workerId)).toEqual([]);
    expect(t.cp.registry.get(w.workerId).link).toBe('disconnected');
  });

  it('queues one stop per orphan (ended, unknown, or another worker\'s session), none for malformed ids, never twice', async () => {
    const w = await enroll(TEST_JOIN_TOKEN, { slots: 4 });
    const other = await enroll(TEST_JOIN_TOKEN);
    const { projectId } = await seedProject(t.cp);
    const mine = seedSession(t.cp, { projectId, status: 'Terminated', workerId: w.workerId });
    const theirs = seedSession(t.cp, { projectId, status: 'Terminated', workerId: other.workerId });
    const unknown = 'session_1700000000000_123456789';
    const listed = running([mine, mine, theirs, unknown, 'not-a-session', "session_1'; DROP TABLE x"]);
    await welcomed(w.workerToken, helloWith(w.workerId, { slots: 4, runningSessions: listed }));
    expect(stopsOf(w.workerId)).toEqual([mine, theirs, unknown]);
    // The stops are still pending (never acked): later Hellos resend them and add none.
    await welcomed(w.workerToken, helloWith(w.workerId, { slots: 4, runningSessions: listed }));
    expect(stopsOf(w.workerId)).toEqual([mine, theirs, unknown]);
    expect(stopsOf(other.workerId)).toEqual([]);
  });

  it("a rogue agent's heartbeats reach /metrics only for sessions it holds, list no more than its slots allow, and its floods of acks and reports cost one warn line each", async () => {
    const w = await enroll(TEST_JOIN_TOKEN, { slots: 1 });
    const other = await enroll(TEST_JOIN_TOKEN);
    const { projectId } = await seedProject(t.cp);
    const theirs = seedSession(t.cp, { projectId, status: 'Running', workerId: other.workerId });
    const metric = async (name: string): Promise<number> => {
      const text = await (await fetch(`${t.started.httpOrigin}/metrics`, { headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } })).text();
      return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    };
    const before = await metric('pixelfleet_relay_keyframe_requests_total');
    const relay = { keyframeRequestsMade: 1_000_000, keyframeRequestsToApp: 0, keyframeRequestsCoalesced: 0, ingestPacketsMissing: 0, ingestPacketsAbandoned: 0, viewerPacketsResent: 0, viewerNackMisses: 0, rembBps: 0, viewersShownVideo: 0 };
    const activity = [theirs, 'session_1700000000000_100000001', 'session_1700000000000_100000002'].map((sessionId) => ({ sessionId, relay }));
    const heartbeat: agentV1.ConnectRequest = { msg: { $case: 'heartbeat', value: { sentAt: new Date(), runningSessions: 0, sessionActivity: activity } } };
    const ack: agentV1.ConnectRequest = { msg: { $case: 'ack', value: { commandId: 'cmd_not_sent', seq: 999, phase: agentV1.CommandPhase.COMMAND_PHASE_SUCCEEDED, errorCode: '', errorMessage: '', progressPercent: 0 } } };
    const linesBefore = t.logs.lines.length;
    const call = client.connect(bearer(w.workerToken));
    const closed = new Promise<void>((resolve) => call.on('error', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      call.on('data', (m: agentV1.ConnectResponse) => m.msg?.$case === 'welcome' && resolve());
      call.once('error', reject);
      call.write(helloWith(w.workerId, { slots: 1 }));
    });
    for (let i = 0; i < 50; i++) {
      call.write(heartbeat);
      call.write(ack);
    }
    await expect.poll(() => t.cp.registry.get(w.workerId).lastSeenAt).toBeGreaterThan(0);
    await expect.poll(() => t.logs.lines.slice(linesBefore).filter((l) => l.includes('ack for a command this worker was not sent')).length).toBe(1);
    call.cancel();
    await closed;
    const lines = t.logs.lines.slice(linesBefore);
    expect(lines.filter((l) => l.includes('heartbeat lists more sessions than the worker may run'))).toHaveLength(1);
    expect(JSON.parse(lines.find((l) => l.includes('heartbeat lists more sessions'))!)).toMatchObject({ workerId: w.workerId, listed: 3, maxRunning: 2, count: 1 });
    expect(await metric('pixelfleet_relay_keyframe_requests_total')).toBe(before);
  });

  it('cuts the agent version and an ack\'s error texts before storing them', async () => {
    const w = await enroll(TEST_JOIN_TOKEN, { slots: 1 });
    const { projectId } = await seedProject(t.cp);
    const ended = seedSession(t.cp, { projectId, status: 'Terminated', workerId: w.workerId });
    const call = client.connect(bearer(w.workerToken));
    const closed = new Promise<void>((resolve) => call.on('error', () => resolve()));
    const command = new Promise<agentV1.Command>((resolve) =>
      call.on('data', (m: agentV1.ConnectResponse) => {
        if (m.msg?.$case === 'command') resolve(m.msg.value);
      }),
    );
    call.write(helloWith(w.workerId, { agentVersion: 'v'.repeat(500), runningSessions: running([ended]) }));
    const stop = await command;
    call.write({
      msg: {
        $case: 'ack',
        value: { seq: stop.seq, commandId: stop.commandId, phase: agentV1.CommandPhase.COMMAND_PHASE_FAILED, errorCode: 'C'.repeat(500), errorMessage: 'm'.repeat(100_000), progressPercent: 0 },
      },
    });
    const stored = () => {
      const c = workerCommands(t.cp, w.workerId).find((x) => x.commandId === stop.commandId);
      return { phase: c?.phase, code: c?.errorCode?.length, message: c?.errorMessage?.length };
    };
    await expect.poll(stored).toEqual({ phase: 'FAILED', code: 64, message: 1024 });
    // An ack for a command never sent is logged, with its id cut.
    call.write({ msg: { $case: 'ack', value: { seq: 999, commandId: 'x'.repeat(10_000), phase: agentV1.CommandPhase.COMMAND_PHASE_SUCCEEDED, errorCode: '', errorMessage: '', progressPercent: 0 } } });
    await expect.poll(() => t.logs.text()).toContain(`"commandId":"${'x'.repeat(64)}"`);
    expect(t.logs.text()).not.toContain('x'.repeat(65));
    call.cancel();
    await closed;
    expect(t.cp.registry.get(w.workerId).agentVersion).toBe('v'.repeat(64));
    const [event] = fleetEvents(t.cp, { type: 'worker.connected', workerId: w.workerId });
    expect(event?.data.agentVersion).toBe('v'.repeat(64));
  });
});
