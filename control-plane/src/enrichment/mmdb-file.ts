// A MaxMind DB (.mmdb, format 2.x) looked up on disk instead of in memory. The DB-IP city files
// are ~135 MB; read whole into Buffers they were most of the control plane's RSS (bench:fleet
// measured 295 MB idle against a 300 MB target). A lookup reads the search tree's nodes and the
// record with positional reads (the page cache keeps hot pages; they are not this process's RSS)
// through a small cache of 4 KiB blocks, so the first tree levels, read by every lookup, cost no
// system call. Lookups are rare (one per session created), so a few dozen reads each are cheap.
//
// Format (MaxMind DB File Format Specification 2.0): a binary search tree of `nodeCount` nodes,
// each two records of `recordSize` bits; 16 zero bytes; the data section; then the metadata
// section after the marker `\xAB\xCD\xEFMaxMind.com`, itself one map in the data format.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';

const METADATA_MARKER = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex');
/** The metadata lies within the file's last 128 KiB. */
const METADATA_MAX_BYTES = 128 * 1024;
const DATA_SECTION_SEPARATOR_BYTES = 16;
const BLOCK_BYTES = 4096;
/** 1 MiB of cached blocks: the tree's top levels and the most used records. */
const CACHED_BLOCKS = 256;
/** Nesting deeper than this is a corrupt (or hostile) file, not a record. */
const MAX_DEPTH = 32;

/** A file that is not a readable MaxMind DB. */
export class MmdbFormatError extends Error {
  override readonly name = 'MmdbFormatError';
}

export interface MmdbMetadata {
  nodeCount: number;
  recordSize: 24 | 28 | 32;
  ipVersion: 4 | 6;
  databaseType: string;
  binaryFormatMajorVersion: number;
}

/** Positional reads of one open file through an LRU cache of aligned blocks. */
class BlockReader {
  private readonly blocks = new Map<number, Buffer>();

  constructor(
    private readonly fd: number,
    readonly size: number,
  ) {}

  private block(index: number): Buffer {
    const cached = this.blocks.get(index);
    if (cached !== undefined) {
      // Map order is insertion order: re-inserting marks the block most recently used.
      this.blocks.delete(index);
      this.blocks.set(index, cached);
      return cached;
    }
    const start = index * BLOCK_BYTES;
    const length = Math.min(BLOCK_BYTES, this.size - start);
    if (length <= 0) throw new MmdbFormatError(`read past the end of the file (offset ${start})`);
    const block = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, block, done, length - done, start + done);
      if (n === 0) throw new MmdbFormatError(`the file ended at ${start + done} bytes (it shrank while open?)`);
      done += n;
    }
    this.blocks.set(index, block);
    if (this.blocks.size > CACHED_BLOCKS) this.blocks.delete(this.blocks.keys().next().value as number);
    return block;
  }

  byte(offset: number): number {
    if (offset < 0 || offset >= this.size) throw new MmdbFormatError(`offset ${offset} is outside the file`);
    return this.block(Math.floor(offset / BLOCK_BYTES))[offset % BLOCK_BYTES]!;
  }

  bytes(offset: number, length: number): Buffer {
    if (offset < 0 || length < 0 || offset + length > this.size) throw new MmdbFormatError(`${length} bytes at ${offset} are outside the file`);
    const first = Math.floor(offset / BLOCK_BYTES);
    const within = offset % BLOCK_BYTES;
    if (within + length <= BLOCK_BYTES) return this.block(first).subarray(within, within + length);
    const out = Buffer.allocUnsafe(length);
    for (let copied = 0; copied < length; ) {
      const at = offset + copied;
      const block = this.block(Math.floor(at / BLOCK_BYTES));
      copied += block.copy(out, copied, at % BLOCK_BYTES, Math.min(block.length, (at % BLOCK_BYTES) + length - copied));
    }
    return out;
  }

  /** A big-endian unsigned integer of 0–6 bytes. */
  uint(offset: number, length: number): number {
    let value = 0;
    const b = this.bytes(offset, length);
    for (let i = 0; i < length; i++) value = value * 256 + b[i]!;
    return value;
  }
}

/** Decodes data-format fields; pointers are relative to `pointerBase` (the data section's start). */
class FieldDecoder {
  constructor(
    private readonly file: BlockReader,
    private readonly pointerBase: number,
  ) {}

