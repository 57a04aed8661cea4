// A zip whose bytes depend only on its entries: names sorted, every timestamp the same fixed
// value, fixed modes and compression, so two builds of the same inputs are byte-identical.
import { createWriteStream, readFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { ZipArchive } from 'archiver';

/**
 * The timestamp of every entry: 2020-01-01 00:00 in zip's DOS fields (archiver fills them from
 * the date's UTC parts, so any machine's time zone writes the same bytes).
 */
export const FIXED_ZIP_DATE = (): Date => new Date(Date.UTC(2020, 0, 1, 0, 0, 0));

export interface ZipEntryInput {
  /** Path inside the zip, `/`-separated. */
  name: string;
  /** The file to read, or its bytes. */
  source: { path: string } | { data: Buffer };
  /** Marks a Windows/Unix executable (0755 instead of 0644). */
  executable?: boolean;
}

/** Writes the zip to outFile; entries go in byte order of their names whatever order they come in. */
export async function writeReproducibleZip(outFile: string, entries: readonly ZipEntryInput[]): Promise<void> {
  const names = new Set<string>();
  for (const e of entries) {
    if (names.has(e.name)) throw new Error(`duplicate zip entry ${e.name}`);
    names.add(e.name);
  }
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
  const archive = new ZipArchive({ zlib: { level: 9 } });
  const written = pipeline(archive, createWriteStream(outFile));
  for (const e of sorted) {
    // Bytes, not archive.file(): that stats the file first and may reorder the entries.
    const data = 'path' in e.source ? readFileSync(e.source.path) : e.source.data;
    archive.append(data, { name: e.name, date: FIXED_ZIP_DATE(), mode: e.executable === true ? 0o755 : 0o644 });
  }
  await archive.finalize();
  await written;
}
