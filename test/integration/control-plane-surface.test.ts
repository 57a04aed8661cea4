// The control plane's operational surface: HTTP /healthz and /metrics (behind its bearer token)
// with the spec's error body format, gRPC health and reflection for operators' tools, and the
// agents' log upload.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentials, loadPackageDefinition, Metadata, status, type ServiceError, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { agentV1 } from '@pixelfleet/proto';
import { startTestControlPlane, TEST_JOIN_TOKEN, TEST_METRICS_TOKEN, type TestControlPlane } from '../support/control-plane';
import { logFile, logFilesOf, seedBuild, seedProject, seedSession } from '../support/seed';

let t: TestControlPlane;
beforeAll(async () => {
  t = await startTestControlPlane();
});
afterAll(async () => {
  await t.destroy();
});

const require = createRequire(import.meta.url);

function serviceClient(protoFile: string, includeDir: string, path: string[]): ServiceClientConstructor {
  const def = loadPackageDefinition(loadSync(protoFile, { includeDirs: [includeDir], keepCase: true, enums: String }));
  let node: GrpcObject | ServiceClientConstructor = def;
  for (const p of path) node = (node as GrpcObject)[p] as GrpcObject | ServiceClientConstructor;
  return node as ServiceClientConstructor;
}

describe('HTTP', () => {
  it('GET /healthz is ok while serving', async () => {
    const res = await fetch(`${t.started.httpOrigin}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz is ready: the SQLite store answers on the schema this build brings', async () => {
    const res = await fetch(`${t.started.httpOrigin}/readyz`);
    const { applied } = t.cp.db.prepare('SELECT MAX(version) AS applied FROM schema_migrations').get() as { applied: number };
    expect([res.status, await res.json()]).toEqual([200, { status: 'ready', store: 'sqlite', schemaVersion: applied, latestSchemaVersion: applied }]);
  });

  it('GET /metrics with the bearer token is Prometheus text with fleet gauges', async () => {
    const res = await fetch(`${t.started.httpOrigin}/metrics`, { headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toMatch(/^pixelfleet_workers\{status="connected"\} \d+$/m);
    expect(text).toMatch(/^pixelfleet_agent_streams \d+$/m);
    expect(text).toMatch(/^pixelfleet_process_resident_memory_bytes \d+/m);
    expect(text).toContain('pixelfleet_http_requests_total{method="GET",route="/healthz",status="200"}');
  });

  it('GET /metrics has the product gauges: sessions by status, queue length per project, builds by status', async () => {
    const a = await seedProject(t.cp);
    const b = await seedProject(t.cp);
    for (const status of ['Enqueued', 'Enqueued', 'Running', 'Terminated', 'Terminated'] as const) seedSession(t.cp, { projectId: a.projectId, status });
    seedSession(t.cp, { projectId: b.projectId, status: 'Enqueued' });
    seedSession(t.cp, { projectId: b.projectId, status: 'Starting' });
    seedBuild(t.cp, { uploadId: 'upl_metrics_1', projectId: a.projectId, status: 'Approved' });
    seedBuild(t.cp, { uploadId: 'upl_metrics_2', projectId: b.projectId, status: 'Reject' });
    const res = await fetch(`${t.started.httpOrigin}/metrics`, { headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } });
    const text = await res.text();
    const gauge = (line: string) => Number(new RegExp(`^${line.replace(/[{}]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    expect(gauge('pixelfleet_sessions{status="Enqueued"}')).toBe(3);
    expect(gauge('pixelfleet_sessions{status="Starting"}')).toBe(1);
    expect(gauge('pixelfleet_sessions{status="Running"}')).toBe(1);
    expect(gauge('pixelfleet_sessions{status="Terminating"}')).toBe(0);
    expect(text).not.toContain('pixelfleet_sessions{status="Terminated"}');
    expect(gauge(`pixelfleet_queue_length{project="${a.projectId}"}`)).toBe(2);
    expect(gauge(`pixelfleet_queue_length{project="${b.projectId}"}`)).toBe(1);
    expect(gauge('pixelfleet_builds{status="Approved"}')).toBe(1);
    expect(gauge('pixelfleet_builds{status="Reject"}')).toBe(1);
    expect(gauge('pixelfleet_builds{status="Downloading Files"}')).toBe(0);
  });

  it('GET /metrics without the bearer token, or with a wrong one, is 401 with a message, and no token is logged', async () => {
    const wrong = `${TEST_METRICS_TOKEN.slice(0, -1)}X`;
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${wrong}` },
      { authorization: `Bearer ${TEST_METRICS_TOKEN}x` },
      { authorization: `Basic ${Buffer.from(`prometheus:${TEST_METRICS_TOKEN}`).toString('base64')}` },
      { authorization: TEST_METRICS_TOKEN },
    ];
    for (const headers of attempts) {
      const res = await fetch(`${t.started.httpOrigin}/metrics`, { headers });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await res.json()).toEqual({ message: 'Metrics need a valid bearer token' });
    }
    expect((await fetch(`${t.started.httpOrigin}/metrics`, { headers: { authorization: `bearer ${TEST_METRICS_TOKEN}` } })).status).toBe(200);
    expect(t.logs.text()).not.toContain(TEST_METRICS_TOKEN.slice(0, 24));
  });

  it('GET /metrics refuses every scrape when no bearer token is configured, and says so at start', async () => {
    const open = await startTestControlPlane({ overrides: { metrics: {} } });
    try {
      expect((await fetch(`${open.started.httpOrigin}/metrics`)).status).toBe(401);
      expect((await fetch(`${open.started.httpOrigin}/metrics`, { headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } })).status).toBe(401);
      expect(open.logs.text()).toContain('metrics.bearerToken is not set: /metrics refuses every scrape');
    } finally {
      await open.destroy();
    }
  });

  it('answers /favicon.ico with 204 so viewer pages log no error', async () => {
    expect((await fetch(`${t.started.httpOrigin}/favicon.ico`)).status).toBe(204);
  });

  it('an unknown route is a JSON 404 with a message', async () => {
    const res = await fetch(`${t.started.httpOrigin}/no/such/route`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ message: 'Route not found' });
  });

  it('public URLs default to the listening origin', () => {
    expect(t.started.publicUrls).toEqual({
      api: `${t.started.httpOrigin}/api`,
      platform: t.started.httpOrigin,
      share: `${t.started.httpOrigin}/share`,
      dashboard: `${t.started.httpOrigin}/dashboard`,
      agents: t.started.httpOrigin,
    });
  });
});

describe('gRPC health and reflection', () => {
  it('grpc.health.v1 reports SERVING for the server and both services', async () => {
    const healthProto = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto', 'health', 'v1', 'health.proto');
    const Health = serviceClient(healthProto, dirname(healthProto), ['grpc', 'health', 'v1', 'Health']);
    const health = new Health(t.started.grpcAddress, credentials.createInsecure()) as unknown as {
      check(req: { service: string }, cb: (err: ServiceError | null, res: { status: string }) => void): void;
      close(): void;
    };
    for (const service of ['', 'pixelfleet.agent.v1.AgentService', 'pixelfleet.admin.v1.AdminService']) {
      const res = await new Promise<{ status: string }>((resolve, reject) => health.check({ service }, (err, r) => (err ? reject(err) : resolve(r))));
      expect(res.status).toBe('SERVING');
    }
    health.close();
  });

  it('reflection lists our services and resolves their symbols', async () => {
    const reflectionProto = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
    const Reflection = serviceClient(reflectionProto, dirname(reflectionProto), ['grpc', 'reflection', 'v1', 'ServerReflection']);
    const reflection = new Reflection(t.started.grpcAddress, credentials.createInsecure()) as unknown as {
      ServerReflectionInfo(): NodeJS.ReadWriteStream & { end(): void };
      close(): void;
    };
    const call = reflection.ServerReflectionInfo();
    const responses: Record<string, unknown>[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (r: Record<string, unknown>) => responses.push(r));
      call.on('end', resolve);
      call.on('error', reject);
    });
    call.write({ list_services: '' } as never);
    call.write({ file_containing_symbol: 'pixelfleet.agent.v1.AgentService' } as never);
    call.end();
    await done;
    const services = (responses[0]!.list_services_response as { service: { name: string }[] }).service.map((s) => s.name);
    expect(services).toEqual(expect.arrayContaining(['pixelfleet.agent.v1.AgentService', 'pixelfleet.admin.v1.AdminService', 'grpc.health.v1.Health']));
    expect(responses[1]).toHaveProperty('file_descriptor_response');
    reflection.close();
  });
});

describe('UploadSessionLogs', () => {
  const bearer = (token: string) => {
    const md = new Metadata();
    md.set('authorization', `Bearer ${token}`);
    return md;
  };

  async function enroll(client: agentV1.AgentServiceClient) {
    return new Promise<agentV1.EnrollResponse>((resolve, reject) =>
      client.enroll({ hostname: 'h', region: 'europe', slots: 1, agentVersion: 't' }, bearer(TEST_JOIN_TOKEN), (e, r) => (e ? reject(e) : resolve(r))),
    );
  }

  function upload(client: agentV1.AgentServiceClient, token: string, parts: agentV1.UploadSessionLogsRequest[]) {
    return new Promise<agentV1.UploadSessionLogsResponse>((resolve, reject) => {
      const call = client.uploadSessionLogs(bearer(token), (e, r) => (e ? reject(e) : resolve(r)));
      for (const p of parts) call.write(p);
      call.end();
    });
  }

  it('stores the gzip file for a session that ran on the uploading worker', async () => {
    const client = new agentV1.AgentServiceClient(t.started.grpcAddress, credentials.createInsecure());
    const worker = await enroll(client);
    const { projectId } = await seedProject(t.cp);
    const sessionId = seedSession(t.cp, { projectId, status: 'Running', workerId: worker.workerId });
    const text = 'LogInit: Display: Running engine\n'.repeat(2000);
    const gz = gzipSync(text);
    const half = Math.floor(gz.length / 2);
    const res = await upload(client, worker.workerToken, [
      { part: { $case: 'header', value: { sessionId, fileName: 'Demo.log', fileSize: text.length } } },
      { part: { $case: 'chunk', value: gz.subarray(0, half) } },
      { part: { $case: 'chunk', value: gz.subarray(half) } },
    ]);
    expect(res.logFileId).toMatch(/^log_/);
    expect(res.gzSize).toBe(gz.length);
    const row = logFile(t.cp, res.logFileId)!;
    expect(row).toMatchObject({ sessionId, projectId, fileName: 'Demo.log', fileSize: text.length, gzSize: gz.length });
    const { readFileSync } = await import('node:fs');
    const blob = readFileSync(join(t.dataDir, 'blobs', 'sha256', row.blobSha256.slice(0, 2), row.blobSha256));
    expect(gunzipSync(blob).toString()).toBe(text);
    client.close();
  });

  it('refuses uploads for sessions of other workers, bad names, non-gzip data and bad tokens', async () => {
    const client = new agentV1.AgentServiceClient(t.started.grpcAddress, credentials.createInsecure());
    const a = await enroll(client);
    const b = await enroll(client);
    const { projectId } = await seedProject(t.cp);
    const sessionId = seedSession(t.cp, { projectId, status: 'Running', workerId: a.workerId });
    const header = (fileName = 'x.log'): agentV1.UploadSessionLogsRequest => ({ part: { $case: 'header', value: { sessionId, fileName, fileSize: 1 } } });
    const chunk = (bytes: Buffer): agentV1.UploadSessionLogsRequest => ({ part: { $case: 'chunk', value: bytes } });

    await expect(upload(client, b.workerToken, [header(), chunk(gzipSync('x'))])).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
    await expect(upload(client, a.workerToken, [header('../../etc/passwd'), chunk(gzipSync('x'))])).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    await expect(upload(client, a.workerToken, [header(), chunk(Buffer.from('plain text'))])).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'log data is not gzip' });
    await expect(upload(client, a.workerToken, [chunk(gzipSync('x'))])).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'the first message must be a LogFileHeader' });
    await expect(upload(client, a.workerToken, [header()])).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'log data is empty' });
    await expect(upload(client, 'pfw_bogus-token-bogus-token', [header(), chunk(gzipSync('x'))])).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
    expect(logFilesOf(t.cp, sessionId)).toHaveLength(0);
    client.close();
  });

  it('stores a file name once per session (a retry gets the stored record) and at most 8 files per session', async () => {
    const client = new agentV1.AgentServiceClient(t.started.grpcAddress, credentials.createInsecure());
    const worker = await enroll(client);
    const { projectId } = await seedProject(t.cp);
    const sessionId = seedSession(t.cp, { projectId, status: 'Running', workerId: worker.workerId });
    const file = (fileName: string, text: string): agentV1.UploadSessionLogsRequest[] => [
      { part: { $case: 'header', value: { sessionId, fileName, fileSize: text.length } } },
      { part: { $case: 'chunk', value: gzipSync(text) } },
    ];
    const first = await upload(client, worker.workerToken, file('Demo.log', 'first'));
    const retry = await upload(client, worker.workerToken, file('Demo.log', 'first'));
    expect(retry).toEqual(first);
    for (let i = 1; i < 8; i++) await upload(client, worker.workerToken, file(`extra-${i}.log`, `text ${i}`));
    await expect(upload(client, worker.workerToken, file('ninth.log', 'one too many'))).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
      details: `session ${sessionId} already has 8 log files`,
    });
    expect(logFilesOf(t.cp, sessionId)).toHaveLength(8);
    client.close();
  });
});