  /** The value at `offset` and the offset just past it. */
  decode(offset: number, depth = 0): { value: unknown; next: number } {
    if (depth > MAX_DEPTH) throw new MmdbFormatError(`fields nested more than ${MAX_DEPTH} deep at ${offset}`);
    const control = this.file.byte(offset++);
    let type = control >> 5;
    if (type === 1) return this.pointer(control, offset, depth);
    if (type === 0) type = 7 + this.file.byte(offset++);
    let size = control & 0x1f;
    if (size === 29) size = 29 + this.file.byte(offset++);
    else if (size === 30) {
      size = 285 + this.file.uint(offset, 2);
      offset += 2;
    } else if (size === 31) {
      size = 65_821 + this.file.uint(offset, 3);
      offset += 3;
    }
    switch (type) {
      case 2: // UTF-8 string
        return { value: this.file.bytes(offset, size).toString('utf8'), next: offset + size };
      case 3: // double
        if (size !== 8) throw new MmdbFormatError(`a double of ${size} bytes at ${offset}`);
        return { value: this.file.bytes(offset, 8).readDoubleBE(0), next: offset + 8 };
      case 4: // bytes
        return { value: Buffer.from(this.file.bytes(offset, size)), next: offset + size };
      case 5: // uint16
      case 6: // uint32
        return { value: this.file.uint(offset, size), next: offset + size };
      case 7: { // map of `size` pairs
        const map: Record<string, unknown> = {};
        for (let i = 0; i < size; i++) {
          const key = this.decode(offset, depth + 1);
          if (typeof key.value !== 'string') throw new MmdbFormatError(`a map key that is not a string at ${offset}`);
          const value = this.decode(key.next, depth + 1);
          map[key.value] = value.value;
          offset = value.next;
        }
        return { value: map, next: offset };
      }
      case 8: { // int32, 0–4 bytes, sign-extended only at 4
        const unsigned = this.file.uint(offset, size);
        return { value: size === 4 ? unsigned | 0 : unsigned, next: offset + size };
      }
      case 9: // uint64
      case 10: { // uint128
        let value = 0n;
        for (const b of this.file.bytes(offset, size)) value = (value << 8n) | BigInt(b);
        return { value, next: offset + size };
      }
      case 11: { // array of `size` values
        const array: unknown[] = [];
        for (let i = 0; i < size; i++) {
          const item = this.decode(offset, depth + 1);
          array.push(item.value);
          offset = item.next;
        }
        return { value: array, next: offset };
      }
      case 14: // boolean: the size is the value
        return { value: size !== 0, next: offset };
      case 15: // float
        if (size !== 4) throw new MmdbFormatError(`a float of ${size} bytes at ${offset}`);
        return { value: this.file.bytes(offset, 4).readFloatBE(0), next: offset + 4 };
      default:
        throw new MmdbFormatError(`unknown field type ${type} at ${offset - 1}`);
    }
  }

  /** A pointer's target value; `next` is past the pointer itself, not its target. */
  private pointer(control: number, offset: number, depth: number): { value: unknown; next: number } {
    const sizeBits = (control >> 3) & 0x3;
    const high = control & 0x7;
    let target: number;
    if (sizeBits === 0) target = high * 0x100 + this.file.byte(offset);
    else if (sizeBits === 1) target = 2048 + high * 0x1_0000 + this.file.uint(offset, 2);
    else if (sizeBits === 2) target = 526_336 + high * 0x100_0000 + this.file.uint(offset, 3);
    else target = this.file.uint(offset, 4);
    return { value: this.decode(this.pointerBase + target, depth + 1).value, next: offset + sizeBits + 1 };
  }
}

