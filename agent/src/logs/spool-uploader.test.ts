// The spool uploader over a real spool folder, with the control plane's side played by a scripted
// send and time by a ManualClock: oldest first, a file removed only after its answer, a failure
// retried after its backoff (or at once when the link reconnects), a refusal for good dropped,
// and close() leaving the rest spooled for the next run.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import type { CollectedLog } from './collect-logs';
import { LogSpool } from './log-spool';
import { CLOSE_WAIT_MS, LogUploadFailedOnServer, LogUploadRefused, MAX_SERVER_FAILURES_PER_FILE, SpoolUploader, type SendLogFile } from './spool-uploader';

let root: string;
let clock: ManualClock;
let spool: LogSpool;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pf-uploader-'));
  clock = new ManualClock(Date.parse('2026-06-01T12:00:00Z'));
  spool = new LogSpool({ dir: join(root, 'log-spool'), maxBytes: 1024 ** 3, maxAgeMs: 168 * 3_600_000, clock, log: pino({ level: 'silent' }) });
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

async function spoolSession(sessionId: string, names: string[]): Promise<void> {
  const dir = join(root, 'sessions', sessionId);
  mkdirSync(dir, { recursive: true });
  const logs: CollectedLog[] = names.map((name) => {
    writeFileSync(join(dir, name), `${sessionId}/${name}`);
    return { kind: 'file', fileName: name, path: join(dir, name), size: 1, owned: true };
  });
  await spool.add(sessionId, logs);
  clock.advance(1);
}

/** A control plane that answers each file as `answer` says, and records what it was sent. */
function controlPlane(answer: (sessionId: string, fileName: string) => 'ok' | 'down' | 'refuse' | 'internal' = () => 'ok') {
  const sent: string[] = [];
  const send: SendLogFile = (sessionId, file) => {
    sent.push(`${sessionId}/${file.fileName}`);
    const a = answer(sessionId, file.fileName);
    if (a === 'down') return Promise.reject(Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }));
    if (a === 'refuse') return Promise.reject(new LogUploadRefused(`session ${sessionId} not found`));
    if (a === 'internal') return Promise.reject(new LogUploadFailedOnServer('INTERNAL: blob store write failed'));
    return Promise.resolve({ logFileId: `log_${sent.length}`, gzSize: 10 });
  };
  return { sent, send };
}

const uploader = (send: SendLogFile) =>
  new SpoolUploader({ spool, send, clock, backoff: { initialMs: 1_000, maxMs: 30_000 }, log: pino({ level: 'silent' }), random: () => 0.5 });

const pending = async () => (await spool.entries()).map((e) => e.manifest.sessionId);

