// Real build archives for tests, written to a temp folder (never committed): the valid packaged
// Unreal layouts (Windows Shipping, Development, Blueprint-only; Linux with a runnable binary),
// each hostile archive the build pipeline must reject with its objection, and a sparse ZIP64
// build past 4 GiB that costs no disk I/O. Valid builds come from archiver (a real zip tool) or
// the hand writer; hostile ones from the hand writer, which can lie.
import { createWriteStream } from 'node:fs';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { deflateRawSync } from 'node:zlib';
import { ZipArchive } from 'archiver';
import { DEFAULT_ARCHIVE_LIMITS, type ArchiveRejectionCode } from '@pixelfleet/build-archive';
import { writeZip, type ZipEntrySpec } from './zip-writer';

export type BuildLayout = 'windows-shipping' | 'windows-development' | 'windows-blueprint' | 'linux';

export interface BuildZipOptions {
  /** The Unreal project (folder) name. Default `PixelDemo`. */
  projectName?: string;
  /** archiver (data descriptors, its own attributes) or the hand writer. Default 'archiver'. */
  writer?: 'archiver' | 'hand';
  /** ZIP64 fields and end records although nothing needs them. Default false. */
  forceZip64?: boolean;
  /** Content of the Linux binary. Default a shell script that prints its arguments. */
  linuxBinary?: string;
  /** Size of the .pak (pseudo-random bytes: they do not compress). Default 1.5 MiB, past the ratio check's floor. */
  pakBytes?: number;
  /** File name in `dir`. Default `<layout>.zip`. */
  fileName?: string;
}

export const DEFAULT_PROJECT = 'PixelDemo';
const MIB = 1024 * 1024;

/** Deterministic bytes that deflate cannot shrink (xorshift32). */
export function noise(length: number, seed = 0x9e3779b9): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i + 4 <= length; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out.writeUInt32LE(x, i);
  }
  return out;
}

const DEFAULT_LINUX_BINARY = '#!/bin/sh\n# Stands in for a packaged Unreal app.\necho "launched with: $*"\n';

