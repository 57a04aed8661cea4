// Test fixtures for state no public API creates in one step (a live build without a pipeline run,
// a project's settings or switch set directly, sessions in a given status), and the stored facts
// tests read back, all through the control plane's repositories, so that a column rename touches
// the repository and not the tests. The two reads at the end keep their SQL: no repository offers them.
import Database from 'better-sqlite3';
import { regionDisplayName } from '@pixelfleet/proto';
import {
  SqliteBuildCopiesRepository,
  SqliteBuildsRepository,
  SqliteEventsRepository,
  SqliteLogFilesRepository,
  SqliteProjectsRepository,
  SqliteSessionHistoryRepository,
  SqliteSessionsRepository,
  SqliteTelemetryRepository,
  SqliteWebhookDeliveriesRepository,
  SqliteWorkersRepository,
  type BuildCopy,
  type BuildRecord,
  type BuildStatus,
  type ClientDimensions,
  type CommandPhase,
  type ControlPlaneWithDb,
  type Db,
  type FleetEvent,
  type LogFileRecord,
  type ProjectSettings,
  type SessionRecord,
  type SnapshotData,
  type StoredTelemetryRow,
  type WebhookDelivery,
  type WorkerCommandRecord,
} from '@pixelfleet/control-plane/test-support';

/** The control plane's repositories over one database. */
export interface Repositories {
  builds: SqliteBuildsRepository;
  buildCopies: SqliteBuildCopiesRepository;
  events: SqliteEventsRepository;
  logFiles: SqliteLogFilesRepository;
  projects: SqliteProjectsRepository;
  sessions: SqliteSessionsRepository;
  sessionHistory: SqliteSessionHistoryRepository;
  telemetry: SqliteTelemetryRepository;
  webhookDeliveries: SqliteWebhookDeliveriesRepository;
  workers: SqliteWorkersRepository;
}

// Made once per database: each repository prepares its statements when built, and a poll may read
// hundreds of times. Keyed by the handle, so a restarted control plane (a new handle) gets its own.
const repositoriesByDb = new WeakMap<Db, Repositories>();

/** The repositories over the control plane's database (for seed modules; tests use the helpers below). */
export function repositoriesOf(cp: ControlPlaneWithDb): Repositories {
  let repos = repositoriesByDb.get(cp.db);
  if (repos === undefined) {
    repos = {
      builds: new SqliteBuildsRepository(cp.db),
      buildCopies: new SqliteBuildCopiesRepository(cp.db),
      events: new SqliteEventsRepository(cp.db),
      logFiles: new SqliteLogFilesRepository(cp.db),
      projects: new SqliteProjectsRepository(cp.db),
      sessions: new SqliteSessionsRepository(cp.db),
      sessionHistory: new SqliteSessionHistoryRepository(cp.db),
      telemetry: new SqliteTelemetryRepository(cp.db),
      webhookDeliveries: new SqliteWebhookDeliveriesRepository(cp.db),
      workers: new SqliteWorkersRepository(cp.db),
    };
    repositoriesByDb.set(cp.db, repos);
  }
  return repos;
}

let counter = 0;

type SeededStatus = 'Enqueued' | 'Starting' | 'Running' | 'Terminated';

/** A session row in europe and the snapshot the sessions repository records with it. */
function europeSession(s: { sessionId: string; projectId: string; status: SeededStatus; workerId?: string; endReason?: string; at: number; client?: ClientDimensions }): {
  session: SessionRecord;
  snapshot: SnapshotData;
} {
  const session: SessionRecord = {
    sessionId: s.sessionId,
    projectId: s.projectId,
    region: 'europe',
    status: s.status,
    assignedWorker: s.workerId,
    streamingId: undefined,
    playerId: undefined,
    maxRunTime: undefined,
    endReason: s.endReason,
    createdAt: s.at,
    updatedAt: s.at,
    ...(s.client === undefined ? {} : { client: s.client }),
  };
  const snapshot: SnapshotData = {
    sessionId: s.sessionId,
    projectId: s.projectId,
    status: s.status,
    region: regionDisplayName('europe'),
    ...(s.workerId === undefined ? {} : { assignedWorker: s.workerId }),
  };
  return { session, snapshot };
}

/**
 * Inserts a session in the given status, assigned to a worker from Starting on (or ended on one),
 * with its one snapshot row (in that status: the statuses before it were never recorded).
 */
