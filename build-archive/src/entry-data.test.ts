// How failures met while extracting become objections. The integration test
// (test/integration/build-archive.test.ts) meets them for real; ENOSPC needs a full disk, which
// no test can make without root, so its mapping is checked here on the error Node raises.
import { describe, expect, it } from 'vitest';
import { ArchiveRejection } from './archive-rejection';
import { extractionError } from './entry-data';

function errno(code: string, syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failed, ${syscall}`), { code, syscall, errno: -1 });
}

function objectionOf(err: unknown): [string, string] {
  const mapped = extractionError(err, 'Game/Content/Paks/Game.pak');
  if (!(mapped instanceof ArchiveRejection)) throw new Error('expected an ArchiveRejection');
  return [mapped.code, mapped.objection];
}

describe('extractionError', () => {
  it('reads a full disk or quota as DISK_FULL, other file system errors as WRITE_FAILED', () => {
    expect(objectionOf(errno('ENOSPC', 'write'))).toEqual(['DISK_FULL', 'the server ran out of disk space while extracting the build']);
    expect(objectionOf(errno('EDQUOT', 'write'))).toEqual(['DISK_FULL', 'the server ran out of disk space while extracting the build']);
    expect(objectionOf(errno('EACCES', 'open'))).toEqual(['WRITE_FAILED', 'the server could not write the extracted build (EACCES)']);
  });

  it('reads yauzl and zlib complaints as a damaged entry', () => {
    expect(objectionOf(new Error('too many bytes in the stream. expected 5. got at least 6'))).toEqual(['CORRUPT', 'entry "Game/Content/Paks/Game.pak" holds more data than its header declares']);
    expect(objectionOf(new Error('not enough bytes in the stream. expected 5. got only 4'))).toEqual(['CORRUPT', 'entry "Game/Content/Paks/Game.pak" holds less data than its header declares']);
    expect(objectionOf(new Error('invalid local file header signature: 0x0'))).toEqual(['CORRUPT', 'the archive is truncated or damaged at entry "Game/Content/Paks/Game.pak"']);
    expect(objectionOf(Object.assign(new Error('invalid stored block lengths'), { code: 'Z_DATA_ERROR', errno: -3 }))).toEqual([
      'CORRUPT',
      'entry "Game/Content/Paks/Game.pak" is damaged: its compressed data cannot be read',
    ]);
  });

  it('passes rejections, aborts and anything unexpected through unchanged', () => {
    const rejection = new ArchiveRejection('CORRUPT', 'x');
    const abort = new DOMException('stopped', 'AbortError');
    const bug = new TypeError('progress callback threw');
    expect(extractionError(rejection, 'a')).toBe(rejection);
    expect(extractionError(abort, 'a')).toBe(abort);
    expect(extractionError(bug, 'a')).toBe(bug);
  });
});
