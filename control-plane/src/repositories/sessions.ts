// Viewing sessions and their status snapshots.
import type { Db } from '../db/database';
import type { SessionStatus } from '../sessions/session-status';
import { SqliteSessionDimensionsRepository, type ClientDimensions } from './session-dimensions';
import { SqliteSessionDailyRepository } from './session-daily';

export interface SessionRecord {
  sessionId: string;
  projectId: string;
  region: string;
  status: SessionStatus;
  assignedWorker: string | undefined;
  streamingId: string | undefined;
  playerId: string | undefined;
  maxRunTime: number | undefined;
  endReason: string | undefined;
  /** When the session was placed on a worker (Starting); undefined before. */
  placedAt?: number;
  /** When its app first identified itself on the agent's signalling (set once: the split of start-up into launch and negotiation). */
  identifiedAt?: number;
  createdAt: number;
  updatedAt: number;
  /** The build its app was launched from (set at placement). */
  uploadId?: string;
  /**
   * True for a warm instance no viewer has claimed (sessions/warm-pool.ts): it holds a slot, but is
   * no customer's session, counts in no live number and appears in no list of a project's sessions
   * (listUnclaimedWarm finds them, for the operators' list).
   */
  pooled?: boolean;
  /** When a viewer claimed it, for a session served by a warm instance (its createdAt and placedAt are that moment too). */
  claimedAt?: number;
  /** What the server derived of the viewer at creation (User-Agent, GeoIP); fixed from then on. */
  client?: ClientDimensions;
}

/** The `data` of a snapshot row, exactly the spec's fields. */
export interface SnapshotData {
  sessionId: string;
  projectId: string;
  status: SessionStatus;
  region: string;
  assignedWorker?: string;
  streamingId?: string;
  playerId?: string;
  maxRunTime?: number;
}

export interface SessionsRepository {
  /** A new session and its first snapshot; a warm instance (pooled) has none, and counts in no rollup until claimed. */
  insert(s: SessionRecord, snapshot: SnapshotData | undefined, viewerTokenHash?: string): void;
  /**
   * A viewer claims a warm instance: `claimed` is the session as it now stands (pooled no more, its
   * createdAt, placedAt and claimedAt the claim's moment, the viewer's client), written with its
   * snapshots (Enqueued, Starting: the viewer queued for no time and its app was assigned at once),
   * its viewer token and the day's rollups, in one transaction. False when it was no longer an
   * unclaimed live instance (nothing written).
   */
  claim(claimed: SessionRecord, snapshots: readonly SnapshotData[], viewerTokenHash: string): boolean;
  viewerTokenHash(sessionId: string): string | undefined;
  /** The session whose viewer token has this digest (index sessions_viewer_token). */
  sessionIdOfViewerTokenHash(digest: string): string | undefined;
  /** Sessions of the project past Enqueued that have not begun ending (spec: liveUser). */
  countLive(projectId: string): number;
  /** Each session holding a slot in the region: when it was placed, whether a viewer claimed it from a warm pool, whether it is an unclaimed instance (the queue's wait estimate; the not-Terminated index, not the history). */
  slotHoldersOfRegion(region: string): { placedAt: number; claimed: boolean; pooled: boolean }[];
  /** Records when the session's app first identified itself (later identifications, after a signalling drop, keep the first). */
  markIdentified(sessionId: string, at: number): void;
  /** How many sessions not yet Terminated each project has in each status (for /metrics; the partial index, not the history). */
  countNotTerminatedByProjectAndStatus(): { projectId: string; status: SessionStatus; n: number }[];
  /** Every session not yet Terminated, oldest first. */
  listNotTerminated(): SessionRecord[];
  /** Every session of the project that has not begun ending (not Terminating or Terminated), oldest first; no limit. */
  listNotEndingOfProject(projectId: string): SessionRecord[];
  findById(sessionId: string): SessionRecord | undefined;
  /** Newest first; a project's list holds its customers' sessions only (no unclaimed warm instance). */
  list(filter: { projectId?: string; limit: number }): SessionRecord[];
  /** The project's unclaimed warm instances not yet Terminated (each holds a slot), newest first; few, so no limit. */
  listUnclaimedWarm(projectId: string): SessionRecord[];
  /** Sessions the control plane believes hold a slot on the worker. */
  listHoldingWorker(workerId: string): SessionRecord[];
  /** Writes the new state and its snapshot row in one transaction. */
  /** Saves the session; with a snapshot, also records it (not every status is a snapshot row). */
  update(s: SessionRecord, snapshot: SnapshotData | undefined): void;
}

