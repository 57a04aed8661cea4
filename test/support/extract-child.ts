// Extracts a build archive in a child process and prints the outcome as one JSON line, for tests
// that need process-wide conditions (a file size limit) around a real extraction.
// Usage: node --conditions=source --import tsx test/support/extract-child.ts <zip> <destDir>
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ArchiveRejection, DEFAULT_ARCHIVE_LIMITS, extractArchive } from '@pixelfleet/build-archive';

export interface ExtractChildOutcome {
  /** 'OK', the rejection's code, or the unexpected error's text. */
  code: string;
  objection?: string;
  /** Bytes written before the outcome. */
  bytesDone: number;
  /** What the destination's parent folder holds afterwards. */
  left: string[];
}

const [zip, dest] = process.argv.slice(2);
if (zip === undefined || dest === undefined) throw new Error('usage: extract-child.ts <zip> <destDir>');
let bytesDone = 0;
const report = (outcome: Omit<ExtractChildOutcome, 'bytesDone' | 'left'>) => {
  console.log(JSON.stringify({ ...outcome, bytesDone, left: readdirSync(dirname(dest)) } satisfies ExtractChildOutcome));
};
extractArchive(zip, dest, DEFAULT_ARCHIVE_LIMITS, { freeBytes: () => Promise.resolve(2 ** 50), onProgress: (p) => (bytesDone = p.bytesDone) }).then(
  () => report({ code: 'OK' }),
  (err: unknown) => report(err instanceof ArchiveRejection ? { code: err.code, objection: err.objection } : { code: String(err) }),
);
