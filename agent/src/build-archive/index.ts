// The door of `@pixelfleet/agent/build-archive`: extract and scan of a build archive, shared by
// the control plane (a submitted build) and the agent (a distributed build). It imports only
// this folder, yauzl and node built-ins, so the control plane loads none of the agent.
export { ArchiveRejection, type ArchiveRejectionCode } from './archive-rejection';
export { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from './archive-limits';
export { inspectArchive, type ArchiveManifest } from './inspect-archive';
export { extractArchive, type ExtractOptions, type ExtractProgress } from './extract-archive';
export { verifyArchive, type VerifyOptions } from './verify-archive';
export type { BuildPlatform } from './unreal-layout';
