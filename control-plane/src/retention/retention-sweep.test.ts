// The retention sweep on a real SQLite file: exactly what is older than the window goes (ended
// sessions with their snapshots, telemetry rows and log file records; fleet events; settled
// commands), the rest stays (recent history, sessions not ended whatever their age, unsettled
// commands); every statement deletes at most a batch; close() stops a sweep between two batches.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { ManualClock } from '@pixelfleet/common';
import { openDatabase, type Db } from '../db/database';
import { SqliteEventsRepository, type EventsRepository } from '../repositories/events';
import { SqliteWorkersRepository, type CommandPhase } from '../repositories/workers';
import { SqliteBuildsRepository } from '../repositories/builds';
import { SqliteSessionsRepository, type SessionRecord } from '../repositories/sessions';
import { SqliteTelemetryRepository } from '../repositories/telemetry';
import { SqliteLogFilesRepository } from '../repositories/log-files';
import { snapshotOf } from '../sessions/session-snapshots';
import { seedProject, seedSession, seedUser, seedWorker, sessionRecord } from '../repositories/repository-test-db';
import { SqliteSessionDimensionsRepository, type SessionDimensionsRepository } from '../repositories/session-dimensions';
import { SqliteSessionDailyRepository, type SessionDailyRepository } from '../repositories/session-daily';
import { SqliteSessionRetentionRepository, type SessionRetentionRepository } from '../repositories/session-retention';
import { SqliteLogRetentionRepository, type LogRetentionRepository } from '../repositories/log-retention';
import { LocalBlobStore } from '../blobs/blob-store';
import { SqlitePeopleRetentionRepository, type PeopleRetentionRepository } from '../repositories/people-retention';
import { SqliteSignInsRepository } from '../repositories/sign-ins';
import { SqliteMailOutboxRepository } from '../repositories/mail-outbox';
import { SESSION_IDLE_MS, SESSION_MAX_MS } from '../people/people-service';
import { promised } from '../store/promised';
import { RetentionSweep, type RetentionSweepDeps } from './retention-sweep';

const DAY = 24 * 60 * 60 * 1000;
const DAYS = 100;
const TABLES = ['sessions', 'session_snapshots', 'telemetry_rows', 'log_files', 'events', 'worker_commands'] as const;

let dir: string;
let db: Db;
let clock: ManualClock;
let blobs: LocalBlobStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-retention-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  blobs = new LocalBlobStore(join(dir, 'blobs'));
  clock = new ManualClock(Date.parse('2026-06-01T00:00:00Z'));
  seedUser(db);
  seedProject(db, 'prj_1');
  seedWorker(db, 'wrk_1', { slots: 4 });
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function sweeper(overrides: Partial<RetentionSweepDeps> = {}): RetentionSweep {
  return new RetentionSweep({
    sessions: promised<SessionRetentionRepository>(new SqliteSessionRetentionRepository(db)),
    events: promised<EventsRepository>(new SqliteEventsRepository(db)),
    commands: new SqliteWorkersRepository(db),
    clock,
    log: pino({ level: 'silent' }),
    sessionDays: DAYS,
    logs: promised<LogRetentionRepository>(new SqliteLogRetentionRepository(db)),
    blobs,
    // The shorter windows for logs and telemetry are off here; their own tests set them.
    logDays: 10 * DAYS,
    telemetryDays: 10 * DAYS,
    sweepIntervalMs: 60 * 60_000,
    ...overrides,
  });
}

/** A session that last changed `ageDays` ago, with `children` rows in each table that hangs off it. */
function seedAgedSession(id: string, status: SessionRecord['status'], ageDays: number, children = 1): void {
  const at = clock.now() - ageDays * DAY;
  const session = sessionRecord(id, at - 1000, { status, updatedAt: at });
  const sessions = new SqliteSessionsRepository(db);
  seedSession(db, session); // with its first snapshot, received at `at`
  for (let i = 0; i < children; i++) {
    if (i > 0) sessions.update(session, snapshotOf(session)); // a further snapshot, also received at `at`
    seedTelemetry(id, ageDays);
    seedLog(`log_${id}_${i}`, id, ageDays);
  }
}

/** A telemetry row of the session received `ageDays` ago. */
function seedTelemetry(sessionId: string, ageDays: number): void {
  new SqliteTelemetryRepository(db).insertMany([{ sessionId, projectId: 'prj_1', logType: undefined, event: undefined, timestamp: 't', receivedAt: clock.now() - ageDays * DAY, row: {} }]);
}

