// One Unreal crash folder (`Saved/Crashes/<name>/`: CrashContext.runtime-xml, the minidump, a copy
// of the log) packed into one zip with archiver, its entries under `<name>/`. Regular files only:
// a link inside a crash folder is not followed (it could point anywhere on the server).
import { createWriteStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ZipArchive } from 'archiver';

/** Folders below the crash folder that are followed; a crash folder is flat in practice. */
const MAX_DEPTH = 4;

async function regularFiles(dir: string, prefix: string, depth: number, out: { path: string; name: string; mtime: Date }[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    const name = posix.join(prefix, entry.name);
    if (entry.isDirectory() && depth < MAX_DEPTH) await regularFiles(path, name, depth + 1, out);
    else if (entry.isFile()) out.push({ path, name, mtime: (await lstat(path)).mtime });
  }
}

/** Zips crashDir into zipPath (created or replaced); resolves with the zip's size in bytes and its entry names. */
export async function zipCrashFolder(crashDir: string, zipPath: string): Promise<{ size: number; entries: string[] }> {
  const files: { path: string; name: string; mtime: Date }[] = [];
  await regularFiles(crashDir, basename(crashDir), 0, files);
  const archive = new ZipArchive({ zlib: { level: 6 } });
  const out = createWriteStream(zipPath);
  const written = pipeline(archive, out);
  for (const f of files) archive.file(f.path, { name: f.name, date: f.mtime });
  await archive.finalize();
  await written;
  return { size: archive.pointer(), entries: files.map((f) => f.name) };
}
