// A small zip writer for test archives that real tools refuse to make: it can lie about an
// entry's CRC and sizes, set any external attributes (symlinks, executables), flag encryption,
// force ZIP64, and leave stored zeros as holes so a > 4 GiB archive costs no disk I/O.
import { open } from 'node:fs/promises';
import { crc32, deflateRawSync } from 'node:zlib';

export interface ZipEntrySpec {
  /** Name as stored; a name ending in '/' is a folder. */
  name: string;
  /** File content. */
  data?: Buffer | string;
  /** Content of this many zero bytes, written as a hole in a sparse file (stored entries only). */
  zeros?: number;
  /** Default 'deflate' for data, 'store' for zeros and folders; a number writes that method id as is. */
  method?: 'store' | 'deflate' | number;
  /** Unix mode (type and permission bits) in the external attributes, "made by Unix". Default 0o100644, folders 0o040755. */
  mode?: number;
  /** General-purpose flag bits to add (0x1: encrypted). */
  flags?: number;
  /** Values written in both headers in place of the true ones. */
  lie?: { crc32?: number; uncompressedSize?: number; compressedSize?: number };
  /** ZIP64 extra fields for this entry even when its sizes and offset fit in 32 bits. */
  zip64?: boolean;
}

export interface ZipWriteOptions {
  /** ZIP64 end records (and ZIP64 fields on every entry). */
  zip64?: boolean;
}

const MAX32 = 0xffffffff;

/** CRC-32 of `crcB`'s data appended to `crcA`'s, `lengthB` bytes long (zlib's crc32_combine). */
function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  const times = (matrix: number[], vector: number): number => {
    let sum = 0;
    for (let i = 0, v = vector >>> 0; v !== 0; i += 1, v >>>= 1) if (v & 1) sum ^= matrix[i] ?? 0;
    return sum >>> 0;
  };
  const square = (matrix: number[]): number[] => matrix.map((row) => times(matrix, row));
  if (lengthB <= 0) return crcA >>> 0;
  let odd = [0xedb88320, ...Array.from({ length: 31 }, (_, n) => 2 ** n)];
  let even = square(odd);
  odd = square(even);
  let crc = crcA >>> 0;
  let remaining = lengthB;
  for (;;) {
    even = square(odd);
    if (remaining % 2 === 1) crc = times(even, crc);
    remaining = Math.floor(remaining / 2);
    if (remaining === 0) break;
    odd = square(even);
    if (remaining % 2 === 1) crc = times(odd, crc);
    remaining = Math.floor(remaining / 2);
    if (remaining === 0) break;
  }
  return (crc ^ crcB) >>> 0;
}

/** CRC-32 of `length` zero bytes without reading them (doubling with crc32Combine). */
export function crc32OfZeros(length: number): number {
  let result = 0;
  let pieceCrc = crc32(Buffer.alloc(1));
  let pieceLength = 1;
  for (let remaining = length; remaining > 0; remaining = Math.floor(remaining / 2)) {
    if (remaining % 2 === 1) result = crc32Combine(result, pieceCrc, pieceLength);
    pieceCrc = crc32Combine(pieceCrc, pieceCrc, pieceLength);
    pieceLength *= 2;
  }
  return result;
}

interface Written {
  spec: ZipEntrySpec;
  name: Buffer;
  method: number;
  flags: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  offset: number;
  zip64: boolean;
  attributes: number;
}

function u64(value: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(value));
  return b;
}

/** The fields a local header (from byte 4) and a central-directory record (from byte 6) share, in the same order. */
function sharedFields(header: Buffer, at: number, w: Written, extraLength: number): void {
  header.writeUInt16LE(w.zip64 ? 45 : 20, at); // version needed to extract
  header.writeUInt16LE(w.flags, at + 2);
  header.writeUInt16LE(w.method, at + 4);
  header.writeUInt16LE(0, at + 6); // time 00:00:00
  header.writeUInt16LE(((2024 - 1980) << 9) | (1 << 5) | 1, at + 8); // date 2024-01-01
  header.writeUInt32LE(w.crc, at + 10);
  header.writeUInt32LE(w.zip64 ? MAX32 : w.compressedSize, at + 14);
  header.writeUInt32LE(w.zip64 ? MAX32 : w.uncompressedSize, at + 18);
  header.writeUInt16LE(w.name.length, at + 22);
  header.writeUInt16LE(extraLength, at + 24);
}

