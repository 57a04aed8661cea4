// Receives a session's engine log file from the agent that ran it: a header, then gzip chunks,
// stored in the blob store and recorded for the analytics API.
import type { Clock } from '@pixelfleet/common';
import type { IdSource } from '../lib/ids';
import { DomainError, invalid, notFound, precondition } from '../errors';
import { BlobTooLargeError, type BlobStore } from '../blobs/blob-store';
import type { LogFileRecord, LogFilesRepository } from '../repositories/log-files';
import type { SessionsRepository } from '../repositories/sessions';

export type LogUploadPart =
  | { type: 'header'; sessionId: string; fileName: string; fileSize: number }
  | { type: 'chunk'; bytes: Uint8Array };

/** Largest compressed log accepted, in bytes (engine logs compress ~10:1; 256 MiB is generous). */
export const MAX_LOG_GZ_BYTES = 256 * 1024 * 1024;
/** Log files kept per session (the agent sends the -ABSLOG file and the captured output: 2–3). */
export const MAX_LOG_FILES_PER_SESSION = 8;
/**
 * Compressed bytes kept per session, all its files together (issue 22: an app writes its own log,
 * so what it uploads is the customer's input): one large engine log and its crash files fit.
 */
export const MAX_LOG_GZ_BYTES_PER_SESSION = 512 * 1024 * 1024;
const SAFE_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._()-]{0,199}$/;
const GZIP_MAGIC = [0x1f, 0x8b];

export class LogUploads {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly logFiles: LogFilesRepository,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly ids: IdSource,
    private readonly maxGzBytes = MAX_LOG_GZ_BYTES,
    private readonly maxSessionGzBytes = MAX_LOG_GZ_BYTES_PER_SESSION,
  ) {}

  async receive(workerId: string, parts: AsyncIterable<LogUploadPart>): Promise<LogFileRecord> {
    const iterator = parts[Symbol.asyncIterator]();
    const first = await iterator.next();
    if (first.done === true || first.value.type !== 'header') throw invalid('the first message must be a LogFileHeader');
    const header = first.value;
    if (!SAFE_FILE_NAME.test(header.fileName)) throw invalid(`file name "${header.fileName.slice(0, 80)}" is not allowed`);
    const session = this.sessions.findById(header.sessionId);
    if (!session) throw notFound(`session ${header.sessionId} not found`);
    if (session.assignedWorker !== workerId) throw new DomainError('forbidden', `session ${header.sessionId} did not run on this worker`);
    // Checked before the bytes are received, to refuse at once what cannot be kept; checked again
    // with the insert (insertWithin), for an upload of the same session that ended meanwhile.
    const stored = await this.logFiles.listBySession(session.sessionId);
    // A retry whose first attempt was stored (its answer lost) gets that record: nothing twice.
    const same = stored.find((r) => r.fileName === header.fileName);
    if (same) return same;
    if (stored.length >= MAX_LOG_FILES_PER_SESSION) throw precondition(`session ${session.sessionId} already has ${MAX_LOG_FILES_PER_SESSION} log files`);
    const left = this.maxSessionGzBytes - stored.reduce((n, r) => n + r.gzSize, 0);
    if (left <= 0) throw precondition(`session ${session.sessionId}'s log files already hold ${this.maxSessionGzBytes} compressed bytes`);
    // The file may take what the session has left, up to the per-file cap.
    const cap = Math.min(this.maxGzBytes, left);

    let checkedMagic = false;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let r = await iterator.next(); r.done !== true; r = await iterator.next()) {
        if (r.value.type !== 'chunk') throw invalid('only one LogFileHeader is allowed');
        const bytes = r.value.bytes;
        if (!checkedMagic && bytes.byteLength > 0) {
          if (bytes[0] !== GZIP_MAGIC[0] || (bytes.byteLength > 1 && bytes[1] !== GZIP_MAGIC[1])) throw invalid('log data is not gzip');
          checkedMagic = true;
        }
        yield bytes;
      }
    }

    let blob;
    try {
      blob = await this.blobs.write(chunks(), cap);
    } catch (err) {
      if (err instanceof BlobTooLargeError) {
        throw invalid(cap < this.maxGzBytes ? `log file exceeds the ${cap} compressed bytes its session has left (${this.maxSessionGzBytes} a session)` : `log file exceeds ${this.maxGzBytes} compressed bytes`);
      }
      throw err;
    }
    if (blob.size === 0) throw invalid('log data is empty');
    const record: LogFileRecord = {
      logFileId: this.ids.next('log'),
      sessionId: session.sessionId,
      projectId: session.projectId,
      fileName: header.fileName,
      fileSize: header.fileSize,
      gzSize: blob.size,
      blobSha256: blob.sha256,
      uploadedAt: this.clock.now(),
    };
    // Inserted in the turn the blob write ended in (no await between the two): retention deletes a
    // blob no record names, and a SQLite store answers within the call (retention-sweep.ts).
    const insertion = await this.logFiles.insertWithin(record, { maxFiles: MAX_LOG_FILES_PER_SESSION, maxGzBytes: this.maxSessionGzBytes });
    switch (insertion.kind) {
      case 'inserted':
        return record;
      case 'sameName':
        return insertion.record;
      case 'tooMany':
        throw precondition(`session ${session.sessionId} already has ${MAX_LOG_FILES_PER_SESSION} log files`);
      case 'tooLarge': {
        const leftNow = this.maxSessionGzBytes - insertion.heldGzBytes;
        if (leftNow <= 0) throw precondition(`session ${session.sessionId}'s log files already hold ${this.maxSessionGzBytes} compressed bytes`);
        throw invalid(`log file exceeds the ${leftNow} compressed bytes its session has left (${this.maxSessionGzBytes} a session)`);
      }
    }
  }
}
