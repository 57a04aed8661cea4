// Receiving a session's log files on a real SQLite file and blob folder, as the agent's spool sends
// them: a gzip engine log and a gzip crash zip; a retry of a stored file name (its first answer
// lost) gets the stored record and stores nothing twice, for the crash zip as for the log; the
// worker that did not run the session, an unknown session and a bad name are refused; two uploads
// of one session at once are recorded as if one after the other (one record per name, the total kept).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { openDatabase, type Db } from '../db/database';
import { LocalBlobStore } from '../blobs/blob-store';
import { SqliteLogFilesRepository, type LogFileRecord, type LogFilesRepository } from '../repositories/log-files';
import { SqliteSessionsRepository } from '../repositories/sessions';
import { seedUser, seedProject, seedSession, seedWorker, sessionRecord } from '../repositories/repository-test-db';
import type { IdSource } from '../lib/ids';
import { promised } from '../store/promised';
import { LogUploads, type LogUploadPart } from './log-uploads';

let dir: string;
let db: Db;
let uploads: LogUploads;
let n = 0;

const ids: IdSource = { next: (prefix) => `${prefix}_${String(++n).padStart(24, '0')}`, nextSessionId: () => 'session_1_1' };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-log-uploads-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  seedUser(db);
  seedProject(db, 'prj_1');
  for (const w of ['wrk_1', 'wrk_2']) seedWorker(db, w);
  seedSession(db, sessionRecord('session_1_1', 0, { status: 'Terminated', assignedWorker: 'wrk_1' }));
  uploads = new LogUploads(new SqliteSessionsRepository(db), promised<LogFilesRepository>(new SqliteLogFilesRepository(db)), new LocalBlobStore(join(dir, 'blobs')), new ManualClock(1_000), ids);
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The parts the agent sends for one file: the header, then the gzip bytes in chunks. */
async function* parts(fileName: string, bytes: Buffer, sessionId = 'session_1_1'): AsyncGenerator<LogUploadPart> {
  await Promise.resolve();
  yield { type: 'header', sessionId, fileName, fileSize: bytes.length };
  const gz = gzipSync(bytes);
  for (let i = 0; i < gz.length; i += 100) yield { type: 'chunk', bytes: gz.subarray(i, i + 100) };
}

const blobCount = () => readdirSync(join(dir, 'blobs', 'sha256'), { recursive: true }).filter((p) => String(p).length > 3).length;

