// The build service on a real SQLite file and event log, with a recording webhook sender: each
// status change asks the stage table, is committed (status and updatedAt) before its fleet event
// and webhook fire, and a change that raced in is refused rather than overwritten.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { DomainError } from '../errors';
import { EventLog } from '../events/event-log';
import { ManualClock } from '@pixelfleet/common';
import { randomIds } from '../lib/ids';
import { SqliteBuildsRepository, type BuildRecord, type BuildsRepository } from '../repositories/builds';
import { SqliteEventsRepository, type EventsRepository } from '../repositories/events';
import { seedUser, seedProject } from '../repositories/repository-test-db';
import { promised } from '../store/promised';
import type { WebhookEnvelope } from '../webhooks/webhook-envelope';
import { BuildCallLimit } from './build-call-limit';
import { BuildService } from './build-service';
import type { BuildStatus } from './build-stages';

const silent = pino({ level: 'silent' });
let dir: string;
let db: Db;
let clock: ManualClock;
let service: BuildService;
let builds: SqliteBuildsRepository;
/** What the database held for the build when each event and webhook fired, in firing order. */
let fired: { kind: 'event' | 'webhook'; name: string; stored: Pick<BuildRecord, 'status' | 'updatedAt'> | undefined; envelope?: WebhookEnvelope; data?: Record<string, unknown> }[];

