// The bounds an archive must stay within before anything is extracted. The defaults fit a
// packaged Unreal build under the spec's 24 GB upload cap; configuration may tighten or raise them.

export interface ArchiveLimits {
  /** Most entries (files and folders) one archive may hold. Default 100,000. */
  maxEntries: number;
  /** Most bytes all entries together may expand to. Default 48 GiB (twice the 24 GB upload cap). */
  maxTotalBytes: number;
  /** Highest uncompressed : compressed ratio of one entry larger than `ratioCheckMinBytes`. Default 200. */
  maxCompressionRatio: number;
  /** Entries up to this size (bytes) skip the ratio check: small files compress well honestly. Default 1 MiB. */
  ratioCheckMinBytes: number;
  /** Free disk (bytes) that must remain after extraction. Default 1 GiB. */
  freeSpaceMarginBytes: number;
}

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

export const DEFAULT_ARCHIVE_LIMITS: Readonly<ArchiveLimits> = Object.freeze({
  maxEntries: 100_000,
  maxTotalBytes: 48 * GIB,
  maxCompressionRatio: 200,
  ratioCheckMinBytes: MIB,
  freeSpaceMarginBytes: GIB,
});
