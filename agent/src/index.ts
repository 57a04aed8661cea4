// The one door of @pixelfleet/agent.
export { buildAgent, AGENT_VERSION, type Agent, type AgentDeps } from './agent';
export { DEFAULT_SURVIVOR_GRACE_MS, type SurvivorOutcome, type SurvivorVerdict } from './launcher/survivor-sweep';
export type { AgentInventory } from './agent-inventory';
export { loadAgentConfig, DEFAULT_BUILD_CACHE_MAX_BYTES, type AgentConfig } from './config';
export { BuildCache, type BuildCacheOptions, type BuildLease } from './build-cache/build-cache';
export type { CachedBuildRecord } from './build-cache/build-index';
export { DEFAULT_BUILD_DOWNLOAD_RETRY, type BuildDownloadRetry, type BuildDownloadTls } from './build-cache/build-download';
export { backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from '@pixelfleet/common';
export { CommandFailure, type CommandHandlers } from './commands/command';
export { CommandJournal } from './commands/journal';
export { CommandExecutor } from './commands/executor';
export { EnrollRefusedError, type LinkState } from './link/control-link';
export { runAgentCli } from './main';
export { runDoctor, type DoctorOptions } from './doctor/doctor';
export { formatDoctorLines, type DoctorLine, type DoctorVerdict } from './doctor/doctor-line';
