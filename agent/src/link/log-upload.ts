// Uploads one spooled session log to the control plane over UploadSessionLogs: a header, then the
// gzip-compressed file in chunks of at most 1 MiB (the gRPC message cap is 4 MiB). The control
// plane answers a file name it already stored with that record, so a retry never stores twice.
import { createReadStream } from 'node:fs';
import { createGzip } from 'node:zlib';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { agentV1 } from '@pixelfleet/proto';
import { LogUploadFailedOnServer, LogUploadRefused } from '../logs/spool-uploader';

export const LOG_CHUNK_BYTES = 1024 * 1024;
/** Upload deadline grows with the file: 60 s plus 10 s per uncompressed MiB. */
const deadlineFor = (bytes: number) => new Date(Date.now() + 60_000 + Math.ceil(bytes / LOG_CHUNK_BYTES) * 10_000);

/**
 * Answers that will not change on a retry: the file name or data refused, the session unknown or
 * another worker's, its file count reached. Anything else (the control plane down or restarting,
 * a deadline, an internal error, a worker token it does not know yet) is worth retrying.
 */
const REFUSED_FOR_GOOD: ReadonlySet<status> = new Set([status.INVALID_ARGUMENT, status.NOT_FOUND, status.PERMISSION_DENIED, status.FAILED_PRECONDITION, status.ALREADY_EXISTS]);
/**
 * The control plane was reached and failed on the file itself: retried, a few times
 * (LogUploadFailedOnServer). UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED and UNAUTHENTICATED are
 * the link's, retried for as long as the spool keeps the file.
 */
const FAILED_ON_SERVER: ReadonlySet<status> = new Set([status.INTERNAL, status.UNKNOWN, status.DATA_LOSS, status.RESOURCE_EXHAUSTED, status.UNIMPLEMENTED, status.OUT_OF_RANGE, status.ABORTED]);

/**
 * Sends one file under fileName and resolves with the stored record.
 * @throws LogUploadRefused when the control plane refused it for good; any other error is worth a retry.
 */
export async function uploadSessionLog(
  client: agentV1.AgentServiceClient,
  workerToken: string,
  sessionId: string,
  file: { path: string; fileName: string; fileSize: number },
): Promise<{ logFileId: string; gzSize: number }> {
  const md = new Metadata();
  md.set('authorization', `Bearer ${workerToken}`);
  return await new Promise((resolve, reject) => {
    const call = client.uploadSessionLogs(md, { deadline: deadlineFor(file.fileSize) }, (err: ServiceError | null, res) => {
      if (!err) return resolve(res);
      if (REFUSED_FOR_GOOD.has(err.code)) reject(new LogUploadRefused(err.details));
      else if (FAILED_ON_SERVER.has(err.code)) reject(new LogUploadFailedOnServer(`${status[err.code]}: ${err.details}`));
      else reject(err);
    });
    call.write({ part: { $case: 'header', value: { sessionId, fileName: file.fileName, fileSize: file.fileSize } } });
    const source = createReadStream(file.path);
    const gzip = source.pipe(createGzip());
    source.on('error', (err: NodeJS.ErrnoException) => {
      call.cancel();
      // A spooled file removed behind the agent's back cannot come back, nor can one the agent may not read.
      reject(new LogUploadRefused(err.code === 'ENOENT' ? `the spooled file ${file.fileName} is gone` : `the spooled file ${file.fileName} cannot be read (${err.code ?? err.message})`));
    });
    gzip.on('data', (chunk: Buffer) => {
      for (let offset = 0; offset < chunk.length; offset += LOG_CHUNK_BYTES) {
        call.write({ part: { $case: 'chunk', value: chunk.subarray(offset, offset + LOG_CHUNK_BYTES) } });
      }
    });
    gzip.on('end', () => call.end());
    gzip.on('error', (err) => {
      call.cancel();
      reject(err);
    });
  });
}
