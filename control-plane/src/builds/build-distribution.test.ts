// The distribution over a real SQLite file with the store's asynchronous repositories, the real
// build service, and a registry the test plays: what two workers reporting at once, a Hello and
// the scheduler's synchronous canRun see now that every read and write answers with a promise.
// The whole path with real agents is test/integration/build-distribution.test.ts.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentAck, AgentCommand, AgentHello } from '@pixelfleet/proto';
import { ManualClock } from '@pixelfleet/common';
import { EventLog } from '../events/event-log';
import { randomIds } from '../lib/ids';
import { SqliteBuildCopiesRepository, type BuildCopiesRepository } from '../repositories/build-copies';
import { SqliteBuildsRepository, type BuildsRepository } from '../repositories/builds';
import { SqliteEventsRepository, type EventsRepository } from '../repositories/events';
import { SqliteProjectsRepository } from '../repositories/projects';
import { openRepositoryTestDb, seedWorker, type RepositoryTestDb } from '../repositories/repository-test-db';
import { promised } from '../store/promised';
import type { WorkerRegistry } from '../workers/registry';
import { BuildCallLimit } from './build-call-limit';
import { BuildDistribution } from './build-distribution';
import { BuildService } from './build-service';

const SHA = 'a'.repeat(64);

/** A registry whose workers w1 and w2 are connected in europe; the test emits its events. */
function playedRegistry() {
  const listeners = new Map<string, ((...args: unknown[]) => void)[]>();
  const sent: { workerId: string; command: AgentCommand }[] = [];
  const workers = ['w1', 'w2'].map((workerId) => ({ workerId, region: 'europe', draining: false, hostname: `${workerId}.local` }));
  const registry = {
    on: (event: string, listener: (...args: unknown[]) => void) => void listeners.set(event, [...(listeners.get(event) ?? []), listener]),
    placeable: () => workers,
    get: (workerId: string) => workers.find((w) => w.workerId === workerId)!,
    sendCommand: (workerId: string, command: AgentCommand) => void sent.push({ workerId, command }),
  } as unknown as WorkerRegistry;
  const emit = (event: string, ...args: unknown[]) => (listeners.get(event) ?? []).forEach((l) => l(...args));
  return { registry, sent, emit };
}

let t: RepositoryTestDb;
let clock: ManualClock;
let errors: string[];
let scheduling: number;
let fleetEvents: string[];

beforeEach(() => {
  t = openRepositoryTestDb('pf-distribution-');
  for (const w of ['w1', 'w2']) seedWorker(t.db, w);
  clock = new ManualClock();
  errors = [];
  scheduling = 0;
  fleetEvents = [];
});
afterEach(() => t.remove());

function distributionOf(played: ReturnType<typeof playedRegistry>) {
  const log = pino({ level: 'error' }, { write: (line: string) => void errors.push((JSON.parse(line) as { msg: string }).msg) });
  const builds = promised<BuildsRepository>(new SqliteBuildsRepository(t.db));
  const projects = new SqliteProjectsRepository(t.db);
  const events = new EventLog(promised<EventsRepository>(new SqliteEventsRepository(t.db)), clock, log);
  events.follow(0, (e) => fleetEvents.push(e.type));
  const distribution: BuildDistribution = new BuildDistribution({
    builds,
    copies: promised<BuildCopiesRepository>(new SqliteBuildCopiesRepository(t.db)),
    projects,
    registry: played.registry,
    issueLink: ({ workerId, uploadId }) => ({ url: `https://cp.example.com/${uploadId}/${workerId}` }),
    advance: (uploadId, to, objection) => service.advance(uploadId, to, objection),
    requestScheduling: () => void (scheduling += 1),
    deadlineMs: 60_000,
    clock,
    log,
  });
  const service: BuildService = new BuildService({
    builds,
    events,
    webhooks: { emit: () => undefined },
    buildCalls: new BuildCallLimit(clock, 0),
    urlPolicy: { allowPrivateUrls: true, resolve: () => Promise.resolve([]) },
    clock,
    ids: randomIds,
    distribution,
  });
  return { distribution, service, projects };
}

/** A Ready build of prj_1 with an archive, as the pipeline leaves one. */
function readyBuild(uploadId = 'upl_1'): string {
  const builds = new SqliteBuildsRepository(t.db);
  builds.insert({ uploadId, projectId: 'prj_1', fileUrl: 'https://files.example.com/b.zip', status: 'Ready', objection: undefined, autoRelease: false, createdAt: 1, updatedAt: 1 });
  builds.recordArchive(uploadId, { sha256: SHA, bytes: 10 });
  return uploadId;
}

const ack = (phase: AgentAck['phase']): AgentAck => ({ seq: 1, commandId: 'cmd', phase, errorCode: '', errorMessage: '', progressPercent: 100 });
const prepare = (uploadId: string): AgentCommand => ({ kind: 'prepareBuild', uploadId, projectId: 'prj_1', downloadUrl: 'https://x', sizeBytes: 10, sha256: SHA });
const hello = (claims: { uploadId: string; ready: boolean }[]) => ({ cachedBuilds: claims.map((c) => ({ ...c, sha256: SHA })) }) as unknown as AgentHello;
const copiesOf = (uploadId: string) => new SqliteBuildCopiesRepository(t.db).listOfBuild(uploadId).map((c) => [c.workerId, c.phase]);

