// The one door of @pixelfleet/agent.
export { buildAgent, AGENT_VERSION, type Agent, type AgentDeps } from './agent';
export type { AgentInventory } from './agent-inventory';
export { loadAgentConfig, AgentConfigError, type AgentConfig } from './config';
export { backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from './lib/backoff';
export { CommandFailure, type CommandHandlers } from './commands/command';
export { CommandJournal } from './commands/journal';
export { EnrollRefusedError, type LinkState } from './link/control-link';
export { runAgentCli } from './main';
