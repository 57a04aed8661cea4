// The door of `@pixelfleet/build-archive`: the download, extract and scan of a build archive,
// shared by the control plane (a submitted build) and the agent (a distributed build). It imports
// only this package, yauzl, node built-ins and @pixelfleet/common (the Clock and the backoff),
// so neither side loads the other.
export { ArchiveRejection, type ArchiveRejectionCode } from './archive-rejection';
export { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from './archive-limits';
export { inspectArchive, type ArchiveManifest } from './inspect-archive';
export { extractArchive, type ExtractOptions, type ExtractProgress } from './extract-archive';
export { verifyArchive, type VerifyOptions } from './verify-archive';
export type { BuildPlatform } from './unreal-layout';
export {
  downloadArchive,
  sizeOnDisk,
  DEFAULT_ARCHIVE_DOWNLOAD_RETRY,
  type ArchiveDownloadOptions,
  type ArchiveDownloadRetry,
  type DownloadedArchive,
  type DownloadLog,
  type DownloadProgress,
  type HopPolicy,
  type HopVerdict,
} from './archive-download';
export { ArchiveDownloadError, statusWords, type DownloadFailure } from './download-failure';
export { byteWords, formatBytes } from './byte-size';
// For the agent's log spool tests, which read back the zips the spool writes.
export { openEntryData, readCentralDirectory } from './zip-reader';