describe('SpoolUploader', () => {
  it('sends every spooled file, oldest session first, and empties the spool', async () => {
    await spoolSession('ses_1', ['Game.log', 'app-output.log']);
    await spoolSession('ses_2', ['Game.log']);
    const cp = controlPlane();
    await uploader(cp.send).kick();
    expect(cp.sent).toEqual(['ses_1/Game.log', 'ses_1/app-output.log', 'ses_2/Game.log']);
    expect(await pending()).toEqual([]);
    expect(readdirSync(join(root, 'log-spool'))).toEqual([]);
  });

  it('a failure keeps the file and retries after the backoff; each failure doubles the wait; a success resets it', async () => {
    await spoolSession('ses_1', ['Game.log']);
    let down = true;
    const cp = controlPlane(() => (down ? 'down' : 'ok'));
    const u = uploader(cp.send);
    await u.kick();
    expect(cp.sent).toEqual(['ses_1/Game.log']);
    expect(u.waiting).toBe(true);
    expect(await pending()).toEqual(['ses_1']);

    clock.advance(499); // half of the first 1 s ceiling (random 0.5) is 500 ms
    expect(cp.sent).toHaveLength(1);
    await u.kick(); // a new entry meanwhile does not jump the backoff
    expect(cp.sent).toHaveLength(1);
    clock.advance(1);
    await expect.poll(() => cp.sent.length).toBe(2);
    await expect.poll(() => u.waiting).toBe(true);
    expect(u.failures).toBe(2);
    clock.advance(999); // second wait: half of 2 s
    expect(cp.sent).toHaveLength(2);
    down = false;
    clock.advance(1);
    await expect.poll(pending).toEqual([]);
    expect(u.failures).toBe(0);
    expect(cp.sent).toEqual(['ses_1/Game.log', 'ses_1/Game.log', 'ses_1/Game.log']);
  });

  it('retryNow() (the control link reconnected) sends at once instead of waiting out the backoff', async () => {
    await spoolSession('ses_1', ['Game.log']);
    let down = true;
    const cp = controlPlane(() => (down ? 'down' : 'ok'));
    const u = uploader(cp.send);
    for (let i = 0; i < 5; i++) {
      await u.kick();
      clock.advance(30_000);
      await expect.poll(() => u.waiting).toBe(true);
    }
    down = false;
    await u.retryNow();
    expect(await pending()).toEqual([]);
    expect(u.waiting).toBe(false);
  });

  it('a refusal for good drops that file with its reason and goes on with the next', async () => {
    await spoolSession('ses_gone', ['Game.log', 'app-output.log']);
    await spoolSession('ses_2', ['Game.log']);
    const cp = controlPlane((sessionId) => (sessionId === 'ses_gone' ? 'refuse' : 'ok'));
    await uploader(cp.send).kick();
    expect(cp.sent).toEqual(['ses_gone/Game.log', 'ses_gone/app-output.log', 'ses_2/Game.log']);
    expect(await pending()).toEqual([]);
  });

  it('a file the control plane fails on MAX_SERVER_FAILURES_PER_FILE times in a row is dropped; the logs behind it go on; an outage drops nothing', async () => {
    await spoolSession('ses_bad', ['Game.log']);
    await spoolSession('ses_2', ['Game.log']);
    let down = true;
    const cp = controlPlane((sessionId) => (down ? 'down' : sessionId === 'ses_bad' ? 'internal' : 'ok'));
    const u = uploader(cp.send);
    // An outage, however long, counts against no file.
    for (let i = 0; i < MAX_SERVER_FAILURES_PER_FILE * 2; i++) {
      await u.kick();
      clock.advance(30_000);
      await expect.poll(() => u.waiting).toBe(true);
    }
    expect(await pending()).toEqual(['ses_bad', 'ses_2']);
    down = false;
    const before = cp.sent.length;
    for (let i = 0; i < MAX_SERVER_FAILURES_PER_FILE - 1; i++) {
      await u.retryNow();
      expect(await pending()).toEqual(['ses_bad', 'ses_2']);
    }
    await u.retryNow();
    await expect.poll(pending).toEqual([]);
    expect(cp.sent.slice(before)).toEqual([...Array<string>(MAX_SERVER_FAILURES_PER_FILE).fill('ses_bad/Game.log'), 'ses_2/Game.log']);
  });

  it('close() stops retrying; the next run (a new uploader on the same spool) sends what is left', async () => {
    await spoolSession('ses_1', ['Game.log']);
    const first = uploader(controlPlane(() => 'down').send);
    await first.kick();
    await first.close();
    expect(clock.pending).toBe(0);
    expect(await pending()).toEqual(['ses_1']);

    const cp = controlPlane();
    await uploader(cp.send).kick();
    expect(cp.sent).toEqual(['ses_1/Game.log']);
    expect(await pending()).toEqual([]);
  });

  it('close(drainMs) at shutdown: a control plane that never answers holds it drainMs plus CLOSE_WAIT_MS at most, and the file stays spooled', async () => {
    await spoolSession('ses_1', ['Game.log']);
    const sent: string[] = [];
    const u = uploader((sessionId, file) => {
      sent.push(`${sessionId}/${file.fileName}`);
      return new Promise(() => undefined); // silent
    });
    let closed = false;
    const closing = u.close(10_000).then(() => (closed = true));
    await expect.poll(() => sent).toEqual(['ses_1/Game.log']);
    clock.advance(10_000);
    await expect.poll(() => clock.pending).toBe(1); // now waiting for the upload in flight
    expect(closed).toBe(false);
    clock.advance(CLOSE_WAIT_MS);
    await closing;
    expect(clock.pending).toBe(0);
    expect(await pending()).toEqual(['ses_1']);
  });

  it('a retry during a long outage applies the age bound: logs older than maxAgeMs are dropped while it lasts', async () => {
    spool = new LogSpool({ dir: join(root, 'log-spool'), maxBytes: 1024 ** 3, maxAgeMs: 3_600_000, clock, log: pino({ level: 'silent' }) });
    await spoolSession('ses_1', ['Game.log']);
    const cp = controlPlane(() => 'down');
    const u = uploader(cp.send);
    await u.kick();
    for (let i = 0; i < 4; i++) {
      clock.advance(30_000);
      await expect.poll(() => u.waiting).toBe(true);
    }
    expect(await pending()).toEqual(['ses_1']);
    clock.advance(3_600_000);
    await expect.poll(pending).toEqual([]);
    const attempts = cp.sent.length;
    clock.advance(30_000);
    expect(cp.sent).toHaveLength(attempts); // nothing left to send, no retry armed
    expect(u.waiting).toBe(false);
  });
});