/** A sessions row as SELECTED reads it (repositories that list sessions map it with toSession). */
export interface SessionRow {
  id: string;
  project_id: string;
  region: string;
  status: SessionStatus;
  assigned_worker: string | null;
  streaming_id: string | null;
  player_id: string | null;
  max_run_time: number | null;
  end_reason: string | null;
  placed_at: number | null;
  upload_id: string | null;
  pooled: number;
  claimed_at: number | null;
  created_at: number;
  updated_at: number;
  identified_at: number | null;
  browser: string | null;
  os: string | null;
  device_type: string | null;
  country: string | null;
  country_code: string | null;
  city: string | null;
}

const COLUMNS =
  'id, project_id, region, status, assigned_worker, streaming_id, player_id, max_run_time, end_reason, placed_at, created_at, updated_at, upload_id, pooled, claimed_at';
const CLIENT_COLUMNS = 'browser, os, device_type, country, country_code, city';
export const SELECTED = `${COLUMNS}, ${CLIENT_COLUMNS}, identified_at`;

const clientOf = (r: SessionRow): ClientDimensions | undefined => {
  const client: ClientDimensions = {
    ...(r.browser === null ? {} : { browser: r.browser }),
    ...(r.os === null ? {} : { os: r.os }),
    ...(r.device_type === null ? {} : { deviceType: r.device_type }),
    ...(r.country === null ? {} : { country: r.country }),
    ...(r.country_code === null ? {} : { countryCode: r.country_code }),
    ...(r.city === null ? {} : { city: r.city }),
  };
  return Object.keys(client).length === 0 ? undefined : client;
};

export const toSession = (r: SessionRow): SessionRecord => {
  const client = clientOf(r);
  return {
  sessionId: r.id,
  projectId: r.project_id,
  region: r.region,
  status: r.status,
  assignedWorker: r.assigned_worker ?? undefined,
  streamingId: r.streaming_id ?? undefined,
  playerId: r.player_id ?? undefined,
  maxRunTime: r.max_run_time ?? undefined,
  endReason: r.end_reason ?? undefined,
  ...(r.placed_at === null ? {} : { placedAt: r.placed_at }),
  ...(r.identified_at === null || r.identified_at === undefined ? {} : { identifiedAt: r.identified_at }),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  ...(r.upload_id === null ? {} : { uploadId: r.upload_id }),
  ...(r.pooled === 1 ? { pooled: true } : {}),
  ...(r.claimed_at === null ? {} : { claimedAt: r.claimed_at }),
  ...(client === undefined ? {} : { client }),
  };
};

const toParams = (s: SessionRecord) => ({
  id: s.sessionId,
  projectId: s.projectId,
  region: s.region,
  status: s.status,
  assignedWorker: s.assignedWorker ?? null,
  streamingId: s.streamingId ?? null,
  playerId: s.playerId ?? null,
  maxRunTime: s.maxRunTime ?? null,
  endReason: s.endReason ?? null,
  placedAt: s.placedAt ?? null,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
  uploadId: s.uploadId ?? null,
  pooled: s.pooled === true ? 1 : 0,
  claimedAt: s.claimedAt ?? null,
});

const clientParams = (client: ClientDimensions | undefined) => ({
  browser: client?.browser ?? null,
  os: client?.os ?? null,
  deviceType: client?.deviceType ?? null,
  country: client?.country ?? null,
  countryCode: client?.countryCode ?? null,
  city: client?.city ?? null,
});

export class SqliteSessionsRepository implements SessionsRepository {
  private readonly stmts;
  private readonly dimensions: SqliteSessionDimensionsRepository;
  private readonly daily: SqliteSessionDailyRepository;

