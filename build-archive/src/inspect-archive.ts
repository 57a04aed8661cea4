// Inspection of a build archive from its central directory alone: the guards, the limits and
// the Unreal layout, answered with the manifest the build record keeps.
import { type ArchiveLimits } from './archive-limits';
import { checkEntries, type ArchiveEntry } from './entry-guards';
import { findUnrealLayout, type UnrealLayout } from './unreal-layout';
import { readCentralDirectory } from './zip-reader';

/** What a build archive holds: the app to launch and how big it is once extracted. */
export interface ArchiveManifest extends UnrealLayout {
  /** Files (not folders) in the archive. */
  fileCount: number;
  /** Bytes all files expand to. */
  totalBytes: number;
}

/** The manifest of entries that already passed the guards. */
export function manifestOf(entries: readonly ArchiveEntry[]): ArchiveManifest {
  const layout = findUnrealLayout(entries);
  const files = entries.filter((e) => !e.isDirectory);
  return { ...layout, fileCount: files.length, totalBytes: files.reduce((sum, e) => sum + e.uncompressedSize, 0) };
}

/**
 * Reads zipPath's central directory (no file data), checks every entry against the guards and
 * `limits`, and finds the packaged Unreal app. Milliseconds even for a ZIP64 archive of many GiB.
 * @throws ArchiveRejection with an objection naming what is missing or hostile.
 */
export async function inspectArchive(zipPath: string, limits: ArchiveLimits): Promise<ArchiveManifest> {
  const { zipfile, entries } = await readCentralDirectory(zipPath, limits);
  try {
    return manifestOf(checkEntries(entries, limits));
  } finally {
    zipfile.close();
  }
}