/** A log file record of the session uploaded `ageDays` ago, naming the blob. */
function seedLog(logFileId: string, sessionId: string, ageDays: number, blobSha256 = '0'.repeat(64)): void {
  new SqliteLogFilesRepository(db).insert({ logFileId, sessionId, projectId: 'prj_1', fileName: `${logFileId}.log`, fileSize: 1, gzSize: 1, blobSha256, uploadedAt: clock.now() - ageDays * DAY });
}

function seedEvent(ageDays: number): void {
  new SqliteEventsRepository(db).append({ type: 'session.ended', occurredAt: clock.now() - ageDays * DAY, workerId: undefined, sessionId: undefined, projectId: undefined, data: {} });
}

let seq = 0;
function seedCommand(phase: CommandPhase, ageDays: number): void {
  seq += 1;
  const at = clock.now() - ageDays * DAY;
  const workers = new SqliteWorkersRepository(db);
  workers.enqueueCommand({ workerId: 'wrk_1', commandId: `cmd_${seq}`, kind: 'StopSession', payload: '{}', notAfter: undefined, nowMs: at });
  if (phase !== 'PENDING') workers.setCommandPhase(`cmd_${seq}`, phase, undefined, undefined, at);
}

const count = (table: string, where = '1'): number => (db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n;
const ids = (table: string, column = 'id'): string[] => (db.prepare(`SELECT ${column} AS v FROM ${table} ORDER BY ${column}`).all() as { v: string }[]).map((r) => r.v);
const totalRows = (): number => TABLES.reduce((sum, t) => sum + count(t), 0);

describe('RetentionSweep', () => {
  it('deletes exactly what is older than retention.sessionDays and keeps the rest and anything not ended', async () => {
    seedAgedSession('s_old', 'Terminated', DAYS + 1, 3);
    seedAgedSession('s_just_old', 'Terminated', DAYS + 0.001, 2);
    seedAgedSession('s_recent', 'Terminated', DAYS - 0.001, 2);
    seedAgedSession('s_old_running', 'Running', DAYS + 50, 2); // never ended (a bug elsewhere): its history stays
    seedAgedSession('s_old_terminating', 'Terminating', DAYS + 50, 1);
    seedEvent(DAYS + 1);
    seedEvent(DAYS + 0.001);
    seedEvent(DAYS - 0.001);
    seedEvent(1);
    seedCommand('SUCCEEDED', DAYS + 1);
    seedCommand('FAILED', DAYS + 1);
    seedCommand('PENDING', DAYS + 1); // not settled: it will be resent, whatever its age
    seedCommand('SUCCEEDED', DAYS - 1);

    const result = await sweeper().sweep();

    expect(result).toMatchObject({ sessions: 2, snapshots: 5, telemetryRows: 5, logFiles: 5, events: 2, commands: 2 });
    expect(ids('sessions')).toEqual(['s_old_running', 's_old_terminating', 's_recent']);
    for (const table of ['session_snapshots', 'telemetry_rows', 'log_files']) {
      expect([...new Set(ids(table, 'session_id'))]).toEqual(['s_old_running', 's_old_terminating', 's_recent']);
    }
    expect(count('session_snapshots')).toBe(5);
    expect(count('events')).toBe(2);
    expect(count('events', `occurred_at < ${clock.now() - DAYS * DAY}`)).toBe(0);
    expect(ids('worker_commands', 'phase')).toEqual(['PENDING', 'SUCCEEDED']);
    expect(count('worker_commands', `updated_at > ${clock.now() - DAYS * DAY}`)).toBe(1);

    expect(await sweeper().sweep()).toMatchObject({ sessions: 0, snapshots: 0, telemetryRows: 0, logFiles: 0, events: 0, commands: 0 });
  });

  it("deletes the dimension rollup's whole days before the cutoff, keeping the day the cutoff falls in", async () => {
    const dimensions = new SqliteSessionDimensionsRepository(db);
    const cutoff = clock.now() - DAYS * DAY;
    const cutoffDay = Math.floor(cutoff / DAY);
    for (const at of [cutoff - 3 * DAY, (cutoffDay - 1) * DAY, cutoffDay * DAY - 1, cutoffDay * DAY, cutoff, clock.now()]) dimensions.record('prj_1', at, { browser: 'Chrome', os: 'Linux' });
    const days = () => (db.prepare('SELECT DISTINCT day FROM session_dimension_days ORDER BY day').all() as { day: number }[]).map((r) => r.day);
    const weeks = () => (db.prepare('SELECT DISTINCT week FROM session_dimension_weeks ORDER BY week').all() as { week: number }[]).map((r) => r.week);
    const rows = () => (db.prepare('SELECT (SELECT COUNT(*) FROM session_dimension_days) + (SELECT COUNT(*) FROM session_dimension_weeks) AS n').get() as { n: number }).n;
    expect(days()).toEqual([cutoffDay - 3, cutoffDay - 1, cutoffDay, Math.floor(clock.now() / DAY)]);
    const before = rows();

    const result = await sweeper({ dimensions: promised<SessionDimensionsRepository>(dimensions), batchRows: 3 }).sweep();

    expect(days()).toEqual([cutoffDay, Math.floor(clock.now() / DAY)]);
    // Weeks go once they ended by the cutoff's day: the week holding it stays.
    expect(weeks()).toEqual([...new Set([Math.floor(cutoffDay / 7), Math.floor(clock.now() / DAY / 7)])]);
    expect(result.dimensionDays).toBe(before - rows());
    expect(result.dimensionDays).toBeGreaterThanOrEqual(4); // 2 days x browser and os, and their ended weeks
  });

  it("deletes the daily sessions and start-up rollups' whole days before the cutoff, keeping the day the cutoff falls in", async () => {
    const daily = new SqliteSessionDailyRepository(db);
    const cutoff = clock.now() - DAYS * DAY;
    const cutoffDay = Math.floor(cutoff / DAY);
    for (const at of [cutoff - 3 * DAY, cutoffDay * DAY - 1, cutoffDay * DAY, clock.now()]) {
      daily.recordCreated('prj_9', at);
      daily.recordStartup('prj_9', at, 8_000);
    }
    const days = (table: string) => (db.prepare(`SELECT DISTINCT day FROM ${table} WHERE project_id = 'prj_9' ORDER BY day`).all() as { day: number }[]).map((r) => r.day);
    const today = Math.floor(clock.now() / DAY);
    expect(days('session_days')).toEqual([cutoffDay - 3, cutoffDay - 1, cutoffDay, today]);

    const result = await sweeper({ daily: promised<SessionDailyRepository>(daily), batchRows: 1 }).sweep();

    expect(days('session_days')).toEqual([cutoffDay, today]);
    expect(days('session_startup_days')).toEqual([cutoffDay, today]);
    expect(result.dailyRows).toBe(4);
    expect(daily.days('prj_9', cutoffDay * DAY, clock.now())).toEqual([
      { dayStartMs: cutoffDay * DAY, sessions: 1, started: 1, medianStartupMs: expect.closeTo(8_000, -3) as number },
      { dayStartMs: today * DAY, sessions: 1, started: 1, medianStartupMs: expect.closeTo(8_000, -3) as number },
    ]);
  });

  it('deletes at most batchRows rows per statement, with a turn of the event loop between two', async () => {
    for (let i = 0; i < 25; i++) seedAgedSession(`s_${String(i).padStart(2, '0')}`, 'Terminated', DAYS + 1 + i, 3);
    for (let i = 0; i < 37; i++) seedEvent(DAYS + 1 + i);
    for (let i = 0; i < 12; i++) seedCommand('SUCCEEDED', DAYS + 1);
    seedAgedSession('s_keep', 'Terminated', 1, 3);
    const before = totalRows();
    const steps: number[] = [];
    let last = before;
    const result = await sweeper({
      batchRows: 10,
      betweenBatches: async () => {
        const now = totalRows();
        steps.push(last - now);
        last = now;
        await Promise.resolve();
      },
    }).sweep();

    expect(before - totalRows()).toBe(25 + 25 * 9 + 37 + 12);
    expect(Math.max(...steps)).toBe(10);
    expect(steps.every((n) => n >= 0 && n <= 10)).toBe(true);
    expect(result.batches).toBe(steps.length);
    expect(steps.length).toBeGreaterThanOrEqual(Math.ceil((before - totalRows()) / 10));
    expect(ids('sessions')).toEqual(['s_keep']);
    expect(count('telemetry_rows')).toBe(3);
  });

  it('close() stops a running sweep after its current batch; the next start carries on', async () => {
    for (let i = 0; i < 50; i++) seedEvent(DAYS + 1 + i);
    let sweep: RetentionSweep | undefined;
    let turns = 0;
    let closing: Promise<void> | undefined;
    sweep = sweeper({
      batchRows: 10,
      betweenBatches: async () => {
        turns += 1;
        if (turns === 2) closing = sweep!.close();
        await Promise.resolve();
      },
    });
    const result = await sweep.sweep();
    await closing;
    expect(result.events).toBe(20);
    expect(count('events')).toBe(30);
    sweep = sweeper({ batchRows: 10 });
    expect((await sweep.sweep()).events).toBe(30);
  });

  it('a sweep asked for while one runs starts when it ends, with its own cutoff; asks meanwhile join it', async () => {
    seedEvent(DAYS + 1);
    const sweep = sweeper();
    const first = sweep.sweep();
    seedEvent(DAYS - 0.5); // old enough for a sweep whose cutoff is taken a day later
    clock.advance(DAY);
    const second = sweep.sweep();
    expect(sweep.sweep()).toBe(second);
    expect((await first).events).toBe(1);
    expect((await second).events).toBe(1);
    expect(count('events')).toBe(0);
  });

  it('sweeps at start and every sweepIntervalMs on the clock, until closed', async () => {
    const sweep = sweeper({ sweepIntervalMs: 60 * 60_000 });
    seedEvent(DAYS + 1);
    sweep.start();
    await expect.poll(() => count('events')).toBe(0);
    seedEvent(DAYS - 0.5 + 1 / 1440); // older than the window in 11 h 59 min
    clock.advance(11 * 60 * 60_000);
    await sweep.sweep();
    expect(count('events')).toBe(1);
    clock.advance(60 * 60_000); // the 12th hourly sweep
    await expect.poll(() => count('events')).toBe(0);
    await sweep.close();
    seedEvent(DAYS + 1);
    clock.advance(2 * 60 * 60_000);
    await Promise.resolve();
    expect(count('events')).toBe(1);
    expect(clock.pending).toBe(0);
  });

  describe('retention.logDays and retention.telemetryDays', () => {
    const LOG_DAYS = 30;
    const TELEMETRY_DAYS = 92;

    async function storeBlob(text: string): Promise<string> {
      return (await blobs.write(Readable.from([Buffer.from(text)]), 1024)).sha256;
    }

    it('deletes log records older than logDays with the blobs nothing else names, and telemetry older than telemetryDays, sessions ended or not', async () => {
      seedSession(db, sessionRecord('s_ended', 0, { status: 'Terminated', updatedAt: clock.now() - 40 * DAY }));
      seedSession(db, sessionRecord('s_running', 0, { status: 'Running', updatedAt: clock.now() - 95 * DAY }));
      const alone = await storeBlob('a log no one else has');
      const sharedWithOld = await storeBlob('a log uploaded twice, both long ago');
      const sharedWithRecent = await storeBlob('a log uploaded long ago and again lately');
      const sharedWithBuild = await storeBlob('bytes a build archive has too');
      const builds = new SqliteBuildsRepository(db);
      builds.insert({ uploadId: 'upl_1', projectId: 'prj_1', fileUrl: undefined, status: 'Ready', objection: undefined, autoRelease: false, createdAt: 0, updatedAt: 0 });
      builds.recordArchive('upl_1', { sha256: sharedWithBuild, bytes: 1 });
      seedLog('log_alone', 's_ended', LOG_DAYS + 1, alone);
      seedLog('log_old_a', 's_running', LOG_DAYS + 2, sharedWithOld);
      seedLog('log_old_b', 's_ended', LOG_DAYS + 0.001, sharedWithOld);
      seedLog('log_shared_old', 's_running', LOG_DAYS + 3, sharedWithRecent);
      seedLog('log_shared_recent', 's_ended', LOG_DAYS - 0.001, sharedWithRecent);
      seedLog('log_build', 's_ended', LOG_DAYS + 5, sharedWithBuild);
      for (const age of [TELEMETRY_DAYS + 2, TELEMETRY_DAYS + 0.001, TELEMETRY_DAYS - 0.001, 1]) seedTelemetry('s_running', age);
      seedTelemetry('s_ended', TELEMETRY_DAYS + 1);

      const result = await sweeper({ logDays: LOG_DAYS, telemetryDays: TELEMETRY_DAYS }).sweep();

      expect(result).toMatchObject({ sessions: 0, logFiles: 5, logBlobs: 2, telemetryRows: 3 });
      expect(ids('log_files')).toEqual(['log_shared_recent']);
      expect(await blobs.has(alone)).toBe(false);
      expect(await blobs.has(sharedWithOld)).toBe(false);
      expect(await blobs.has(sharedWithRecent)).toBe(true);
      expect(await blobs.has(sharedWithBuild)).toBe(true);
      expect(count('telemetry_rows')).toBe(2);
      expect(count('telemetry_rows', `received_at < ${clock.now() - TELEMETRY_DAYS * DAY}`)).toBe(0);
      expect(ids('sessions')).toEqual(['s_ended', 's_running']); // sessions keep their own window

      // The last record naming a blob goes a day later, and the blob with it.
      clock.advance(DAY);
      expect(await sweeper({ logDays: LOG_DAYS, telemetryDays: TELEMETRY_DAYS }).sweep()).toMatchObject({ logFiles: 1, logBlobs: 1 });
      expect(await blobs.has(sharedWithRecent)).toBe(false);
    });

    it('an ended session past sessionDays takes its log blobs along', async () => {
      const sha = await storeBlob('the log of a session long over');
      seedSession(db, sessionRecord('s_gone', 0, { status: 'Terminated', updatedAt: clock.now() - (DAYS + 1) * DAY }));
      seedLog('log_gone', 's_gone', 1, sha); // uploaded late (a spool drained after an outage): the session's age decides
      expect(await sweeper({ logDays: LOG_DAYS, telemetryDays: TELEMETRY_DAYS }).sweep()).toMatchObject({ sessions: 1, logFiles: 1, logBlobs: 1 });
      expect(await blobs.has(sha)).toBe(false);
    });

    it('deletes logs and telemetry in batches of at most batchRows, a turn of the event loop between two', async () => {
      seedSession(db, sessionRecord('s_live', 0, { status: 'Running' }));
      const sha = await storeBlob('one blob for many records');
      for (let i = 0; i < 23; i++) seedLog(`log_${String(i).padStart(2, '0')}`, 's_live', LOG_DAYS + 1 + i, sha);
      for (let i = 0; i < 31; i++) seedTelemetry('s_live', TELEMETRY_DAYS + 1 + i);
      const steps: number[] = [];
      let last = count('log_files') + count('telemetry_rows');
      const result = await sweeper({
        logDays: LOG_DAYS,
        telemetryDays: TELEMETRY_DAYS,
        batchRows: 10,
        betweenBatches: async () => {
          const now = count('log_files') + count('telemetry_rows');
          steps.push(last - now);
          last = now;
          await Promise.resolve();
        },
      }).sweep();
      expect(result).toMatchObject({ logFiles: 23, logBlobs: 1, telemetryRows: 31 });
      expect(Math.max(...steps)).toBe(10);
      expect(count('log_files') + count('telemetry_rows')).toBe(0);
      expect(await blobs.has(sha)).toBe(false);
    });
  });
});

describe("people's rows", () => {
  it('deletes sign-ins that are over, links no longer usable and mail records sent or given up before the cutoff; keeps the rest', async () => {
    const now = clock.now();
    const signIns = new SqliteSignInsRepository(db);
    const session = (hash: string, lastSeenAt: number, expiresAt: number) => signIns.insertSession(hash, { userId: 'usr_1', createdAt: lastSeenAt, lastSeenAt, expiresAt });
    session('live', now - 60_000, now + SESSION_MAX_MS);
    session('idle', now - SESSION_IDLE_MS, now + DAY);
    session('expired', now - 60_000, now);
    const link = (hash: string, expiresAt: number) => signIns.insertLink({ tokenHash: hash, userId: 'usr_1', purpose: 'invitation', createdAt: now - DAY, expiresAt });
    link('usable', now + DAY);
    link('expired', now - 1);
    link('used', now + DAY);
    signIns.useLink('used', 'invitation', now);

    const outbox = new SqliteMailOutboxRepository(db);
    const mail = (at: number) => outbox.enqueue({ to: 'a@example.com', subject: 's', body: 'b' }, at);
    const oldSent = mail(now - (DAYS + 1) * DAY);
    outbox.markSent(oldSent, 1, now - (DAYS + 1) * DAY);
    const oldFailed = mail(now - (DAYS + 1) * DAY);
    outbox.markFailed(oldFailed, 10, now - (DAYS + 1) * DAY, 'refused');
    const recentSent = mail(now - DAY);
    outbox.markSent(recentSent, 1, now - DAY);
    const oldPending = mail(now - (DAYS + 1) * DAY); // never sent: kept, whatever its age

    const result = await sweeper({ people: promised<PeopleRetentionRepository>(new SqlitePeopleRetentionRepository(db)) }).sweep();
    expect(result).toMatchObject({ signIns: 2, links: 2, mails: 2 });
    expect((db.prepare('SELECT token_hash FROM dashboard_sessions').all() as { token_hash: string }[]).map((r) => r.token_hash)).toEqual(['live']);
    expect((db.prepare('SELECT token_hash FROM user_links').all() as { token_hash: string }[]).map((r) => r.token_hash)).toEqual(['usable']);
    expect(outbox.list(10).map((m) => m.id).sort((a, b) => a - b)).toEqual([recentSent, oldPending]);
  });
});

