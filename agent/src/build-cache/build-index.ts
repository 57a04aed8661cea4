// The build cache's persisted index, `<dataDir>/builds/index.json`: one record per ready build
// (written to a temp file, fsynced, renamed), so a restarted agent knows what it holds and when
// each build was prepared. Parsed with a schema: a damaged index is refused, never trusted.
import { z } from 'zod';
import type { ArchiveManifest } from '@pixelfleet/build-archive';
import { readJsonIfExists, writeJsonAtomic } from '../lib/atomic-file';

/** A build the cache holds, extracted and verified. */
export interface CachedBuildRecord {
  uploadId: string;
  projectId: string;
  /** SHA-256 (hex) of the archive it was extracted from. */
  sha256: string;
  /** Size of that archive, in bytes. */
  archiveBytes: number;
  /** What the extracted tree holds; `manifest.totalBytes` is what the build takes on disk. */
  manifest: ArchiveManifest;
  /** When a PrepareBuild last asked for it (ms since the epoch): the eviction order. */
  preparedAtMs: number;
}

const manifestSchema = z.object({
  platform: z.enum(['windows', 'linux']),
  projectName: z.string(),
  executable: z.string(),
  baseArgs: z.array(z.string()),
  fileCount: z.number().int().nonnegative(),
  totalBytes: z.number().nonnegative(),
}) satisfies z.ZodType<ArchiveManifest>;

const recordSchema = z.object({
  uploadId: z.string(),
  projectId: z.string(),
  sha256: z.string(),
  archiveBytes: z.number().nonnegative(),
  manifest: manifestSchema,
  preparedAtMs: z.number(),
}) satisfies z.ZodType<CachedBuildRecord>;

const indexSchema = z.object({ version: z.literal(1), builds: z.array(recordSchema) });

/**
 * Reads the index at path: its records, or none when the file is missing.
 * @throws Error naming the file when it exists but is not a valid index.
 */
export function readBuildIndex(path: string): CachedBuildRecord[] {
  const raw = readJsonIfExists(path);
  if (raw === undefined) return [];
  const parsed = indexSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`build index ${path} is not valid: ${parsed.error.issues[0]?.message ?? 'unknown shape'}`);
  return parsed.data.builds;
}

/** Replaces the index at path with records, crash-safely. */
export function writeBuildIndex(path: string, records: readonly CachedBuildRecord[]): void {
  // 0600: it names every build this worker holds, in a folder apps' accounts may pass through (app-accounts.ts).
  writeJsonAtomic(path, { version: 1, builds: records });
}