export function seedSession(cp: ControlPlaneWithDb, s: { projectId: string; status: SeededStatus; workerId?: string; client?: ClientDimensions }): string {
  counter += 1;
  const sessionId = `session_${Date.now()}_${counter}`;
  const { session, snapshot } = europeSession({ sessionId, projectId: s.projectId, status: s.status, workerId: s.workerId, at: Date.now(), ...(s.client === undefined ? {} : { client: s.client }) });
  repositoriesOf(cp).sessions.insert(session, snapshot);
  return sessionId;
}

/**
 * Inserts `count` Terminated sessions of the project in one transaction, each newer than every
 * session seeded before (each a repository insert with its snapshot: ten thousand take a second or two).
 */
export function seedEndedSessions(cp: ControlPlaneWithDb, projectId: string, count: number): void {
  counter += 1;
  const after = Date.now() + 1_000;
  const batch = `${after}${counter}`;
  const { sessions } = repositoriesOf(cp);
  cp.db.transaction(() => {
    for (let i = 1; i <= count; i += 1) {
      const { session, snapshot } = europeSession({ sessionId: `session_${batch}_${i}`, projectId, status: 'Terminated', endReason: 'viewer left', at: after + i });
      sessions.insert(session, snapshot);
    }
  })();
}

/** A user and a project in europe, through the real account service. */
export async function seedProject(cp: ControlPlaneWithDb): Promise<{ userId: string; projectId: string }> {
  counter += 1;
  const user = await cp.accounts.createUser(`owner${counter}-${Date.now()}@example.com`);
  const project = await cp.accounts.createProject(user.userId, `Project ${counter}`, 'europe');
  return { userId: user.userId, projectId: project.projectId };
}

/** The stored session (undefined: no such row, e.g. after retention deleted it). */
export function sessionRecord(cp: ControlPlaneWithDb, sessionId: string): SessionRecord | undefined {
  return repositoriesOf(cp).sessions.findById(sessionId);
}

/** The stored session's status and end reason (`null`: none); throws for an unknown session. */
export function sessionStatus(cp: ControlPlaneWithDb, sessionId: string): { status: string; endReason: string | null } {
  const session = sessionRecord(cp, sessionId);
  if (session === undefined) throw new Error(`no session ${sessionId} is stored`);
  return { status: session.status, endReason: session.endReason ?? null };
}

/** How many sessions are stored, of every project and status. */
export function storedSessionCount(cp: ControlPlaneWithDb): number {
  return repositoriesOf(cp).sessions.list({ limit: Number.MAX_SAFE_INTEGER }).length;
}

/** The project's sessions in Starting or Running, counted in the table. */
export function liveSessionCount(cp: ControlPlaneWithDb, projectId: string): number {
  return repositoriesOf(cp).sessions.countLive(projectId);
}

/** The `data` of a session's snapshot rows, oldest first. */
export function snapshotData(cp: ControlPlaneWithDb, sessionId: string): SnapshotData[] {
  return repositoriesOf(cp).sessionHistory.snapshots(sessionId).map((s) => s.data);
}

/** The statuses of a session's snapshot rows, oldest first. */
export function statusHistory(cp: ControlPlaneWithDb, sessionId: string): string[] {
  return snapshotData(cp, sessionId).map((d) => d.status);
}

/** Events read per query when the whole log is read (a test may hold hundreds of thousands). */
const EVENT_PAGE = 10_000;

/** The fleet event log, oldest first; only the events that match every field given. */
export function fleetEvents(cp: ControlPlaneWithDb, match: Partial<Pick<FleetEvent, 'type' | 'workerId' | 'sessionId' | 'projectId'>> = {}): FleetEvent[] {
  const { events } = repositoriesOf(cp);
  const all: FleetEvent[] = [];
  for (let page = events.listAfter(0, EVENT_PAGE); page.length > 0; page = events.listAfter(page.at(-1)!.eventId, EVENT_PAGE)) all.push(...page);
  return all.filter((e) => (Object.keys(match) as (keyof typeof match)[]).every((k) => e[k] === match[k]));
}

/** The id of the newest fleet event (0: none yet). */
export function lastEventId(cp: ControlPlaneWithDb): number {
  return repositoriesOf(cp).events.lastId();
}

/** Every status a session went through, oldest first, from the fleet event log (Terminating included). */
export function statusEvents(cp: ControlPlaneWithDb, sessionId: string): string[] {
  return fleetEvents(cp, { type: 'session.status', sessionId }).map((e) => (e.data as { status: string }).status);
}