/** Writes a zip of `entries` to path, in order, and returns its size in bytes (holes included). */
export async function writeZip(path: string, entries: readonly ZipEntrySpec[], options: ZipWriteOptions = {}): Promise<number> {
  const file = await open(path, 'w');
  // Contiguous bytes are gathered and written together; a hole (zeros) flushes and skips ahead.
  let position = 0;
  let pending: Buffer[] = [];
  let pendingStart = 0;
  const flush = async () => {
    if (pending.length > 0) await file.write(Buffer.concat(pending), 0, undefined, pendingStart);
    pending = [];
    pendingStart = position;
  };
  const put = (b: Buffer) => {
    pending.push(b);
    position += b.length;
  };
  try {
    const written: Written[] = [];
    for (const spec of entries) {
      const isFolder = spec.name.endsWith('/');
      const raw = typeof spec.data === 'string' ? Buffer.from(spec.data) : (spec.data ?? Buffer.alloc(0));
      const method = typeof spec.method === 'number' ? spec.method : (spec.method ?? (spec.zeros !== undefined || isFolder ? 'store' : 'deflate')) === 'store' ? 0 : 8;
      if (spec.zeros !== undefined && method !== 0) throw new Error('writeZip: zeros are stored, never deflated');
      const payload = spec.zeros !== undefined ? undefined : method === 8 ? deflateRawSync(raw) : raw;
      const uncompressedSize = spec.zeros ?? raw.length;
      const w: Written = {
        spec,
        name: Buffer.from(spec.name, 'utf8'),
        method,
        flags: 0x800 | (spec.flags ?? 0),
        crc: spec.lie?.crc32 ?? (spec.zeros !== undefined ? crc32OfZeros(spec.zeros) : crc32(raw)),
        compressedSize: spec.lie?.compressedSize ?? (payload?.length ?? uncompressedSize),
        uncompressedSize: spec.lie?.uncompressedSize ?? uncompressedSize,
        offset: position,
        zip64: false,
        attributes: ((spec.mode ?? (isFolder ? 0o040755 : 0o100644)) << 16) >>> 0,
      };
      w.zip64 = options.zip64 === true || spec.zip64 === true || w.compressedSize >= MAX32 || w.uncompressedSize >= MAX32 || w.offset >= MAX32;
      const extra = w.zip64 ? Buffer.concat([Buffer.from([0x01, 0x00, 16, 0x00]), u64(w.uncompressedSize), u64(w.compressedSize)]) : Buffer.alloc(0);
      const header = Buffer.alloc(30);
      header.writeUInt32LE(0x04034b50, 0);
      sharedFields(header, 4, w, extra.length);
      put(header);
      put(w.name);
      put(extra);
      if (payload !== undefined) put(payload);
      else {
        await flush();
        position += uncompressedSize;
        pendingStart = position;
      }
      written.push(w);
    }
    const centralStart = position;
    for (const w of written) {
      const extra = w.zip64
        ? Buffer.concat([Buffer.from([0x01, 0x00, 24, 0x00]), u64(w.uncompressedSize), u64(w.compressedSize), u64(w.offset)])
        : Buffer.alloc(0);
      const header = Buffer.alloc(46);
      header.writeUInt32LE(0x02014b50, 0);
      header.writeUInt16LE(3 << 8 | 45, 4);
      sharedFields(header, 6, w, extra.length);
      header.writeUInt32LE(w.attributes, 38);
      header.writeUInt32LE(w.zip64 ? MAX32 : w.offset, 42);
      put(header);
      put(w.name);
      put(extra);
    }
    const centralSize = position - centralStart;
    const zip64End = options.zip64 === true || written.some((w) => w.zip64) || written.length >= 0xffff || centralStart >= MAX32;
    if (zip64End) {
      const recordStart = position;
      const record = Buffer.alloc(56);
      record.writeUInt32LE(0x06064b50, 0);
      record.writeBigUInt64LE(44n, 4);
      record.writeUInt16LE(3 << 8 | 45, 12);
      record.writeUInt16LE(45, 14);
      record.writeBigUInt64LE(BigInt(written.length), 24);
      record.writeBigUInt64LE(BigInt(written.length), 32);
      record.writeBigUInt64LE(BigInt(centralSize), 40);
      record.writeBigUInt64LE(BigInt(centralStart), 48);
      put(record);
      const locator = Buffer.alloc(20);
      locator.writeUInt32LE(0x07064b50, 0);
      locator.writeBigUInt64LE(BigInt(recordStart), 8);
      locator.writeUInt32LE(1, 16);
      put(locator);
    }
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(zip64End ? 0xffff : written.length, 8);
    end.writeUInt16LE(zip64End ? 0xffff : written.length, 10);
    end.writeUInt32LE(zip64End ? MAX32 : centralSize, 12);
    end.writeUInt32LE(zip64End ? MAX32 : centralStart, 16);
    put(end);
    await flush();
    return position;
  } finally {
    await file.close();
  }
}