describe('LogUploads', () => {
  const engineLog = Buffer.from('[2026.06.01-12.00.00:000][  0]LogInit: Display: Running engine for game: Game\n'.repeat(50));
  // A zip's bytes (local header magic, a stored entry): what the agent's crash zip looks like to the control plane.
  const crashZip = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(2000, 7)]);

  it('stores each file once; a retry of a stored name, the crash zip included, gets the stored record', async () => {
    const log = await uploads.receive('wrk_1', parts('Game.log', engineLog));
    const zip = await uploads.receive('wrk_1', parts('Crash-UECC-Linux-ABC_0000.zip', crashZip));
    expect(zip).toMatchObject({ sessionId: 'session_1_1', projectId: 'prj_1', fileName: 'Crash-UECC-Linux-ABC_0000.zip', fileSize: crashZip.length, gzSize: gzipSync(crashZip).length });
    expect(log).toMatchObject({ fileName: 'Game.log', fileSize: engineLog.length });

    expect(await uploads.receive('wrk_1', parts('Crash-UECC-Linux-ABC_0000.zip', crashZip))).toEqual(zip);
    expect(await uploads.receive('wrk_1', parts('Game.log', engineLog))).toEqual(log);
    expect((db.prepare('SELECT COUNT(*) AS n FROM log_files').get() as { n: number }).n).toBe(2);
    expect(blobCount()).toBe(2);
  });

  it('refuses another worker, an unknown session and an unsafe name (for good: the agent drops the file)', async () => {
    await expect(uploads.receive('wrk_2', parts('Game.log', engineLog))).rejects.toMatchObject({ kind: 'forbidden' });
    await expect(uploads.receive('wrk_1', parts('Game.log', engineLog, 'session_9_9'))).rejects.toMatchObject({ kind: 'not_found' });
    await expect(uploads.receive('wrk_1', parts('../Game.log', engineLog))).rejects.toMatchObject({ kind: 'invalid' });
    expect((db.prepare('SELECT COUNT(*) AS n FROM log_files').get() as { n: number }).n).toBe(0);
  });

  it('keeps a session within its total of compressed bytes: a file past what is left is refused and nothing of it stored, then a full session refuses any', async () => {
    const big = Buffer.from(Array.from({ length: 4_000 }, (_, i) => `line ${i} ${(i * 7919) % 104_729}\n`).join(''));
    const gz = gzipSync(big).length;
    const capped = new LogUploads(new SqliteSessionsRepository(db), promised<LogFilesRepository>(new SqliteLogFilesRepository(db)), new LocalBlobStore(join(dir, 'blobs')), new ManualClock(1_000), ids, 10 * gz, Math.floor(2.5 * gz));
    // Different bytes each (blobs are stored by their hash).
    await capped.receive('wrk_1', parts('Game.log', big));
    await capped.receive('wrk_1', parts('Game-backup-1.log', Buffer.concat([big, Buffer.from('1')])));
    await expect(capped.receive('wrk_1', parts('Game-backup-2.log', Buffer.concat([big, Buffer.from('2')])))).rejects.toMatchObject({ kind: 'invalid', message: expect.stringContaining('its session has left') as unknown });
    expect(blobCount()).toBe(2);
    // What is left still takes a small file; once nothing is left, any file is refused up front.
    await capped.receive('wrk_1', parts('small.log', Buffer.from('x')));
    const full = new LogUploads(new SqliteSessionsRepository(db), promised<LogFilesRepository>(new SqliteLogFilesRepository(db)), new LocalBlobStore(join(dir, 'blobs')), new ManualClock(1_000), ids, 10 * gz, 2 * gz);
    await expect(full.receive('wrk_1', parts('other.log', Buffer.from('y')))).rejects.toMatchObject({ kind: 'precondition' });
  });

  it('records one file once when two uploads of its name arrive together (both passed the check before either was stored)', async () => {
    const [a, b] = await Promise.all([uploads.receive('wrk_1', parts('Game.log', engineLog)), uploads.receive('wrk_1', parts('Game.log', engineLog))]);
    expect(b).toEqual(a);
    expect((db.prepare('SELECT COUNT(*) AS n FROM log_files').get() as { n: number }).n).toBe(1);
    expect(blobCount()).toBe(1);
  });

  it('keeps the session total when two uploads arrive together that fit one at a time but not both', async () => {
    const big = Buffer.from(Array.from({ length: 4_000 }, (_, i) => `line ${i} ${(i * 7919) % 104_729}\n`).join(''));
    const gz = gzipSync(big).length;
    const capped = new LogUploads(new SqliteSessionsRepository(db), promised<LogFilesRepository>(new SqliteLogFilesRepository(db)), new LocalBlobStore(join(dir, 'blobs')), new ManualClock(1_000), ids, 10 * gz, Math.floor(1.5 * gz));
    const results = await Promise.allSettled([capped.receive('wrk_1', parts('Game.log', big)), capped.receive('wrk_1', parts('Game-backup-1.log', Buffer.concat([big, Buffer.from('1')])))]);
    // Whichever was stored first stays; the other is refused as if it had come after it.
    const stored = results.filter((r): r is PromiseFulfilledResult<LogFileRecord> => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect([stored.length, refused.length]).toEqual([1, 1]);
    expect(refused[0]?.reason).toMatchObject({ kind: 'invalid', message: expect.stringContaining('its session has left') as unknown });
    expect(db.prepare('SELECT file_name FROM log_files').all()).toEqual([{ file_name: stored[0]?.value.fileName }]);
  });
});