/** A command's phase; throws for an unknown command. */
export function commandPhase(cp: ControlPlaneWithDb, commandId: string): CommandPhase {
  const command = repositoriesOf(cp).workers.findCommand(commandId);
  if (command === undefined) throw new Error(`no command ${commandId} is stored`);
  return command.phase;
}

/**
 * Stores a command for the worker under its next seq, with the payload exactly as given: rows the
 * registry would not write (a previous version's form, or one that no longer decodes).
 */
export function seedWorkerCommand(cp: ControlPlaneWithDb, c: { workerId: string; commandId: string; kind: string; payload: string }): WorkerCommandRecord {
  return repositoriesOf(cp).workers.enqueueCommand({ ...c, notAfter: undefined, nowMs: 0 });
}

/** The project's access of a member (undefined: not a member). */
export function memberAccess(cp: ControlPlaneWithDb, projectId: string, userId: string): string | undefined {
  return repositoriesOf(cp).projects.memberAccess(projectId, userId);
}

/** The project's live build (undefined: none). */
export function liveUploadOf(cp: ControlPlaneWithDb, projectId: string): string | undefined {
  const project = repositoriesOf(cp).projects.findById(projectId);
  if (project === undefined) throw new Error(`no project ${projectId} is stored`);
  return project.liveUploadId;
}

/** The upload id seedLiveBuild gives unless told otherwise. */
export const SEEDED_LIVE_UPLOAD = 'upl_live';

/** An Approved build, made live for the project, with no archive (sessions launch launcher.command): the shape of a local build. */
export function seedLiveBuild(cp: ControlPlaneWithDb, projectId: string, uploadId = SEEDED_LIVE_UPLOAD): string {
  const { builds, projects } = repositoriesOf(cp);
  builds.insert({ uploadId, projectId, fileUrl: undefined, status: 'Approved', objection: undefined, autoRelease: true, createdAt: 0, updatedAt: 0 });
  projects.setLiveUpload(projectId, uploadId);
  return uploadId;
}

/** The project's settings as stored: the keys given, every other one at its default. */
export function setProjectSettings(cp: ControlPlaneWithDb, projectId: string, settings: Partial<ProjectSettings>): void {
  repositoriesOf(cp).projects.setSettings(projectId, settings);
}

/** The project's enabled switch, set behind the API's back (a disable that races a viewer). */
export function setProjectEnabled(cp: ControlPlaneWithDb, projectId: string, enabled: boolean): void {
  repositoriesOf(cp).projects.setEnabled(projectId, enabled);
}

/** The project's live build, set behind the API's back (`undefined`: none). */
export function setLiveUpload(cp: ControlPlaneWithDb, projectId: string, uploadId: string | undefined): void {
  repositoriesOf(cp).projects.setLiveUpload(projectId, uploadId);
}

/** The project's webhook URL (every event), set behind the API's back (its URL policy is the API's test). */
export function setProjectWebhook(cp: ControlPlaneWithDb, projectId: string, url: string): void {
  repositoriesOf(cp).projects.setWebhook(projectId, { url, events: undefined });
}

/** The project's webhook deliveries, newest first. */
export function webhookDeliveries(cp: ControlPlaneWithDb, projectId: string): WebhookDelivery[] {
  return repositoriesOf(cp).webhookDeliveries.listByProject(projectId, Number.MAX_SAFE_INTEGER);
}

/** A build row as a submission leaves it, in any status (a restart's leftovers, a listing). */
export function seedBuild(cp: ControlPlaneWithDb, b: { uploadId: string; projectId: string; status: BuildStatus; fileUrl?: string; autoRelease?: boolean; createdAt?: number }): void {
  const at = b.createdAt ?? 1;
  repositoriesOf(cp).builds.insert({ uploadId: b.uploadId, projectId: b.projectId, fileUrl: b.fileUrl, status: b.status, objection: undefined, autoRelease: b.autoRelease ?? false, createdAt: at, updatedAt: at });
}

/** Moves a build to a status without its stages (what a run of the pipeline would have left). */
export function setBuildStatus(cp: ControlPlaneWithDb, uploadId: string, status: BuildStatus): void {
  const { builds } = repositoriesOf(cp);
  const current = builds.findById(uploadId);
  if (current === undefined || !builds.moveStatus(uploadId, current.status, status, undefined, Date.now())) throw new Error(`cannot move build ${uploadId} to ${status}`);
}

