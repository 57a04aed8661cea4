// What the agent reports in each Hello about the sessions and builds it holds.

export interface AgentInventory {
  runningSessions(): { sessionId: string; projectId: string; startedAtMs: number }[];
  cachedBuilds(): { uploadId: string; sha256: string; ready: boolean }[];
  /** Latest viewer input per running session (AFK timeout) and its relay's counters, with every heartbeat. */
  sessionActivity?(): SessionActivityReport[];
}

/** One running session in a heartbeat. */
export interface SessionActivityReport {
  sessionId: string;
  lastInputAtMs: number | undefined;
  /** The session relay's totals so far; undefined before it has a relay. */
  relay: RelayCounters | undefined;
}

/** The relay counters operators chart (the fleet's metrics): loss and repair, keyframe requests, bitrate. */
export interface RelayCounters {
  keyframeRequestsMade: number;
  keyframeRequestsToApp: number;
  keyframeRequestsCoalesced: number;
  ingestPacketsMissing: number;
  ingestPacketsAbandoned: number;
  viewerPacketsResent: number;
  viewerNackMisses: number;
  rembBps: number;
}
