// The agent's one-file log upload (what its spool sends) against a real control plane over real
// gRPC: a file becomes a record whose sizes match; sent again (its answer lost) it gets that record;
// refusals that a retry cannot change are LogUploadRefused (the spool drops the file), while a
// control plane that cannot be reached is a plain error (the spool keeps it and retries).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Metadata } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { agentV1 } from '@pixelfleet/proto';
import { createAgentClient, LogUploadRefused, uploadSessionLog } from '@pixelfleet/agent/test-support';
import { startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { logFile, seedProject, seedSession } from '../support/seed';

let t: TestControlPlane;
let dir: string;
beforeAll(async () => {
  t = await startTestControlPlane();
  dir = mkdtempSync(join(tmpdir(), 'pf-log-upload-'));
});
afterAll(async () => {
  await t.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function enroll(client: agentV1.AgentServiceClient): Promise<agentV1.EnrollResponse> {
  const md = new Metadata();
  md.set('authorization', `Bearer ${TEST_JOIN_TOKEN}`);
  return new Promise((resolve, reject) => client.enroll({ hostname: 'h', region: 'europe', slots: 1, agentVersion: 't' }, md, (e, r) => (e ? reject(e) : resolve(r))));
}

describe('uploadSessionLog', () => {
  it('stores a spooled file under its name; the same file again gets the stored record; refusals are final, an unreachable control plane is not', async () => {
    const client = createAgentClient(t.started.grpcAddress);
    const worker = await enroll(client);
    const { projectId } = await seedProject(t.cp);
    const sessionId = seedSession(t.cp, { projectId, status: 'Terminated', workerId: worker.workerId });
    const text = 'LogInit: Display: Running engine for game: Game\n'.repeat(5000);
    const path = join(dir, 'spooled.log');
    writeFileSync(path, text);
    const file = { path, fileName: 'Game.log', fileSize: text.length };

    const stored = await uploadSessionLog(client, worker.workerToken, sessionId, file);
    expect(stored.gzSize).toBe(gzipSync(text).length);
    expect(logFile(t.cp, stored.logFileId)).toMatchObject({ fileName: 'Game.log', fileSize: text.length, gzSize: stored.gzSize });
    const again = await uploadSessionLog(client, worker.workerToken, sessionId, file);
    expect(again.logFileId).toBe(stored.logFileId);

    await expect(uploadSessionLog(client, worker.workerToken, 'session_1_404', file)).rejects.toBeInstanceOf(LogUploadRefused);
    await expect(uploadSessionLog(client, worker.workerToken, sessionId, { ...file, fileName: '../etc.log' })).rejects.toBeInstanceOf(LogUploadRefused);
    const other = await enroll(client);
    await expect(uploadSessionLog(client, other.workerToken, sessionId, { ...file, fileName: 'Other.log' })).rejects.toBeInstanceOf(LogUploadRefused);
    await expect(uploadSessionLog(client, worker.workerToken, sessionId, { ...file, path: join(dir, 'gone.log'), fileName: 'Gone.log' })).rejects.toBeInstanceOf(LogUploadRefused);
    client.close();

    const nowhere = createAgentClient('127.0.0.1:1');
    const down = await uploadSessionLog(nowhere, worker.workerToken, sessionId, file).catch((err: unknown) => err);
    expect(down).toBeInstanceOf(Error);
    expect(down).not.toBeInstanceOf(LogUploadRefused);
    nowhere.close();
  });
});
