// Uploads a finished session's engine log to the control plane over UploadSessionLogs: a header,
// then the gzip-compressed file in chunks of at most 1 MiB (the gRPC message cap is 4 MiB).
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { createGzip } from 'node:zlib';
import { Metadata } from '@grpc/grpc-js';
import type { agentV1 } from '@pixelfleet/proto';

export const LOG_CHUNK_BYTES = 1024 * 1024;
/** Upload deadline grows with the file: 60 s plus 10 s per uncompressed MiB. */
const deadlineFor = (bytes: number) => new Date(Date.now() + 60_000 + Math.ceil(bytes / LOG_CHUNK_BYTES) * 10_000);

/**
 * Sends one file; resolves with the stored log's id, or undefined when there is no such file
 * (a Shipping build may write no log: a normal outcome) or it is empty.
 */
export async function uploadSessionLog(
  client: agentV1.AgentServiceClient,
  workerToken: string,
  sessionId: string,
  path: string,
): Promise<{ logFileId: string; gzSize: number } | undefined> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch {
    return undefined;
  }
  if (size === 0) return undefined;
  const md = new Metadata();
  md.set('authorization', `Bearer ${workerToken}`);
  return await new Promise((resolve, reject) => {
    const call = client.uploadSessionLogs(md, { deadline: deadlineFor(size) }, (err, res) => (err ? reject(err) : resolve(res)));
    call.write({ part: { $case: 'header', value: { sessionId, fileName: basename(path), fileSize: size } } });
    const gzip = createReadStream(path).pipe(createGzip());
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