/** The archive's digest and size as the download stage records them. */
export function recordBuildArchive(cp: ControlPlaneWithDb, uploadId: string, archive: { sha256: string; bytes: number }): void {
  repositoriesOf(cp).builds.recordArchive(uploadId, archive);
}

/** The stored build (status, objection, live, manifest, archive); throws for an unknown build. */
export function buildRecord(cp: ControlPlaneWithDb, uploadId: string): BuildRecord {
  const build = repositoriesOf(cp).builds.findById(uploadId);
  if (build === undefined) throw new Error(`no build ${uploadId} is stored`);
  return build;
}

/** The project's builds, newest first. */
export function buildsOfProject(cp: ControlPlaneWithDb, projectId: string): BuildRecord[] {
  return repositoriesOf(cp).builds.listByProject(projectId);
}

/** The build's copies on workers, by worker id. */
export function buildCopies(cp: ControlPlaneWithDb, uploadId: string): BuildCopy[] {
  return repositoriesOf(cp).buildCopies.listOfBuild(uploadId);
}

/** The session's stored log files, oldest upload first. */
export function logFilesOf(cp: ControlPlaneWithDb, sessionId: string): LogFileRecord[] {
  return repositoriesOf(cp).logFiles.listBySession(sessionId);
}

/**
 * The session's stored log files, oldest upload first, read from the database file of a control
 * plane running in another process (a second, read-only connection: WAL lets it read beside the writer).
 */
export function logFilesInDatabaseFile(databasePath: string, sessionId: string): LogFileRecord[] {
  const db = new Database(databasePath, { readonly: true, fileMustExist: true });
  try {
    return new SqliteLogFilesRepository(db).listBySession(sessionId);
  } finally {
    db.close();
  }
}

/** One stored log file (undefined: none with that id). */
export function logFile(cp: ControlPlaneWithDb, logFileId: string): LogFileRecord | undefined {
  return repositoriesOf(cp).logFiles.findById(logFileId);
}

/** The session's stored telemetry rows, in the order they were stored. */
export function telemetryRows(cp: ControlPlaneWithDb, sessionId: string): StoredTelemetryRow[] {
  return repositoriesOf(cp).telemetry.listBySession(sessionId);
}

/** A stored command with its outcome, as the worker_commands table holds it. */
export interface StoredCommand extends WorkerCommandRecord {
  errorCode: string | null;
  errorMessage: string | null;
}

/**
 * Every command ever queued for the worker (of one kind, when given), in seq order, settled ones and
 * their error included. Raw SQL: the workers repository reads back only unfinished commands (the
 * ones resent on a Hello) or one command by id, and never a command's error.
 */
export function workerCommands(cp: ControlPlaneWithDb, workerId: string, kind?: string): StoredCommand[] {
  const rows = cp.db
    .prepare(
      `SELECT worker_id, seq, command_id, kind, payload, phase, not_after, error_code, error_message FROM worker_commands
       WHERE worker_id = ? AND (? IS NULL OR kind = ?) ORDER BY seq`,
    )
    .all(workerId, kind ?? null, kind ?? null) as {
    worker_id: string;
    seq: number;
    command_id: string;
    kind: string;
    payload: string;
    phase: CommandPhase;
    not_after: number | null;
    error_code: string | null;
    error_message: string | null;
  }[];
  return rows.map((r) => ({
    workerId: r.worker_id,
    seq: r.seq,
    commandId: r.command_id,
    kind: r.kind,
    payload: r.payload,
    phase: r.phase,
    notAfter: r.not_after ?? undefined,
    errorCode: r.error_code,
    errorMessage: r.error_message,
  }));
}

/**
 * The user's API key rows, oldest first: the stored digest and when it was revoked (`null`: live).
 * Raw SQL: the users repository reads only the live key, and the revoked rows (kept, not deleted)
 * are the fact a key rotation test checks.
 */
export function apiKeyRows(cp: ControlPlaneWithDb, userId: string): { keyHash: string; revokedAt: number | null }[] {
  return cp.db.prepare('SELECT key_hash AS keyHash, revoked_at AS revokedAt FROM api_keys WHERE user_id = ? ORDER BY id').all(userId) as {
    keyHash: string;
    revokedAt: number | null;
  }[];
}
