// The two admin commands that stream: `events` follows the event log until interrupted, `backup`
// receives a copy of the database into a file it checks before it keeps it.
import { createHash } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { adminV1 } from '@pixelfleet/proto';
import { describeGrpcError, type AdminClient } from './admin-client';
import type { AdminIo } from './admin-commands';
import { eventJson, eventLine } from './admin-output';

/** Exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it). */
const INTERRUPTED_EXIT_CODE = 130;

/**
 * Runs `work` with a signal that aborts when the user interrupts (io.interrupted, else SIGINT,
 * listened for only while it runs); 'interrupted' if that is how it ended.
 */
async function withInterruption<T>(io: AdminIo, work: (interrupted: AbortSignal) => Promise<T>): Promise<T | 'interrupted'> {
  const controller = new AbortController();
  const interrupt = () => controller.abort();
  if (io.interrupted) void io.interrupted.then(interrupt);
  else process.once('SIGINT', interrupt);
  try {
    return await work(controller.signal);
  } catch (err) {
    if (controller.signal.aborted) return 'interrupted';
    throw err;
  } finally {
    process.off('SIGINT', interrupt);
  }
}

/**
 * Receives the database copy into `<out>.part` (mode 0600: it holds every secret's digest), checks
 * its size and SHA-256 against the server's, syncs it to disk and renames it to `out`; on any
 * failure the part file is removed and `out` is left as it was.
 */
async function writeBackup(client: AdminClient, out: string, interrupted: AbortSignal): Promise<{ bytes: number; sha256: string }> {
  const part = `${out}.part`;
  // A fresh file, never one that was there ('wx' after removing it): a planted link or a
  // world-readable file named like the part would otherwise receive every secret's digest.
  await rm(part, { force: true });
  const file = await open(part, 'wx', 0o600);
  let closed = false;
  try {
    const hash = createHash('sha256');
    let bytes = 0;
    let trailer: adminV1.BackupResponse | undefined;
    const stream = client.backup();
    // Ctrl-C: the call is cancelled (the server removes its copy) and the part file goes below.
    const cancel = () => stream.cancel();
    interrupted.addEventListener('abort', cancel, { once: true });
    if (interrupted.aborted) cancel();
    for await (const r of stream as AsyncIterable<adminV1.BackupResponse>) {
      if (r.chunk.length > 0) {
        hash.update(r.chunk);
        bytes += r.chunk.length;
        await file.write(r.chunk);
      }
      if (r.sha256 !== '') trailer = r;
    }
    const sha256 = hash.digest('hex');
    if (trailer === undefined) throw new Error('the backup stream ended before its last message');
    if (trailer.totalBytes !== bytes || trailer.sha256 !== sha256) throw new Error(`the backup arrived damaged (${bytes} bytes, sha256 ${sha256}; the server sent ${trailer.totalBytes} bytes, sha256 ${trailer.sha256})`);
    await file.sync();
    await file.close();
    closed = true;
    await rename(part, out);
    return { bytes, sha256 };
  } catch (err) {
    if (!closed) await file.close();
    await rm(part, { force: true });
    throw err;
  }
}

/**
 * `admin backup --out FILE`: the copy written and checked, or one line saying why no backup was
 * written (exit 1; 130 when interrupted).
 */
export async function writeBackupCommand(client: AdminClient, out: string, io: AdminIo, print: (json: unknown, human: string) => void): Promise<number> {
  let r;
  try {
    r = await withInterruption(io, (interrupted) => writeBackup(client, out, interrupted));
  } catch (err) {
    io.stderr(`error: ${describeGrpcError(err, client.channel)}; no backup was written to ${out}\n`);
    return 1;
  }
  if (r === 'interrupted') {
    io.stderr(`error: interrupted; no backup was written to ${out}\n`);
    return INTERRUPTED_EXIT_CODE;
  }
  print(
    { out, bytes: r.bytes, sha256: r.sha256 },
    `Backup written to ${out} (${r.bytes} bytes, sha256 ${r.sha256}).\nRestore: stop the control plane, copy it to <dataDir>/pixelfleet.sqlite, remove any pixelfleet.sqlite-wal and -shm beside it, start.\n`,
  );
  return 0;
}

/** `admin events`: prints each event as it comes until interrupted (exit 0) or the stream fails (exit 1). */
export async function followEvents(client: AdminClient, from: number | 'first', json: boolean, io: AdminIo): Promise<number> {
  const stream = client.watchEvents(from);
  const interrupted =
    io.interrupted ??
    new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
    });
  return await new Promise<number>((resolve) => {
    let stopping = false;
    void interrupted.then(() => {
      stopping = true;
      stream.cancel();
    });
    stream.on('data', (r: adminV1.WatchEventsResponse) => {
      const e = r.event!;
      io.stdout(json ? `${JSON.stringify(eventJson(e))}\n` : eventLine(e));
    });
    stream.on('error', (err: ServiceError) => {
      if (stopping && err.code === grpcStatus.CANCELLED) resolve(0);
      else {
        io.stderr(`error: ${describeGrpcError(err, client.channel)}\n`);
        resolve(1);
      }
    });
    stream.on('end', () => resolve(stopping ? 0 : 1));
  });
}

