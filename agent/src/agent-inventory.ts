// What the agent reports in each Hello about the sessions and builds it holds, and with each
// heartbeat about its sessions' activity (shapes from the agent contract in @pixelfleet/proto).
import type { CachedBuild, RunningSession, SessionActivity } from '@pixelfleet/proto';

export interface AgentInventory {
  runningSessions(): RunningSession[];
  cachedBuilds(): CachedBuild[];
  /** Latest viewer input per running session (AFK timeout) and its relay's counters, with every heartbeat. */
  sessionActivity?(): SessionActivity[];
}