const stored = (uploadId: string) => {
  const b = builds.findById(uploadId);
  return b && { status: b.status, updatedAt: b.updatedAt };
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-build-service-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  seedUser(db);
  for (const id of ['prj_1', 'prj_2']) seedProject(db, id);
  clock = new ManualClock();
  builds = new SqliteBuildsRepository(db);
  fired = [];
  const events = new EventLog(promised<EventsRepository>(new SqliteEventsRepository(db)), clock, silent);
  events.follow(0, (e) => fired.push({ kind: 'event', name: e.type, stored: stored(String(e.data.uploadId)), data: e.data }));
  const webhooks = { emit: (_projectId: string, envelope: WebhookEnvelope) => void fired.push({ kind: 'webhook', name: envelope.event, stored: stored(envelope.uploadId ?? ''), envelope }) };
  service = new BuildService({ builds: promised<BuildsRepository>(builds), events, webhooks, buildCalls: new BuildCallLimit(clock, 120), urlPolicy: { allowPrivateUrls: true, resolve: () => Promise.resolve([]) }, clock, ids: randomIds });
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const submit = (autoRelease = false) => service.submit({ userId: 'usr_1', projectId: 'prj_1', fileUrl: 'https://files.example.com/b.zip', autoRelease });

describe('BuildService', () => {
  it('commits each status with its updatedAt before the fleet event and the webhook fire, through the whole pipeline', async () => {
    const start = clock.now();
    const { uploadId } = await submit(true);
    const path: BuildStatus[] = ['Downloading Files', 'Extracting & Scanning', 'Saving to Repository', 'Distributing to Servers', 'Approved'];
    for (const to of path) {
      clock.advance(1_000);
      expect(await service.advance(uploadId, to)).toMatchObject({ status: to, updatedAt: clock.now() });
    }
    const events = ['build.uploaded', 'build.downloading', 'build.extracting', 'build.saving', 'build.distributing', 'build.approved'];
    expect(fired.map((f) => `${f.kind} ${f.name}`)).toEqual(events.flatMap((e) => [`event ${e}`, `webhook ${e}`]));
    ['pending', ...path].forEach((status, i) => {
      for (const f of fired.slice(2 * i, 2 * i + 2)) expect([f.name, f.stored]).toEqual([events[i], { status, updatedAt: start + 1_000 * i }]);
      expect(fired[2 * i + 1]?.envelope).toEqual({ event: events[i], projectId: 'prj_1', uploadId, fileUrl: 'https://files.example.com/b.zip', status, objection: null, timestamp: new Date(start + 1_000 * i).toISOString() });
    });
    expect(fired[0]?.data).toEqual({ uploadId, autoRelease: true });
  });

  it('rejects with an objection, fires build.rejected carrying it, and allows nothing after', async () => {
    const { uploadId } = await submit();
    await service.advance(uploadId, 'Downloading Files');
    await service.advance(uploadId, 'Download Failed', 'the URL answered 403');
    expect(fired.at(-1)?.envelope).toMatchObject({ event: 'build.rejected', status: 'Download Failed', objection: 'the URL answered 403' });
    expect(fired.at(-2)?.data).toEqual({ uploadId, objection: 'the URL answered 403' });
    expect(builds.findById(uploadId)).toMatchObject({ status: 'Download Failed', objection: 'the URL answered 403' });
    await expect(service.advance(uploadId, 'Extracting & Scanning')).rejects.toThrow(new DomainError('precondition', `Build ${uploadId} cannot move from Download Failed to Extracting & Scanning`));
  });

  it('refuses a move the table does not have without writing or firing anything', async () => {
    const { uploadId } = await submit();
    const before = fired.length;
    await expect(service.advance(uploadId, 'Ready')).rejects.toThrow(DomainError);
    await expect(service.activate({ userId: 'usr_2', projectId: 'prj_1', uploadId })).rejects.toThrow(`Build ${uploadId} cannot be distributed while its status is pending`);
    expect(builds.findById(uploadId)?.status).toBe('pending');
    expect(fired.length).toBe(before);
    await expect(service.advance('upl_none', 'Ready')).rejects.toThrow(new DomainError('not_found', 'build upl_none not found'));
  });

  it('activates a ready, approved or distributing build of the project; another project\'s is unknown', async () => {
    const { uploadId } = await submit();
    for (const to of ['Downloading Files', 'Extracting & Scanning', 'Saving to Repository', 'Ready'] as const) await service.advance(uploadId, to);
    await expect(service.activate({ userId: 'usr_1', projectId: 'prj_2', uploadId })).rejects.toThrow('Upload not found');
    clock.advance(120_000);
    expect((await service.activate({ userId: 'usr_1', projectId: 'prj_1', uploadId })).status).toBe('Distributing to Servers');
    expect(fired.at(-2)).toMatchObject({ name: 'build.distributing', data: { uploadId, by: 'usr_1' }, stored: { status: 'Distributing to Servers' } });
    await service.advance(uploadId, 'Approved');
    clock.advance(120_000);
    expect((await service.activate({ userId: 'usr_1', projectId: 'prj_1', uploadId })).status).toBe('Distributing to Servers');
    clock.advance(120_000);
    expect((await service.activate({ userId: 'usr_1', projectId: 'prj_1', uploadId })).status).toBe('Distributing to Servers');
  });

  it('refuses a change that raced in after the status was read (conflict), leaving the newer status', async () => {
    const { uploadId } = await submit();
    const read = builds.findById(uploadId)!;
    builds.moveStatus(uploadId, 'pending', 'Downloading Files', undefined, clock.now());
    const racing = new SqliteBuildsRepository(db);
    racing.findById = () => read;
    const stale = new BuildService({ builds: promised<BuildsRepository>(racing), events: new EventLog(promised<EventsRepository>(new SqliteEventsRepository(db)), clock, silent), webhooks: { emit: () => undefined }, buildCalls: new BuildCallLimit(clock, 120), urlPolicy: { allowPrivateUrls: true, resolve: () => Promise.resolve([]) }, clock, ids: randomIds });
    await expect(stale.advance(uploadId, 'Downloading Files')).rejects.toThrow(new DomainError('conflict', `Build ${uploadId} changed status while moving to Downloading Files`));
    expect(builds.findById(uploadId)?.status).toBe('Downloading Files');
  });

  it('a build the store could not take is not an accepted call: the build-call window stays the caller\'s', async () => {
    const repository = promised<BuildsRepository>(builds);
    let refuse = true;
    const flaky = new BuildService({
      builds: { ...repository, insert: (b) => (refuse ? Promise.reject(new Error('connection lost')) : repository.insert(b)) },
      events: new EventLog(promised<EventsRepository>(new SqliteEventsRepository(db)), clock, silent),
      webhooks: { emit: () => undefined },
      buildCalls: new BuildCallLimit(clock, 120),
      urlPolicy: { allowPrivateUrls: true, resolve: () => Promise.resolve([]) },
      clock,
      ids: randomIds,
    });
    const input = { userId: 'usr_1', projectId: 'prj_1', fileUrl: 'https://files.example.com/b.zip', autoRelease: false };
    await expect(flaky.submit(input)).rejects.toThrow('connection lost');
    refuse = false;
    expect((await flaky.submit(input)).status).toBe('pending');
    await expect(flaky.submit(input)).rejects.toMatchObject({ entry: 'buildCallRateLimited', status: 429 });
  });

  it('two activations at once: one moves the build, the other is refused without using its build-call window', async () => {
    const { uploadId } = await submit();
    for (const to of ['Downloading Files', 'Extracting & Scanning', 'Saving to Repository', 'Ready'] as const) await service.advance(uploadId, to);
    clock.advance(120_000);
    const users = ['usr_1', 'usr_2'];
    const results = await Promise.allSettled(users.map((userId) => service.activate({ userId, projectId: 'prj_1', uploadId })));
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const loser = users[results.findIndex((r) => r.status === 'rejected')]!;
    expect(results.find((r) => r.status === 'rejected')?.reason).toEqual(new DomainError('conflict', `Build ${uploadId} changed status while moving to Distributing to Servers`));
    // Its window is untouched: it may activate again at once (a distributing build may be activated again).
    expect((await service.activate({ userId: loser, projectId: 'prj_1', uploadId })).status).toBe('Distributing to Servers');
  });

  it('moves a build once when two steps from the same status run at once: the other is refused and fires nothing', async () => {
    const { uploadId } = await submit();
    const before = fired.length;
    const results = await Promise.allSettled([service.advance(uploadId, 'Downloading Files'), service.advance(uploadId, 'Downloading Files')]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')?.reason).toEqual(new DomainError('conflict', `Build ${uploadId} changed status while moving to Downloading Files`));
    expect(fired.slice(before).map((f) => `${f.kind} ${f.name}`)).toEqual(['event build.downloading', 'webhook build.downloading']);
    expect(db.prepare('SELECT status FROM build_stages WHERE upload_id = ?').all(uploadId)).toEqual([{ status: 'pending' }, { status: 'Downloading Files' }]);
  });
});