  constructor(private readonly db: Db) {
    this.dimensions = new SqliteSessionDimensionsRepository(db);
    this.daily = new SqliteSessionDailyRepository(db);
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO sessions (${COLUMNS}, ${CLIENT_COLUMNS}, viewer_token_hash) VALUES (@id, @projectId, @region, @status, @assignedWorker, @streamingId,
           @playerId, @maxRunTime, @endReason, @placedAt, @createdAt, @updatedAt, @uploadId, @pooled, @claimedAt, @browser, @os, @deviceType, @country, @countryCode, @city, @viewerTokenHash)`,
      ),
      tokenHash: db.prepare('SELECT viewer_token_hash AS h FROM sessions WHERE id = ?'),
      byTokenHash: db.prepare('SELECT id FROM sessions WHERE viewer_token_hash = ?'),
      countLive: db.prepare(`SELECT COUNT(*) AS n FROM sessions WHERE project_id = ? AND status IN ('Starting', 'Running') AND pooled = 0`),
      // `status <> 'Terminated'` is spelled out so the partial index sessions_project_not_terminated applies.
      // Live sessions only, through the partial index of those not Terminated.
      slotHoldersOfRegion: db.prepare(
        `SELECT placed_at AS placedAt, claimed_at IS NOT NULL AS claimed, pooled FROM sessions INDEXED BY sessions_worker
         WHERE assigned_worker IS NOT NULL AND status <> 'Terminated' AND region = ? AND placed_at IS NOT NULL`,
      ),
      markIdentified: db.prepare('UPDATE sessions SET identified_at = ? WHERE id = ? AND identified_at IS NULL'),
      countNotTerminated: db.prepare(
        `SELECT project_id AS projectId, status, COUNT(*) AS n FROM sessions WHERE status <> 'Terminated' AND pooled = 0 GROUP BY project_id, status`,
      ),
      notTerminated: db.prepare(`SELECT ${SELECTED} FROM sessions WHERE status <> 'Terminated' ORDER BY created_at, id`),
      // `status <> 'Terminated'` is spelled out so the partial index sessions_project_not_terminated applies.
      notEndingOfProject: db.prepare(
        `SELECT ${SELECTED} FROM sessions WHERE project_id = ? AND status <> 'Terminated' AND status <> 'Terminating' ORDER BY created_at, id`,
      ),
      update: db.prepare(
        `UPDATE sessions SET status = @status, assigned_worker = @assignedWorker, streaming_id = @streamingId,
           player_id = @playerId, max_run_time = @maxRunTime, end_reason = @endReason, placed_at = @placedAt, updated_at = @updatedAt,
           upload_id = @uploadId WHERE id = @id`,
      ),
      snapshot: db.prepare('INSERT INTO session_snapshots (session_id, received_at, data) VALUES (?, ?, ?)'),
      byId: db.prepare(`SELECT ${SELECTED} FROM sessions WHERE id = ?`),
      listAll: db.prepare(`SELECT ${SELECTED} FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?`),
      // Through the partial index sessions_project_created: a project's sessions, not its warm instances.
      listProject: db.prepare(`SELECT ${SELECTED} FROM sessions WHERE project_id = ? AND pooled = 0 ORDER BY created_at DESC, id DESC LIMIT ?`),
      // Through the partial index sessions_project_not_terminated (`status <> 'Terminated'` spelled out for it).
      unclaimedWarm: db.prepare(`SELECT ${SELECTED} FROM sessions WHERE project_id = ? AND pooled = 1 AND status <> 'Terminated' ORDER BY created_at DESC, id DESC`),
      claim: db.prepare(
        `UPDATE sessions SET pooled = 0, claimed_at = @claimedAt, created_at = @createdAt, placed_at = @placedAt, updated_at = @updatedAt,
           viewer_token_hash = @viewerTokenHash, browser = @browser, os = @os, device_type = @deviceType, country = @country,
           country_code = @countryCode, city = @city
         WHERE id = @id AND pooled = 1 AND status IN ('Starting', 'Running')`,
      ),
      holding: db.prepare(
        `SELECT ${SELECTED} FROM sessions WHERE assigned_worker = ? AND status IN ('Starting', 'Running', 'Terminating')`,
      ),
    };
  }

  insert(s: SessionRecord, snapshot: SnapshotData | undefined, viewerTokenHash?: string): void {
    this.db.transaction(() => {
      this.stmts.insert.run({ ...toParams(s), ...clientParams(s.client), viewerTokenHash: viewerTokenHash ?? null });
      if (snapshot !== undefined) this.stmts.snapshot.run(s.sessionId, s.updatedAt, JSON.stringify(snapshot));
      // The day's rollups count a customer's session in the same transaction (session-dimensions.ts, session-daily.ts).
      if (s.pooled !== true) this.countCreated(s);
    })();
  }

  claim(claimed: SessionRecord, snapshots: readonly SnapshotData[], viewerTokenHash: string): boolean {
    return this.db.transaction(() => {
      const params = { id: claimed.sessionId, claimedAt: claimed.claimedAt ?? claimed.updatedAt, createdAt: claimed.createdAt, placedAt: claimed.placedAt ?? null, updatedAt: claimed.updatedAt };
      if (this.stmts.claim.run({ ...params, viewerTokenHash, ...clientParams(claimed.client) }).changes !== 1) return false;
      for (const snapshot of snapshots) this.stmts.snapshot.run(claimed.sessionId, claimed.updatedAt, JSON.stringify(snapshot));
      this.countCreated(claimed);
      return true;
    })();
  }

  viewerTokenHash(sessionId: string): string | undefined {
    return (this.stmts.tokenHash.get(sessionId) as { h: string | null } | undefined)?.h ?? undefined;
  }

  sessionIdOfViewerTokenHash(digest: string): string | undefined {
    return (this.stmts.byTokenHash.get(digest) as { id: string } | undefined)?.id;
  }

  slotHoldersOfRegion(region: string): { placedAt: number; claimed: boolean; pooled: boolean }[] {
    return (this.stmts.slotHoldersOfRegion.all(region) as { placedAt: number; claimed: number; pooled: number }[]).map((r) => ({ placedAt: r.placedAt, claimed: r.claimed === 1, pooled: r.pooled === 1 }));
  }

  markIdentified(sessionId: string, at: number): void {
    this.stmts.markIdentified.run(at, sessionId);
  }

  countNotTerminatedByProjectAndStatus(): { projectId: string; status: SessionStatus; n: number }[] {
    return this.stmts.countNotTerminated.all() as { projectId: string; status: SessionStatus; n: number }[];
  }

  countLive(projectId: string): number {
    return (this.stmts.countLive.get(projectId) as { n: number }).n;
  }

  listNotTerminated(): SessionRecord[] {
    return (this.stmts.notTerminated.all() as SessionRow[]).map(toSession);
  }

  listNotEndingOfProject(projectId: string): SessionRecord[] {
    return (this.stmts.notEndingOfProject.all(projectId) as SessionRow[]).map(toSession);
  }

  findById(sessionId: string): SessionRecord | undefined {
    const r = this.stmts.byId.get(sessionId) as SessionRow | undefined;
    return r && toSession(r);
  }

  list(filter: { projectId?: string; limit: number }): SessionRecord[] {
    const rows =
      filter.projectId === undefined
        ? this.stmts.listAll.all(filter.limit)
        : this.stmts.listProject.all(filter.projectId, filter.limit);
    return (rows as SessionRow[]).map(toSession);
  }

  listUnclaimedWarm(projectId: string): SessionRecord[] {
    return (this.stmts.unclaimedWarm.all(projectId) as SessionRow[]).map(toSession);
  }

  listHoldingWorker(workerId: string): SessionRecord[] {
    return (this.stmts.holding.all(workerId) as SessionRow[]).map(toSession);
  }

  private countCreated(s: SessionRecord): void {
    if (s.client !== undefined) this.dimensions.record(s.projectId, s.createdAt, s.client);
    this.daily.recordCreated(s.projectId, s.createdAt);
  }

  update(s: SessionRecord, snapshot: SnapshotData | undefined): void {
    this.db.transaction(() => {
      this.stmts.update.run(toParams(s));
      if (snapshot !== undefined) this.stmts.snapshot.run(s.sessionId, s.updatedAt, JSON.stringify(snapshot));
      // Its start-up (Starting → Running, as the list's snapshots time it) counted in its creation day.
      if (snapshot?.status === 'Running' && s.placedAt !== undefined) this.daily.recordStartup(s.projectId, s.createdAt, s.updatedAt - s.placedAt);
    })();
  }
}
