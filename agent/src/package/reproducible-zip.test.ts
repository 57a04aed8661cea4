// The reproducible zip, read back with yauzl: entries sorted by name, one fixed timestamp, fixed
// modes, and the same bytes whatever order the entries came in or which file they came from.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import yauzl from 'yauzl';
import { FIXED_ZIP_DATE, writeReproducibleZip, type ZipEntryInput } from './reproducible-zip';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-zip-'));
  dirs.push(d);
  return d;
}

interface ReadEntry { name: string; date: Date; mode: number; data: string }

function readZip(path: string): Promise<ReadEntry[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true }, (err, zip) => {
      if (err) return reject(err);
      const out: ReadEntry[] = [];
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e) return reject(e);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            out.push({ name: entry.fileName, date: entry.getLastModDate(), mode: (entry.externalFileAttributes >>> 16) & 0o777, data: Buffer.concat(chunks).toString() });
            zip.readEntry();
          });
        });
      });
      zip.on('end', () => resolve(out));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

describe('writeReproducibleZip', () => {
  it('sorts entries, fixes their dates and modes, and writes the same bytes from any order', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'b.txt'), 'bee');
    const entries: ZipEntryInput[] = [
      { name: 'root/z.exe', source: { data: Buffer.from('MZ') }, executable: true },
      { name: 'root/b.txt', source: { path: join(dir, 'b.txt') } },
      { name: 'root/a/nested.xml', source: { data: Buffer.from('<x/>') } },
    ];
    await writeReproducibleZip(join(dir, 'one.zip'), entries);
    writeFileSync(join(dir, 'b2.txt'), 'bee');
    await writeReproducibleZip(join(dir, 'two.zip'), [...entries].reverse().map((e) => (e.name === 'root/b.txt' ? { ...e, source: { path: join(dir, 'b2.txt') } } : e)));
    expect(readFileSync(join(dir, 'one.zip')).equals(readFileSync(join(dir, 'two.zip')))).toBe(true);

    const read = await readZip(join(dir, 'one.zip'));
    expect(read.map((e) => [e.name, e.mode, e.data])).toEqual([
      ['root/a/nested.xml', 0o644, '<x/>'],
      ['root/b.txt', 0o644, 'bee'],
      ['root/z.exe', 0o755, 'MZ'],
    ]);
    // yauzl reads the DOS fields as local time; they hold 2020-01-01 00:00.
    for (const e of read) expect([e.date.getFullYear(), e.date.getMonth(), e.date.getDate(), e.date.getHours(), e.date.getMinutes()]).toEqual([2020, 0, 1, 0, 0]);
    expect(FIXED_ZIP_DATE().toISOString()).toBe('2020-01-01T00:00:00.000Z');
  });

  it('refuses two entries with one name', async () => {
    const dir = tempDir();
    await expect(writeReproducibleZip(join(dir, 'x.zip'), [{ name: 'a', source: { data: Buffer.from('1') } }, { name: 'a', source: { data: Buffer.from('2') } }])).rejects.toThrow('duplicate zip entry a');
  });
});
