// The guards every entry of a build archive passes, read from the central directory before a
// byte is extracted (agent-notes §5): a name that stays inside the folder and can exist on
// Windows, a regular file or folder, no encryption, Store or Deflate, the count, size and ratio
// limits, and one spelling per path on a case-insensitive file system.
import { ArchiveRejection, quoteEntryName } from './archive-rejection';
import { type ArchiveLimits } from './archive-limits';
import { formatBytes } from './byte-size';

/** What the guards read of a central-directory record (a yauzl `Entry` has these fields). */
export interface CentralEntry {
  fileName: string;
  generalPurposeBitFlag: number;
  compressionMethod: number;
  compressedSize: number;
  uncompressedSize: number;
  crc32: number;
  externalFileAttributes: number;
}

/** An entry that passed the guards. */
export interface ArchiveEntry {
  /** Path inside the archive, '/'-separated, without the trailing '/' of a folder. */
  path: string;
  isDirectory: boolean;
  /** Bytes the entry expands to (0 for a folder). */
  uncompressedSize: number;
  compressedSize: number;
  /** CRC-32 the central directory declares for the uncompressed data. */
  crc32: number;
  /** Unix permission bits from the external attributes; 0 when the zip tool recorded none (Windows tools). */
  mode: number;
  /** Any execute bit set in `mode`. */
  executable: boolean;
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

const STORE = 0;
const DEFLATE = 8;
/** Names of the methods a customer's tool may have picked (APPNOTE 4.4.5). */
const METHOD_NAMES: Readonly<Record<number, string>> = { 9: 'Deflate64', 12: 'BZIP2', 14: 'LZMA', 93: 'Zstandard', 95: 'XZ', 98: 'PPMd' };

/** Windows device names, reserved with any extension (`nul.txt`); the superscript digits count too. */
const DEVICE_NAMES = /^(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|COM[1-9\u00b9\u00b2\u00b3]|LPT[1-9\u00b9\u00b2\u00b3])$/i;
/** Characters Windows does not allow in a file name (':' has its own objection). */
const WINDOWS_FORBIDDEN = /[<>"|?*\u0000-\u001f]/;

function unsafe(name: string, why: string): ArchiveRejection {
  return new ArchiveRejection('UNSAFE_ENTRY', `entry ${quoteEntryName(name)} ${why}`);
}

/**
 * Checks one entry name (a folder's ends in '/').
 * @throws ArchiveRejection UNSAFE_ENTRY naming the entry and what is wrong with it.
 */
export function checkEntryName(name: string): void {
  if (name === '' || name === '/') throw new ArchiveRejection('UNSAFE_ENTRY', 'an entry has an empty name');
  if (name.includes('\\')) throw unsafe(name, 'uses "\\" between folders: zip the build with a tool that writes "/"');
  if (name.startsWith('/')) throw unsafe(name, 'is an absolute path');
  if (/^[a-zA-Z]:/.test(name)) throw unsafe(name, 'starts with a drive letter');
  const segments = (name.endsWith('/') ? name.slice(0, -1) : name).split('/');
  if (segments.includes('..')) throw unsafe(name, 'escapes the archive');
  if (name.includes(':')) throw unsafe(name, 'contains ":", which Windows reads as a hidden (NTFS) stream');
  for (const segment of segments) {
    if (segment === '' || segment === '.') throw unsafe(name, 'has an empty or "." folder in its path');
    if (WINDOWS_FORBIDDEN.test(segment)) throw unsafe(name, 'contains a character Windows does not allow in file names');
    const device = (segment.split('.')[0] ?? '').trimEnd();
    if (DEVICE_NAMES.test(device)) throw unsafe(name, `uses the Windows device name ${device.toUpperCase()}`);
    if (segment.endsWith('.') || segment.endsWith(' ')) throw unsafe(name, 'has a name ending in a dot or a space, which Windows drops');
  }
}

/** The key two names share when a case-insensitive file system (Windows, macOS) sees one file. */
function foldCase(path: string): string {
  return path.normalize('NFC').toLowerCase();
}

interface Claim {
  spelling: string;
  kind: 'file' | 'dir';
  entry: string;
}

/** Records every path and folder prefix an entry needs; rejects a second spelling of any of them. */
class PathClaims {
  private readonly claims = new Map<string, Claim>();

  add(entry: ArchiveEntry, rawName: string): void {
    const segments = entry.path.split('/');
    for (let i = 1; i <= segments.length; i += 1) {
      const spelling = segments.slice(0, i).join('/');
      const kind = i < segments.length || entry.isDirectory ? 'dir' : 'file';
      const key = foldCase(spelling);
      const prior = this.claims.get(key);
      if (prior === undefined) {
        this.claims.set(key, { spelling, kind, entry: rawName });
        continue;
      }
      if (prior.spelling !== spelling) {
        throw new ArchiveRejection('NAME_COLLISION', `entries ${quoteEntryName(prior.entry)} and ${quoteEntryName(rawName)} differ only in letter case, so they would overwrite each other on Windows`);
      }
      if (prior.kind !== kind) {
        throw new ArchiveRejection('NAME_COLLISION', `${quoteEntryName(spelling)} is both a file and a folder in the archive`);
      }
      if (kind === 'file') throw new ArchiveRejection('NAME_COLLISION', `entry ${quoteEntryName(rawName)} appears twice`);
    }
  }
}

/**
 * Checks the whole central directory against the guards and the limits, in archive order.
 * @returns the entries, in the same order, with their folder flag and Unix mode.
 * @throws ArchiveRejection UNSAFE_ENTRY, NAME_COLLISION, LIMIT_EXCEEDED or UNSUPPORTED_ENTRY.
 */
export function checkEntries(entries: readonly CentralEntry[], limits: ArchiveLimits): ArchiveEntry[] {
  checkEntryCount(entries.length, limits);
  const claims = new PathClaims();
  const checked: ArchiveEntry[] = [];
  let totalBytes = 0;
  for (const raw of entries) {
    const name = raw.fileName;
    checkEntryName(name);
    const isDirectory = name.endsWith('/');
    const mode = raw.externalFileAttributes >>> 16;
    const type = mode & S_IFMT;
    if (type === S_IFLNK) throw unsafe(name, 'is a symbolic link');
    if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) throw unsafe(name, 'is not a regular file or folder');
    if ((raw.generalPurposeBitFlag & 0x41) !== 0) {
      throw new ArchiveRejection('UNSUPPORTED_ENTRY', `entry ${quoteEntryName(name)} is encrypted: upload the archive without a password`);
    }
    if (raw.compressionMethod !== STORE && raw.compressionMethod !== DEFLATE) {
      const method = METHOD_NAMES[raw.compressionMethod] ?? `method ${raw.compressionMethod}`;
      throw new ArchiveRejection('UNSUPPORTED_ENTRY', `entry ${quoteEntryName(name)} is compressed with ${method}: only Deflate and Store are supported`);
    }
    const entry: ArchiveEntry = {
      path: isDirectory ? name.slice(0, -1) : name,
      isDirectory,
      uncompressedSize: isDirectory ? 0 : raw.uncompressedSize,
      compressedSize: raw.compressedSize,
      crc32: raw.crc32,
      mode: mode & 0o7777,
      executable: (mode & 0o111) !== 0,
    };
    if (!isDirectory) {
      checkRatio(name, entry, limits);
      totalBytes += entry.uncompressedSize;
      if (totalBytes > limits.maxTotalBytes) {
        throw new ArchiveRejection('LIMIT_EXCEEDED', `the archive expands to more than the limit of ${formatBytes(limits.maxTotalBytes)}`);
      }
    }
    claims.add(entry, name);
    checked.push(entry);
  }
  return checked;
}

/** @throws ArchiveRejection LIMIT_EXCEEDED when `count` entries are more than the limit allows. */
export function checkEntryCount(count: number, limits: ArchiveLimits): void {
  if (count > limits.maxEntries) {
    throw new ArchiveRejection('LIMIT_EXCEEDED', `the archive holds ${count.toLocaleString('en-US')} entries, more than the limit of ${limits.maxEntries.toLocaleString('en-US')}`);
  }
}

function checkRatio(name: string, entry: ArchiveEntry, limits: ArchiveLimits): void {
  if (entry.uncompressedSize <= limits.ratioCheckMinBytes) return;
  const ratio = entry.compressedSize === 0 ? Infinity : entry.uncompressedSize / entry.compressedSize;
  if (ratio > limits.maxCompressionRatio) {
    const why = Number.isFinite(ratio)
      ? `is compressed ${Math.round(ratio).toLocaleString('en-US')}:1, past the limit of ${limits.maxCompressionRatio}:1`
      : `claims ${formatBytes(entry.uncompressedSize)} from no compressed data`;
    throw new ArchiveRejection('LIMIT_EXCEEDED', `entry ${quoteEntryName(name)} ${why} (the archive looks like a zip bomb)`);
  }
}
