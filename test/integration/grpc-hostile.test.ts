// Bad and hostile input on the gRPC surface: wrong tokens, impersonation, protocol violations,
// oversized and undecodable messages. Each gets an error status; the server keeps serving and
// never logs the tokens it was shown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentials, makeGenericClientConstructor, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { agentV1 } from '@pixelfleet/proto';
import { startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';

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

const hello = (workerId: string): agentV1.ConnectRequest => ({
  msg: { $case: 'hello', value: { workerId, agentVersion: 't', region: 'europe', slots: 1, lastAckedSeq: 0, runningSessions: [], cachedBuilds: [] } },
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
