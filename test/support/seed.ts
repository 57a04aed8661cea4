// Test fixtures for state no public API creates in one step (a live build without a pipeline run,
// a project's settings or switch set directly, sessions in a given status), written through the
// control plane's repositories where they have the call, so that a column rename touches the
// repository and not the tests. The raw statements left below seed or read what no repository
// offers.
import { SqliteBuildsRepository, SqliteProjectsRepository, type BuildStatus, type ControlPlaneWithDb, type ProjectSettings } from '@pixelfleet/control-plane/test-support';

let counter = 0;

/** Inserts a session in the given status, assigned to a worker from Starting on (or ended on one). */
export function seedSession(cp: ControlPlaneWithDb, s: { projectId: string; status: 'Enqueued' | 'Starting' | 'Running' | 'Terminated'; workerId?: string }): string {
  counter += 1;
  const sessionId = `session_${Date.now()}_${counter}`;
  const now = Date.now();
  cp.db
    .prepare(
      `INSERT INTO sessions (id, project_id, region, status, assigned_worker, created_at, updated_at)
       VALUES (?, ?, 'europe', ?, ?, ?, ?)`,
    )
    .run(sessionId, s.projectId, s.status, s.workerId ?? null, now, now);
  return sessionId;
}

/**
 * Inserts `count` Terminated sessions of the project in one statement, each newer than every
 * session seeded before: history that costs milliseconds to make.
 */
export function seedEndedSessions(cp: ControlPlaneWithDb, projectId: string, count: number): void {
  counter += 1;
  const batch = counter;
  const after = Date.now() + 1_000;
  cp.db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO sessions (id, project_id, region, status, end_reason, created_at, updated_at)
       SELECT 'session_' || ? || '_' || i, ?, 'europe', 'Terminated', 'viewer left', ? + i, ? + i FROM n`,
    )
    .run(count, `${after}${batch}`, projectId, after, after);
}

/** A user and a project in europe, through the real account service. */
export function seedProject(cp: ControlPlaneWithDb): { userId: string; projectId: string } {
  counter += 1;
  const user = cp.accounts.createUser(`owner${counter}-${Date.now()}@example.com`);
  const project = cp.accounts.createProject(user.userId, `Project ${counter}`, 'europe');
  return { userId: user.userId, projectId: project.projectId };
}

export function sessionStatus(cp: ControlPlaneWithDb, sessionId: string): { status: string; endReason: string | null } {
  return cp.db.prepare('SELECT status, end_reason AS endReason FROM sessions WHERE id = ?').get(sessionId) as { status: string; endReason: string | null };
}

/** The statuses of a session's snapshot rows, oldest first. */
export function statusHistory(cp: ControlPlaneWithDb, sessionId: string): string[] {
  const rows = cp.db.prepare('SELECT data FROM session_snapshots WHERE session_id = ? ORDER BY id').all(sessionId) as { data: string }[];
  return rows.map((r) => (JSON.parse(r.data) as { status: string }).status);
}

/** Every status a session went through, oldest first, from the fleet event log (Terminating included). */
export function statusEvents(cp: ControlPlaneWithDb, sessionId: string): string[] {
  const rows = cp.db.prepare(`SELECT data FROM events WHERE type = 'session.status' AND session_id = ? ORDER BY id`).all(sessionId) as { data: string }[];
  return rows.map((r) => (JSON.parse(r.data) as { status: string }).status);
}

export function commandPhase(cp: ControlPlaneWithDb, commandId: string): string {
  return (cp.db.prepare('SELECT phase FROM worker_commands WHERE command_id = ?').get(commandId) as { phase: string }).phase;
}

/** The upload id seedLiveBuild gives unless told otherwise. */
export const SEEDED_LIVE_UPLOAD = 'upl_live';

/** An Approved build, made live for the project, with no archive (sessions launch launcher.command): the shape of a local build. */
export function seedLiveBuild(cp: ControlPlaneWithDb, projectId: string, uploadId = SEEDED_LIVE_UPLOAD): string {
  new SqliteBuildsRepository(cp.db).insert({ uploadId, projectId, fileUrl: undefined, status: 'Approved', objection: undefined, autoRelease: true, createdAt: 0, updatedAt: 0 });
  new SqliteProjectsRepository(cp.db).setLiveUpload(projectId, uploadId);
  return uploadId;
}

/** The project's settings as stored: the keys given, every other one at its default. */
export function setProjectSettings(cp: ControlPlaneWithDb, projectId: string, settings: Partial<ProjectSettings>): void {
  new SqliteProjectsRepository(cp.db).setSettings(projectId, settings);
}

/** The project's enabled switch, set behind the API's back (a disable that races a viewer). */
export function setProjectEnabled(cp: ControlPlaneWithDb, projectId: string, enabled: boolean): void {
  new SqliteProjectsRepository(cp.db).setEnabled(projectId, enabled);
}

/** The project's live build, set behind the API's back (`undefined`: none). */
export function setLiveUpload(cp: ControlPlaneWithDb, projectId: string, uploadId: string | undefined): void {
  new SqliteProjectsRepository(cp.db).setLiveUpload(projectId, uploadId);
}

/** The project's webhook URL (every event), set behind the API's back (its URL policy is the API's test). */
export function setProjectWebhook(cp: ControlPlaneWithDb, projectId: string, url: string): void {
  new SqliteProjectsRepository(cp.db).setWebhook(projectId, { url, events: undefined });
}

/** A build row as a submission leaves it, in any status (a restart's leftovers, a listing). */
export function seedBuild(cp: ControlPlaneWithDb, b: { uploadId: string; projectId: string; status: BuildStatus; fileUrl?: string; autoRelease?: boolean; createdAt?: number }): void {
  const at = b.createdAt ?? 1;
  new SqliteBuildsRepository(cp.db).insert({ uploadId: b.uploadId, projectId: b.projectId, fileUrl: b.fileUrl, status: b.status, objection: undefined, autoRelease: b.autoRelease ?? false, createdAt: at, updatedAt: at });
}

/** Moves a build to a status without its stages (what a run of the pipeline would have left). */
export function setBuildStatus(cp: ControlPlaneWithDb, uploadId: string, status: BuildStatus): void {
  const builds = new SqliteBuildsRepository(cp.db);
  const current = builds.findById(uploadId);
  if (current === undefined || !builds.moveStatus(uploadId, current.status, status, undefined, Date.now())) throw new Error(`cannot move build ${uploadId} to ${status}`);
}

/** The archive's digest and size as the download stage records them. */
export function recordBuildArchive(cp: ControlPlaneWithDb, uploadId: string, archive: { sha256: string; bytes: number }): void {
  new SqliteBuildsRepository(cp.db).recordArchive(uploadId, archive);
}
