// The log spool on a real temp folder: an entry appears whole (files, then the manifest, then the
// rename), survives a restart (a new spool on the same folder), loses a file only after its answer,
// recovers from what a killed agent left, and keeps to its size and age bounds (oldest first). The
// crash zip is opened with the build archive's zip reader and its entries' bytes checked.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { DEFAULT_ARCHIVE_LIMITS, openEntryData, readCentralDirectory } from '@pixelfleet/build-archive';
import type { CollectedLog } from './collect-logs';
import { LogSpool, MANIFEST_FILE, pendingFiles, spoolFilePath, type LogSpoolOptions } from './log-spool';

const HOUR = 3_600_000;
let root: string;
let spoolDir: string;
let clock: ManualClock;
let warnings: string[];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pf-spool-'));
  spoolDir = join(root, 'log-spool');
  clock = new ManualClock(Date.parse('2026-06-01T12:00:00Z'));
  warnings = [];
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

function spool(over: Partial<LogSpoolOptions> = {}): LogSpool {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      const line = JSON.parse(chunk.toString()) as { level: number; msg: string };
      if (line.level === 40) warnings.push(line.msg);
      done();
    },
  });
  return new LogSpool({ dir: spoolDir, maxBytes: 1024 ** 3, maxAgeMs: 168 * HOUR, clock, log: pino({ level: 'warn' }, sink), ...over });
}

/** A session folder with an engine log and output, as the session runtime leaves them. */
function sessionLogs(sessionId: string, engineText = `engine log of ${sessionId}\n`): CollectedLog[] {
  const dir = join(root, 'sessions', sessionId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'Game.log'), engineText);
  writeFileSync(join(dir, 'app-output.log'), 'stdout\n');
  return [
    { kind: 'file', fileName: 'Game.log', path: join(dir, 'Game.log'), size: engineText.length, owned: true },
    { kind: 'file', fileName: 'app-output.log', path: join(dir, 'app-output.log'), size: 7, owned: true },
  ];
}

async function readZip(path: string): Promise<Map<string, string>> {
  const { zipfile, entries } = await readCentralDirectory(path, DEFAULT_ARCHIVE_LIMITS);
  const out = new Map<string, string>();
  try {
    for (const entry of entries) {
      const chunks: Buffer[] = [];
      const [raw, ...transforms] = await openEntryData(path, zipfile, entry);
      let data: NodeJS.ReadableStream = raw;
      for (const t of transforms) data = data.pipe(t);
      for await (const chunk of data) chunks.push(chunk as Buffer);
      out.set(entry.fileName, Buffer.concat(chunks).toString('latin1'));
    }
  } finally {
    zipfile.close();
  }
  return out;
}