describe('BuildDistribution with an asynchronous store', () => {
  it('settles a build once when its two copies finish at once: Approved and live, one build.approved, nothing refused', async () => {
    const played = playedRegistry();
    const { distribution, service, projects } = distributionOf(played);
    const uploadId = readyBuild();
    await service.activate({ userId: 'usr_1', projectId: 'prj_1', uploadId });
    expect(played.sent.map((s) => s.workerId)).toEqual(['w1', 'w2']);
    expect(copiesOf(uploadId)).toEqual([['w1', 'sent'], ['w2', 'sent']]);
    played.emit('commandFinished', 'w1', prepare(uploadId), ack('SUCCEEDED'));
    played.emit('commandFinished', 'w2', prepare(uploadId), ack('SUCCEEDED'));
    await distribution.idle();
    expect(copiesOf(uploadId)).toEqual([['w1', 'ready'], ['w2', 'ready']]);
    expect(new SqliteBuildsRepository(t.db).findById(uploadId)).toMatchObject({ status: 'Approved', live: true });
    expect(projects.findById('prj_1')?.liveUploadId).toBe(uploadId);
    expect(fleetEvents.filter((e) => e === 'build.approved')).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('records a worker\'s outcomes in the order they came: a failure after a success leaves the copy failed', async () => {
    const played = playedRegistry();
    const { distribution, service } = distributionOf(played);
    const uploadId = readyBuild();
    await service.activate({ userId: 'usr_1', projectId: 'prj_1', uploadId });
    played.emit('commandFinished', 'w1', prepare(uploadId), ack('SUCCEEDED'));
    played.emit('commandFinished', 'w1', prepare(uploadId), ack('FAILED'));
    await distribution.idle();
    expect(copiesOf(uploadId)).toEqual([['w1', 'failed'], ['w2', 'sent']]);
    expect(distribution.canRun('w1', uploadId)).toBe(false);
  });

  it('canRun answers no for a pair it has not read yet, then what the store holds, asking the scheduler for a run on a yes', async () => {
    const uploadId = readyBuild();
    const builds = new SqliteBuildsRepository(t.db);
    builds.moveStatus(uploadId, 'Ready', 'Distributing to Servers', undefined, 2);
    builds.moveStatus(uploadId, 'Distributing to Servers', 'Approved', undefined, 3);
    new SqliteBuildCopiesRepository(t.db).put({ uploadId, workerId: 'w1', phase: 'ready', error: undefined, updatedAt: 3 });
    // A control plane started over these rows (a restart): it has read nothing yet.
    const { distribution } = distributionOf(playedRegistry());
    expect([distribution.canRun('w1', uploadId), distribution.canRun('w2', uploadId)]).toEqual([false, false]);
    await distribution.idle();
    expect(scheduling).toBe(1);
    expect([distribution.canRun('w1', uploadId), distribution.canRun('w2', uploadId)]).toEqual([true, false]);
    // A build without an archive (a local build) needs no copy.
    builds.insert({ uploadId: 'upl_local', projectId: 'prj_1', fileUrl: undefined, status: 'Approved', objection: undefined, autoRelease: true, createdAt: 4, updatedAt: 4 });
    distribution.canRun('w2', 'upl_local');
    await distribution.idle();
    expect(distribution.canRun('w2', 'upl_local')).toBe(true);
  });

  it('takes in a Hello before the worker runs anything: a copy it no longer claims is sent again, and it runs the build once it reports it ready', async () => {
    const played = playedRegistry();
    const { distribution, service } = distributionOf(played);
    const uploadId = readyBuild();
    await service.activate({ userId: 'usr_1', projectId: 'prj_1', uploadId });
    for (const w of ['w1', 'w2']) played.emit('commandFinished', w, prepare(uploadId), ack('SUCCEEDED'));
    await distribution.idle();
    expect(distribution.canRun('w1', uploadId)).toBe(true);
    // w1 comes back with an empty cache: until its Hello is taken in, it runs nothing with a copy.
    played.sent.length = 0;
    played.emit('helloAccepted', 'w1', hello([]));
    expect(distribution.canRun('w1', uploadId)).toBe(false);
    await distribution.idle();
    expect(played.sent.map((s) => [s.workerId, s.command.kind])).toEqual([['w1', 'prepareBuild']]);
    expect(copiesOf(uploadId)).toEqual([['w1', 'sent'], ['w2', 'ready']]);
    expect(distribution.canRun('w1', uploadId)).toBe(false);
    played.emit('commandFinished', 'w1', prepare(uploadId), ack('SUCCEEDED'));
    await distribution.idle();
    expect(distribution.canRun('w1', uploadId)).toBe(true);
    expect(errors).toEqual([]);
  });

  it('believes a Hello\'s claim of a copy it sent: recorded ready, runnable there, and the scheduler asked again', async () => {
    const played = playedRegistry();
    const { distribution, service } = distributionOf(played);
    const uploadId = readyBuild();
    await service.activate({ userId: 'usr_1', projectId: 'prj_1', uploadId });
    await distribution.idle();
    const before = scheduling;
    played.sent.length = 0;
    played.emit('helloAccepted', 'w1', hello([{ uploadId, ready: true }]));
    await distribution.idle();
    expect(copiesOf(uploadId)).toEqual([['w1', 'ready'], ['w2', 'sent']]);
    expect(played.sent).toEqual([]);
    expect(distribution.canRun('w1', uploadId)).toBe(true);
    expect(scheduling).toBeGreaterThan(before);
    expect(errors).toEqual([]);
  });
});
