// What the agent reports in each Hello about the sessions and builds it holds.

export interface AgentInventory {
  runningSessions(): { sessionId: string; projectId: string; startedAtMs: number }[];
  cachedBuilds(): { uploadId: string; sha256: string; ready: boolean }[];
  /** Latest viewer input per running session, reported with every heartbeat (AFK timeout). */
  sessionActivity?(): { sessionId: string; lastInputAtMs: number | undefined }[];
}