describe('LogSpool', () => {
  it('spools copies with an atomic manifest, removes the session folder\'s own files, and a new spool on the folder finds the entry', async () => {
    const logs = sessionLogs('ses_1');
    const entry = await spool().add('ses_1', logs);

    expect(entry?.manifest).toEqual({ version: 1, sessionId: 'ses_1', spooledAtMs: clock.now(), files: [{ fileName: 'Game.log', fileSize: 20 }, { fileName: 'app-output.log', fileSize: 7 }] });
    expect(JSON.parse(readFileSync(join(entry!.dir, MANIFEST_FILE), 'utf8'))).toEqual(entry!.manifest);
    expect(readFileSync(spoolFilePath(entry!, entry!.manifest.files[0]!), 'utf8')).toBe('engine log of ses_1\n');
    expect(existsSync(join(root, 'sessions', 'ses_1', 'Game.log'))).toBe(false);
    expect(readdirSync(spoolDir).filter((n) => n.startsWith('.'))).toEqual([]);

    // The agent restarts: a new spool reads the same entry back.
    const again = await spool().entries();
    expect(again).toEqual([entry]);
  });

  it('leaves a build\'s Saved files where they are, and spools nothing (no entry, no error) when there is no log', async () => {
    const saved = join(root, 'Saved', 'Logs');
    mkdirSync(saved, { recursive: true });
    writeFileSync(join(saved, 'Plugin.log'), 'plugin\n');
    const entry = await spool().add('ses_1', [{ kind: 'file', fileName: 'Plugin.log', path: join(saved, 'Plugin.log'), size: 7, owned: false }]);
    expect(existsSync(join(saved, 'Plugin.log'))).toBe(true);
    expect(pendingFiles(entry!).map((f) => f.fileName)).toEqual(['Plugin.log']);

    expect(await spool().add('ses_2', [])).toBeUndefined();
    // A file that vanished before it was copied: the entry would be empty, so there is none.
    expect(await spool().add('ses_3', [{ kind: 'file', fileName: 'Gone.log', path: join(root, 'gone.log'), size: 1, owned: true }])).toBeUndefined();
    expect((await spool().entries()).map((e) => e.manifest.sessionId)).toEqual(['ses_1']);
  });

  it('zips a crash folder into one file whose entries, read back with the zip reader, hold the folder\'s bytes', async () => {
    const crashDir = join(root, 'Saved', 'Crashes', 'UECC-Linux-ABC_0000');
    mkdirSync(join(crashDir, 'Sub'), { recursive: true });
    writeFileSync(join(crashDir, 'CrashContext.runtime-xml'), '<FGenericCrashContext/>');
    writeFileSync(join(crashDir, 'UEMinidump.dmp'), Buffer.from([0x4d, 0x44, 0x4d, 0x50, 0, 1, 2, 255]));
    writeFileSync(join(crashDir, 'Sub', 'Game.log'), 'the log at the crash\n'.repeat(1000));

    const entry = await spool().add('ses_1', [{ kind: 'crash', fileName: 'Crash-UECC-Linux-ABC_0000.zip', dir: crashDir }]);
    const file = entry!.manifest.files[0]!;
    const zipPath = spoolFilePath(entry!, file);
    expect(file.fileSize).toBe(readFileSync(zipPath).length);

    const zip = await readZip(zipPath);
    expect([...zip.keys()].sort()).toEqual(['UECC-Linux-ABC_0000/CrashContext.runtime-xml', 'UECC-Linux-ABC_0000/Sub/Game.log', 'UECC-Linux-ABC_0000/UEMinidump.dmp']);
    expect(zip.get('UECC-Linux-ABC_0000/Sub/Game.log')).toBe('the log at the crash\n'.repeat(1000));
    expect(zip.get('UECC-Linux-ABC_0000/UEMinidump.dmp')).toBe(Buffer.from([0x4d, 0x44, 0x4d, 0x50, 0, 1, 2, 255]).toString('latin1'));
    expect(existsSync(crashDir)).toBe(true); // the build's folder is not the spool's to clean
  });

  it('a file leaves only with its answer, the manifest saying so first; the entry goes with its last file', async () => {
    const s = spool();
    const entry = (await s.add('ses_1', sessionLogs('ses_1')))!;
    const after = (await s.settle(entry, 'Game.log', { uploaded: { logFileId: 'log_1', gzSize: 40 } }))!;
    expect(pendingFiles(after).map((f) => f.fileName)).toEqual(['app-output.log']);
    expect(existsSync(join(entry.dir, 'files', 'Game.log'))).toBe(false);
    // Restarted here: the answered file is not sent again.
    const [reread] = await spool().entries();
    expect(pendingFiles(reread!).map((f) => f.fileName)).toEqual(['app-output.log']);
    expect(reread!.manifest.files[0]).toEqual({ fileName: 'Game.log', fileSize: 20, uploaded: { logFileId: 'log_1', gzSize: 40 } });

    expect(await s.settle(reread!, 'app-output.log', { dropped: 'refused' })).toBeUndefined();
    expect(existsSync(entry.dir)).toBe(false);
    expect(await s.entries()).toEqual([]);
  });

  it('recover() removes what a killed agent left half-written and files already answered, and keeps whole entries', async () => {
    const s = spool();
    const whole = (await s.add('ses_1', sessionLogs('ses_1')))!;
    // Killed after the answer was recorded, before the file was removed.
    const manifest = { ...whole.manifest, files: [{ ...whole.manifest.files[0]!, uploaded: { logFileId: 'log_1', gzSize: 9 } }, whole.manifest.files[1]!] };
    writeFileSync(join(whole.dir, MANIFEST_FILE), JSON.stringify(manifest));
    // Killed while filling an entry (no manifest yet), and a folder whose manifest is gone.
    mkdirSync(join(spoolDir, '.incoming-ses_2-999-1', 'files'), { recursive: true });
    writeFileSync(join(spoolDir, '.incoming-ses_2-999-1', 'files', 'Game.log'), 'partial');
    mkdirSync(join(spoolDir, '000000000000001-000001-ses_3', 'files'), { recursive: true });

    await spool().recover();

    expect(readdirSync(spoolDir)).toEqual([whole.dir.split('/').at(-1)]);
    expect(readdirSync(join(whole.dir, 'files'))).toEqual(['app-output.log']);
    expect(warnings).toContain('log spool entry without a readable manifest removed');
  });

  it('drops entries older than maxAgeMs and then the oldest until it fits maxBytes, each with a warning', async () => {
    const s = spool({ maxBytes: 100, maxAgeMs: 24 * HOUR });
    await s.add('ses_old', sessionLogs('ses_old', 'x'.repeat(30)));
    clock.advance(20 * HOUR);
    await s.add('ses_mid', sessionLogs('ses_mid', 'y'.repeat(30)));
    clock.advance(1 * HOUR);
    await s.add('ses_new', sessionLogs('ses_new', 'z'.repeat(30)));
    // 3 × 37 bytes > 100: the oldest goes.
    expect((await s.entries()).map((e) => e.manifest.sessionId)).toEqual(['ses_mid', 'ses_new']);
    expect(warnings).toEqual(['session logs dropped from the log spool: it is over logSpool.maxBytes']);

    clock.advance(24 * HOUR); // ses_mid is 25 h old, ses_new exactly 24 h (kept)
    await s.enforceBounds();
    expect((await s.entries()).map((e) => e.manifest.sessionId)).toEqual(['ses_new']);
    expect(warnings.at(-1)).toBe('session logs dropped from the log spool: older than logSpool.maxAgeHours');
  });
});
