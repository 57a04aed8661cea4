import { describe, expect, it } from 'vitest';
import { ArchiveRejection, quoteEntryName } from './archive-rejection';
import { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from './archive-limits';
import { checkEntries, checkEntryName, type CentralEntry } from './entry-guards';

const MIB = 1024 * 1024;

function file(fileName: string, over: Partial<CentralEntry> = {}): CentralEntry {
  return { fileName, generalPurposeBitFlag: 0, compressionMethod: 8, compressedSize: 10, uncompressedSize: 20, crc32: 1, externalFileAttributes: (0o100644 << 16) >>> 0, ...over };
}

function rejection(run: () => unknown): ArchiveRejection {
  try {
    run();
  } catch (err) {
    if (err instanceof ArchiveRejection) return err;
    throw err;
  }
  throw new Error('expected an ArchiveRejection');
}

describe('checkEntryName', () => {
  it.each([
    ['../x', 'entry "../x" escapes the archive'],
    ['a/../../x', 'entry "a/../../x" escapes the archive'],
    ['a/..', 'entry "a/.." escapes the archive'],
    ['/etc/passwd', 'entry "/etc/passwd" is an absolute path'],
    ['C:/x', 'entry "C:/x" starts with a drive letter'],
    ['c:x', 'entry "c:x" starts with a drive letter'],
    ['a\\..\\x', 'entry "a\\..\\x" uses "\\" between folders: zip the build with a tool that writes "/"'],
    ['a/b.txt:stream', 'entry "a/b.txt:stream" contains ":", which Windows reads as a hidden (NTFS) stream'],
    ['a/CON', 'entry "a/CON" uses the Windows device name CON'],
    ['nul.txt', 'entry "nul.txt" uses the Windows device name NUL'],
    ['a/Com1.tar.gz', 'entry "a/Com1.tar.gz" uses the Windows device name COM1'],
    ['lpt9/x', 'entry "lpt9/x" uses the Windows device name LPT9'],
    ['AUX /x', 'entry "AUX /x" uses the Windows device name AUX'],
    ['a/name.', 'entry "a/name." has a name ending in a dot or a space, which Windows drops'],
    ['a /b', 'entry "a /b" has a name ending in a dot or a space, which Windows drops'],
    ['a//b', 'entry "a//b" has an empty or "." folder in its path'],
    ['./a', 'entry "./a" has an empty or "." folder in its path'],
    ['a/b?.txt', 'entry "a/b?.txt" contains a character Windows does not allow in file names'],
    ['a\u0001b', 'entry "a\\u0001b" contains a character Windows does not allow in file names'],
    ['', 'an entry has an empty name'],
  ])('refuses %j', (name, objection) => {
    const r = rejection(() => checkEntryName(name));
    expect(r.code).toBe('UNSAFE_ENTRY');
    expect(r.objection).toBe(objection);
    expect(r.message).toBe(objection);
  });

  it.each(['Game.exe', 'Game/Binaries/Win64/Game-Win64-Shipping.exe', 'Engine/', 'a/CONSOLE.txt', 'a/COM10', 'a/.hidden', 'a/..b', 'Ünïcode/ファイル.pak'])('accepts %j', (name) => {
    expect(() => checkEntryName(name)).not.toThrow();
  });
});

describe('checkEntries', () => {
  it('returns each entry with its folder flag, Unix mode and executable bit', () => {
    const entries = checkEntries(
      [
        file('G/', { externalFileAttributes: (0o040755 << 16) >>> 0, uncompressedSize: 0 }),
        file('G/run', { externalFileAttributes: (0o100755 << 16) >>> 0 }),
        file('G/data.bin', { externalFileAttributes: 0x20 }),
      ],
      DEFAULT_ARCHIVE_LIMITS,
    );
    expect(entries).toEqual([
      { path: 'G', isDirectory: true, uncompressedSize: 0, compressedSize: 10, crc32: 1, mode: 0o755, executable: true },
      { path: 'G/run', isDirectory: false, uncompressedSize: 20, compressedSize: 10, crc32: 1, mode: 0o755, executable: true },
      { path: 'G/data.bin', isDirectory: false, uncompressedSize: 20, compressedSize: 10, crc32: 1, mode: 0, executable: false },
    ]);
  });

  it('refuses symlinks and other special files by their external attributes', () => {
    expect(rejection(() => checkEntries([file('a/link', { externalFileAttributes: (0o120777 << 16) >>> 0 })], DEFAULT_ARCHIVE_LIMITS)).objection).toBe('entry "a/link" is a symbolic link');
    expect(rejection(() => checkEntries([file('a/fifo', { externalFileAttributes: (0o010644 << 16) >>> 0 })], DEFAULT_ARCHIVE_LIMITS)).objection).toBe('entry "a/fifo" is not a regular file or folder');
  });

  it('refuses encrypted entries and compression methods other than Store and Deflate', () => {
    const encrypted = rejection(() => checkEntries([file('a/x', { generalPurposeBitFlag: 0x1 })], DEFAULT_ARCHIVE_LIMITS));
    expect([encrypted.code, encrypted.objection]).toEqual(['UNSUPPORTED_ENTRY', 'entry "a/x" is encrypted: upload the archive without a password']);
    expect(rejection(() => checkEntries([file('a/x', { compressionMethod: 12 })], DEFAULT_ARCHIVE_LIMITS)).objection).toBe('entry "a/x" is compressed with BZIP2: only Deflate and Store are supported');
    expect(rejection(() => checkEntries([file('a/x', { compressionMethod: 77 })], DEFAULT_ARCHIVE_LIMITS)).objection).toBe('entry "a/x" is compressed with method 77: only Deflate and Store are supported');
  });

  it('bounds the compression ratio of entries past ratioCheckMinBytes only', () => {
    const limits: ArchiveLimits = { ...DEFAULT_ARCHIVE_LIMITS, maxCompressionRatio: 200, ratioCheckMinBytes: MIB };
    // Exactly at the bound, and a tiny file that compresses 1000:1: both honest.
    expect(() => checkEntries([file('a/x', { uncompressedSize: 200 * 10_000, compressedSize: 10_000 })], limits)).not.toThrow();
    expect(() => checkEntries([file('a/y', { uncompressedSize: MIB, compressedSize: 1_000 })], limits)).not.toThrow();
    const bomb = rejection(() => checkEntries([file('a/bomb', { uncompressedSize: 201 * 10_000, compressedSize: 10_000 })], limits));
    expect([bomb.code, bomb.objection]).toEqual(['LIMIT_EXCEEDED', 'entry "a/bomb" is compressed 201:1, past the limit of 200:1 (the archive looks like a zip bomb)']);
    expect(rejection(() => checkEntries([file('a/nothing', { uncompressedSize: 2 * MIB, compressedSize: 0 })], limits)).objection).toBe(
      'entry "a/nothing" claims 2.0 MiB from no compressed data (the archive looks like a zip bomb)',
    );
  });

  it('bounds the entry count and the total uncompressed size', () => {
    const limits: ArchiveLimits = { ...DEFAULT_ARCHIVE_LIMITS, maxEntries: 2, maxTotalBytes: 100 };
    expect(rejection(() => checkEntries([file('a'), file('b'), file('c')], limits)).objection).toBe('the archive holds 3 entries, more than the limit of 2');
    expect(() => checkEntries([file('a', { uncompressedSize: 60 }), file('b', { uncompressedSize: 40 })], limits)).not.toThrow();
    const total = rejection(() => checkEntries([file('a', { uncompressedSize: 60 }), file('b', { uncompressedSize: 41 })], limits));
    expect([total.code, total.objection]).toEqual(['LIMIT_EXCEEDED', 'the archive expands to more than the limit of 100 bytes']);
  });

  it('refuses names that one case-insensitive file system sees as one', () => {
    const collide = (...names: string[]) => rejection(() => checkEntries(names.map((n) => file(n)), DEFAULT_ARCHIVE_LIMITS));
    const c = collide('Game/a.pak', 'game/b.pak');
    expect([c.code, c.objection]).toEqual(['NAME_COLLISION', 'entries "Game/a.pak" and "game/b.pak" differ only in letter case, so they would overwrite each other on Windows']);
    expect(collide('a/README', 'a/readme').objection).toBe('entries "a/README" and "a/readme" differ only in letter case, so they would overwrite each other on Windows');
    // Composed and decomposed é are one name on macOS.
    expect(collide('caf\u00e9/x', 'cafe\u0301/y').code).toBe('NAME_COLLISION');
    expect(collide('a/x', 'a/x').objection).toBe('entry "a/x" appears twice');
    expect(collide('a/b', 'a/b/c').objection).toBe('"a/b" is both a file and a folder in the archive');
    expect(collide('a/b/', 'a/b').objection).toBe('"a/b" is both a file and a folder in the archive');
    // A folder entry and the files inside it are one folder, not a collision.
    expect(() => checkEntries([file('a/', { uncompressedSize: 0 }), file('a/b'), file('a/c')], DEFAULT_ARCHIVE_LIMITS)).not.toThrow();
  });
});

describe('quoteEntryName', () => {
  it('escapes quotes, control and bidi-override characters and cuts long names', () => {
    expect(quoteEntryName('a"b')).toBe('"a\\"b"');
    expect(quoteEntryName('evil\u202Egnp.exe')).toBe('"evil\\u202egnp.exe"');
    expect(quoteEntryName('x'.repeat(200))).toBe(`"${'x'.repeat(160)}…"`);
  });
});