function requireNumber(metadata: Record<string, unknown>, key: string): number {
  const value = metadata[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new MmdbFormatError(`metadata ${key} is missing or not a number`);
  return value;
}

/** An IP address as bits, most significant first (IPv4 as 32 bits, IPv6 as 128). */
function addressBytes(ip: string): Buffer | undefined {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) return undefined;
  let text = ip.replace(/%.*$/, '');
  // A trailing dotted quad (`::ffff:1.2.3.4`) as two hex groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

export class MmdbFile {
  readonly metadata: MmdbMetadata;
  private readonly file: BlockReader;
  private readonly data: FieldDecoder;
  private readonly nodeBytes: number;
  private readonly treeBytes: number;
  /** The node an IPv4 address starts from in an IPv6 tree (after 96 zero bits). */
  private readonly ipv4Start: number;

  private constructor(
    private readonly fd: number,
    readonly path: string,
  ) {
    const size = fstatSync(fd).size;
    this.file = new BlockReader(fd, size);
    const tailStart = Math.max(0, size - METADATA_MAX_BYTES);
    const tail = this.file.bytes(tailStart, size - tailStart);
    const marker = tail.lastIndexOf(METADATA_MARKER);
    if (marker < 0) throw new MmdbFormatError(`${path} is not a MaxMind DB (no metadata marker in its last ${METADATA_MAX_BYTES} bytes)`);
    const metadataStart = tailStart + marker + METADATA_MARKER.length;
    const raw = new FieldDecoder(this.file, metadataStart).decode(metadataStart).value;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new MmdbFormatError(`${path}: the metadata is not a map`);
    const m = raw as Record<string, unknown>;
    const recordSize = requireNumber(m, 'record_size');
    const ipVersion = requireNumber(m, 'ip_version');
    const major = requireNumber(m, 'binary_format_major_version');
    if (recordSize !== 24 && recordSize !== 28 && recordSize !== 32) throw new MmdbFormatError(`${path}: unsupported record size ${recordSize}`);
    if (ipVersion !== 4 && ipVersion !== 6) throw new MmdbFormatError(`${path}: unsupported ip_version ${ipVersion}`);
    if (major !== 2) throw new MmdbFormatError(`${path}: unsupported format version ${major}`);
    this.metadata = { nodeCount: requireNumber(m, 'node_count'), recordSize, ipVersion, databaseType: typeof m.database_type === 'string' ? m.database_type : '', binaryFormatMajorVersion: major };
    this.nodeBytes = recordSize / 4;
    this.treeBytes = this.metadata.nodeCount * this.nodeBytes;
    if (this.treeBytes + DATA_SECTION_SEPARATOR_BYTES > metadataStart) throw new MmdbFormatError(`${path}: the search tree (${this.treeBytes} bytes) does not fit before the metadata`);
    this.data = new FieldDecoder(this.file, this.treeBytes + DATA_SECTION_SEPARATOR_BYTES);
    let node = 0;
    if (ipVersion === 6) for (let i = 0; i < 96 && node < this.metadata.nodeCount; i++) node = this.record(node, 0);
    this.ipv4Start = node;
  }

  /** Opens a file for lookups; throws MmdbFormatError when it is not a MaxMind DB 2.x. */
  static open(path: string): MmdbFile {
    const fd = openSync(path, 'r');
    try {
      return new MmdbFile(fd, path);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /** Node `node`'s left (bit 0) or right (bit 1) record. */
  private record(node: number, bit: number): number {
    const at = node * this.nodeBytes;
    switch (this.metadata.recordSize) {
      case 24:
        return this.file.uint(at + bit * 3, 3);
      case 28: {
        const middle = this.file.byte(at + 3);
        return bit === 0 ? (middle >> 4) * 0x100_0000 + this.file.uint(at, 3) : (middle & 0x0f) * 0x100_0000 + this.file.uint(at + 4, 3);
      }
      case 32:
        return this.file.uint(at + bit * 4, 4);
    }
  }

  /** The record for an address, or null when the database has none (or the address is not an IP). */
  get(ip: string): unknown {
    const bytes = addressBytes(ip);
    if (bytes === undefined) return null;
    if (bytes.length === 16 && this.metadata.ipVersion === 4) return null;
    const { nodeCount } = this.metadata;
    let node = bytes.length === 4 && this.metadata.ipVersion === 6 ? this.ipv4Start : 0;
    const bits = bytes.length * 8;
    for (let i = 0; i < bits && node < nodeCount; i++) node = this.record(node, (bytes[i >> 3]! >> (7 - (i & 7))) & 1);
    if (node === nodeCount || node < nodeCount) return null;
    // A record past nodeCount points into the data section, counted from the tree's end.
    return this.data.decode(this.treeBytes + (node - nodeCount)).value;
  }

  close(): void {
    closeSync(this.fd);
  }
}