/** The entries of a packaged build in `layout` (what UE stages, trimmed to a few files). */
export function buildEntries(layout: BuildLayout, options: BuildZipOptions = {}): ZipEntrySpec[] {
  const p = options.projectName ?? DEFAULT_PROJECT;
  const pak = noise(options.pakBytes ?? 1.5 * MIB);
  const engine: ZipEntrySpec[] = [
    { name: 'Engine/' },
    { name: 'Engine/Content/Internationalization/icudt64l/coll/root.res', data: noise(4096, 7) },
    { name: 'Engine/Binaries/ThirdParty/Ogg/readme.txt', data: 'third-party notices\n'.repeat(50) },
  ];
  const content: ZipEntrySpec[] = [
    { name: `${p}/Content/Paks/${p}-${layout === 'linux' ? 'Linux' : 'Windows'}.pak`, data: pak },
    { name: `${p}/Content/Paks/global.utoc`, data: noise(2048, 11) },
  ];
  switch (layout) {
    case 'windows-shipping':
      return [
        { name: `${p}.exe`, data: `MZ bootstrap for ${p}` },
        { name: 'Manifest_NonUFSFiles_Win64.txt', data: `${p}/Binaries/Win64/${p}-Win64-Shipping.exe\t0\n` },
        ...engine,
        { name: `${p}/Binaries/Win64/${p}-Win64-Shipping.exe`, data: Buffer.concat([Buffer.from('MZ'), noise(64 * 1024, 3)]) },
        ...content,
      ];
    case 'windows-development':
      return [
        { name: `${p}.exe`, data: `MZ bootstrap for ${p}` },
        ...engine,
        { name: `${p}/Binaries/Win64/${p}.exe`, data: Buffer.concat([Buffer.from('MZ'), noise(64 * 1024, 3)]) },
        ...content,
      ];
    case 'windows-blueprint':
      return [
        { name: `${p}.exe`, data: `MZ bootstrap for ${p}` },
        ...engine,
        { name: 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', data: Buffer.concat([Buffer.from('MZ'), noise(64 * 1024, 5)]) },
        { name: `${p}/${p}.uproject`, data: `{ "FileVersion": 3, "EngineAssociation": "5.4" }\n` },
        ...content,
      ];
    case 'linux':
      return [
        { name: `${p}.sh`, data: `#!/bin/sh\nexec "$(dirname "$0")/${p}/Binaries/Linux/${p}-Linux-Shipping" ${p} "$@"\n`, mode: 0o100755 },
        ...engine,
        { name: `${p}/Binaries/Linux/${p}-Linux-Shipping`, data: options.linuxBinary ?? DEFAULT_LINUX_BINARY, mode: 0o100755 },
        ...content,
      ];
  }
}

/** Writes entries with archiver (its default Deflate level, data descriptors) to path. */
async function writeWithArchiver(path: string, entries: readonly ZipEntrySpec[], forceZip64: boolean): Promise<void> {
  const archive = new ZipArchive({ forceZip64 });
  const done = pipeline(archive, createWriteStream(path));
  for (const e of entries) {
    const date = new Date('2024-01-01T00:00:00Z');
    if (e.name.endsWith('/')) archive.append('', { name: e.name, type: 'directory', date });
    else archive.append(typeof e.data === 'string' ? Buffer.from(e.data) : (e.data ?? Buffer.alloc(0)), { name: e.name, date, mode: (e.mode ?? 0o100644) & 0o7777 });
  }
  await archive.finalize();
  await done;
}

/** Writes a valid packaged build to `dir` and returns the zip's path. */
export async function writeBuildZip(dir: string, layout: BuildLayout, options: BuildZipOptions = {}): Promise<string> {
  const path = join(dir, options.fileName ?? `${layout}.zip`);
  const entries = buildEntries(layout, options);
  if ((options.writer ?? 'archiver') === 'archiver') await writeWithArchiver(path, entries, options.forceZip64 ?? false);
  else await writeZip(path, entries, { zip64: options.forceZip64 ?? false });
  return path;
}

/** Size of the sparse .pak in the ZIP64 build: past 4 GiB, so sizes and later offsets need ZIP64. */
export const ZIP64_PAK_BYTES = 4 * 1024 * MIB + MIB;

/**
 * A Linux build whose .pak is 4 GiB + 1 MiB of stored zeros, written as a hole: the file's size
 * is past 4 GiB (ZIP64 sizes, offsets and end records) but it takes a few KiB of disk.
 */
export async function writeZip64Build(dir: string, fileName = 'zip64-sparse.zip'): Promise<string> {
  const path = join(dir, fileName);
  const p = DEFAULT_PROJECT;
  const entries = buildEntries('linux');
  // The big entry first, so the entries after it sit past 4 GiB.
  await writeZip(path, [{ name: `${p}/Content/Paks/${p}-Linux.pak`, zeros: ZIP64_PAK_BYTES }, ...entries.filter((e) => !e.name.endsWith('.pak'))]);
  return path;
}

export type HostileZipName =
  | 'no-exe'
  | 'two-shipping-exes'
  | 'zip-slip'
  | 'absolute-path'
  | 'drive-letter'
  | 'backslash'
  | 'ntfs-stream'
  | 'device-name'
  | 'trailing-dot'
  | 'symlink'
  | 'zip-bomb'
  | 'over-total-size'
  | 'too-many-entries'
  | 'case-collision'
  | 'encrypted'
  | 'lzma'
  | 'wrapped-in-folder'
  | 'linux-binary-not-executable'
  | 'html-page'
  | 'empty-file'
  | 'truncated'
  | 'lying-size'
  | 'crc-mismatch';

export interface HostileZip {
  name: HostileZipName;
  /** Rejected from the central directory (inspection), or only once the data is read (extraction). */
  caughtBy: 'inspection' | 'extraction';
  code: ArchiveRejectionCode;
  /** The objection the build gets, word for word (under DEFAULT_ARCHIVE_LIMITS). */
  objection: string;
  /** Writes the archive into dir; returns its path. */
  write: (dir: string) => Promise<string>;
}

const P = DEFAULT_PROJECT;
const SHIPPING = `${P}/Binaries/Win64/${P}-Win64-Shipping.exe`;
const PAK = `${P}/Content/Paks/${P}-Windows.pak`;
const BOMB_BYTES = 10 * MIB;

/** A Windows Shipping build with `extra` entries appended (or `change` applied to each entry). */
function windowsWith(extra: ZipEntrySpec[], change: (e: ZipEntrySpec) => ZipEntrySpec = (e) => e): ZipEntrySpec[] {
  return [...buildEntries('windows-shipping').map(change), ...extra];
}

function hostile(name: HostileZipName, caughtBy: HostileZip['caughtBy'], code: ArchiveRejectionCode, objection: string, write: (path: string) => Promise<unknown>): HostileZip {
  return {
    name,
    caughtBy,
    code,
    objection,
    write: async (dir) => {
      const path = join(dir, `${name}.zip`);
      await write(path);
      return path;
    },
  };
}

/** Every hostile archive, with the objection it must get. */
export function hostileZips(): HostileZip[] {
  const bombCompressed = deflateRawSync(Buffer.alloc(BOMB_BYTES)).length;
  const limits = DEFAULT_ARCHIVE_LIMITS;
  return [
    hostile('no-exe', 'inspection', 'NOT_AN_UNREAL_BUILD',
      'the archive has no Unreal executable: expected <Name>.exe at the root and <Project>/Binaries/Win64/<Project>-Win64-Shipping.exe, or <Name>.sh at the root and <Project>/Binaries/Linux/<Project>-Linux-Shipping',
      (path) => writeZip(path, buildEntries('windows-shipping').filter((e) => !e.name.endsWith('.exe')))),
    hostile('two-shipping-exes', 'inspection', 'NOT_AN_UNREAL_BUILD',
      `the archive holds 2 Shipping executables, "${SHIPPING}" and "Launcher/Binaries/Win64/Launcher-Win64-Shipping.exe": it must hold exactly one`,
      (path) => writeZip(path, windowsWith([{ name: 'Launcher/Binaries/Win64/Launcher-Win64-Shipping.exe', data: 'MZ' }]))),
    hostile('zip-slip', 'inspection', 'UNSAFE_ENTRY', 'entry "../x" escapes the archive',
      (path) => writeZip(path, windowsWith([{ name: '../x', data: 'overwrites a file beside the build' }]))),
    hostile('absolute-path', 'inspection', 'UNSAFE_ENTRY', 'entry "/etc/cron.d/x" is an absolute path',
      (path) => writeZip(path, windowsWith([{ name: '/etc/cron.d/x', data: '* * * * * root true\n' }]))),
    hostile('drive-letter', 'inspection', 'UNSAFE_ENTRY', 'entry "C:/Windows/x.dll" starts with a drive letter',
      (path) => writeZip(path, windowsWith([{ name: 'C:/Windows/x.dll', data: 'MZ' }]))),
    hostile('backslash', 'inspection', 'UNSAFE_ENTRY', 'entry "PixelDemo\\Saved\\x.ini" uses "\\" between folders: zip the build with a tool that writes "/"',
      (path) => writeZip(path, windowsWith([{ name: `${P}\\Saved\\x.ini`, data: '[x]\n' }]))),
    hostile('ntfs-stream', 'inspection', 'UNSAFE_ENTRY', 'entry "PixelDemo/readme.txt:hidden" contains ":", which Windows reads as a hidden (NTFS) stream',
      (path) => writeZip(path, windowsWith([{ name: `${P}/readme.txt:hidden`, data: 'x' }]))),
    hostile('device-name', 'inspection', 'UNSAFE_ENTRY', 'entry "PixelDemo/Saved/con.txt" uses the Windows device name CON',
      (path) => writeZip(path, windowsWith([{ name: `${P}/Saved/con.txt`, data: 'x' }]))),
    hostile('trailing-dot', 'inspection', 'UNSAFE_ENTRY', 'entry "PixelDemo/Saved/notes." has a name ending in a dot or a space, which Windows drops',
      (path) => writeZip(path, windowsWith([{ name: `${P}/Saved/notes.`, data: 'x' }]))),
    hostile('symlink', 'inspection', 'UNSAFE_ENTRY', `entry "${P}/Content/Paks/link.pak" is a symbolic link`,
      (path) => writeZip(path, windowsWith([{ name: `${P}/Content/Paks/link.pak`, data: '/etc/shadow', method: 'store', mode: 0o120777 }]))),
    hostile('zip-bomb', 'inspection', 'LIMIT_EXCEEDED',
      `entry "${P}/Content/Paks/bomb.pak" is compressed ${Math.round(BOMB_BYTES / bombCompressed).toLocaleString('en-US')}:1, past the limit of ${limits.maxCompressionRatio}:1 (the archive looks like a zip bomb)`,
      (path) => writeZip(path, windowsWith([{ name: `${P}/Content/Paks/bomb.pak`, data: Buffer.alloc(BOMB_BYTES) }]))),
    hostile('over-total-size', 'inspection', 'LIMIT_EXCEEDED', 'the archive expands to more than the limit of 48.0 GiB',
      // Stored zeros left as a hole: the archive is honest and takes no disk.
      (path) => writeZip(path, windowsWith([{ name: `${P}/Content/Paks/huge.pak`, zeros: limits.maxTotalBytes }]))),
    hostile('too-many-entries', 'inspection', 'LIMIT_EXCEEDED', 'the archive holds 100,001 entries, more than the limit of 100,000',
      (path) => {
        const base = buildEntries('windows-shipping');
        const filler = Array.from({ length: limits.maxEntries + 1 - base.length }, (_, i) => ({ name: `${P}/Saved/f${i}`, data: Buffer.alloc(0), method: 'store' as const }));
        return writeZip(path, [...base, ...filler]);
      }),
    hostile('case-collision', 'inspection', 'NAME_COLLISION',
      `entries "${SHIPPING}" and "pixeldemo/Content/Paks/extra.pak" differ only in letter case, so they would overwrite each other on Windows`,
      (path) => writeZip(path, windowsWith([{ name: 'pixeldemo/Content/Paks/extra.pak', data: 'x' }]))),
    hostile('encrypted', 'inspection', 'UNSUPPORTED_ENTRY', `entry "${PAK}" is encrypted: upload the archive without a password`,
      (path) => writeZip(path, windowsWith([], (e) => (e.name === PAK ? { ...e, flags: 0x1 } : e)))),
    hostile('lzma', 'inspection', 'UNSUPPORTED_ENTRY', `entry "${PAK}" is compressed with LZMA: only Deflate and Store are supported`,
      (path) => writeZip(path, windowsWith([], (e) => (e.name === PAK ? { ...e, method: 14 } : e)))),
    hostile('wrapped-in-folder', 'inspection', 'NOT_AN_UNREAL_BUILD',
      'the archive has no Unreal executable at its root: everything is inside the folder "Windows/"; zip that folder\'s contents instead',
      (path) => writeZip(path, buildEntries('windows-shipping').map((e) => ({ ...e, name: `Windows/${e.name}` })))),
    hostile('linux-binary-not-executable', 'inspection', 'NOT_AN_UNREAL_BUILD',
      `"${P}/Binaries/Linux/${P}-Linux-Shipping" is not marked executable in the archive: zip the build on Linux so that file permissions are kept`,
      (path) => writeZip(path, buildEntries('linux').map((e) => ({ ...e, mode: undefined })))),
    hostile('html-page', 'inspection', 'NOT_A_ZIP', 'the file is an HTML page, not a zip archive',
      (path) => writeFile(path, '<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Your link has expired.</body></html>\n')),
    hostile('empty-file', 'inspection', 'NOT_A_ZIP', 'the file is empty, not a zip archive', (path) => writeFile(path, '')),
    hostile('truncated', 'inspection', 'NOT_A_ZIP', 'the archive is truncated: its end (the central directory) is missing',
      async (path) => truncate(path, Math.floor((await writeZip(path, buildEntries('windows-shipping'))) / 2))),
    hostile('lying-size', 'extraction', 'CORRUPT', `entry "${PAK}" holds more data than its header declares`,
      // The headers say 1 MiB fewer bytes than the deflated data holds; files before the pak are written first.
      (path) => writeZip(path, windowsWith([], (e) => (e.name === PAK ? { ...e, lie: { uncompressedSize: 1.5 * MIB - MIB } } : e)))),
    hostile('crc-mismatch', 'extraction', 'CORRUPT', `entry "${PAK}" is damaged: its checksum (CRC-32) does not match`,
      (path) => writeZip(path, windowsWith([], (e) => (e.name === PAK ? { ...e, lie: { crc32: 0x12345678 } } : e)))),
  ];
}
