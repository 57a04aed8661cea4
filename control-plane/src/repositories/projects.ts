// Projects and their team members.
import type { Db } from '../db/database';
import type { RegionCode } from '@pixelfleet/proto';
import { resolveProjectSettings, type ProjectSettings } from '../projects/project-settings';

export type MemberAccess = 'FULL' | 'READONLY';

export interface Project {
  projectId: string;
  ownerUserId: string;
  name: string;
  region: RegionCode;
  enabled: boolean;
  subscriptionStatus: string;
  liveUploadId: string | undefined;
  settings: ProjectSettings;
  createdAt: number;
}

/** A member of a project's team, as its owner sees them. */
export interface ProjectMember {
  userId: string;
  email: string;
  access: MemberAccess;
  addedAt: number;
  /** Whether they have set a dashboard password (false: their invitation is still open). */
  joined: boolean;
}

export interface ProjectsRepository {
  insert(project: Project): void;
  findById(projectId: string): Project | undefined;
  listByOwner(ownerUserId: string): Project[];
  /** The projects the user owns or is a member of, with their access (`owner` for their own), by name. */
  listAccessible(userId: string): { project: Project; access: 'owner' | MemberAccess }[];
  setSubscriptionStatus(projectId: string, status: string): void;
  setEnabled(projectId: string, enabled: boolean): void;
  setLiveUpload(projectId: string, uploadId: string | undefined): void;
  /** The live upload ids of the region's projects (enabled or not: a worker keeps them ready). */
  liveUploadsInRegion(region: string): string[];
  /** The projects whose settings ask for warm instances (warmPoolMinIdle > 0), enabled or not. */
  listWithWarmPools(): string[];
  /** Stores the settings that differ from the defaults, as JSON. */
  setSettings(projectId: string, settings: Partial<ProjectSettings>): void;
  /** Adds the member or changes their access level. */
  upsertMember(projectId: string, userId: string, access: MemberAccess, nowMs: number): void;
  /** Returns false when the user was not a member. */
  removeMember(projectId: string, userId: string): boolean;
  memberAccess(projectId: string, userId: string): MemberAccess | undefined;
  /** The project's members (not its owner), by e-mail address; `joined`: they have set a password. */
  listMembers(projectId: string): ProjectMember[];
  setName(projectId: string, name: string): void;
  /** The project's webhook receiver and event filter (undefined events = every event). */
  webhook(projectId: string): ProjectWebhook;
  setWebhook(projectId: string, webhook: ProjectWebhook): void;
}

export interface ProjectWebhook {
  url: string | undefined;
  /** Event names delivered; undefined means every event. */
  events: string[] | undefined;
}

interface ProjectRow {
  id: string;
  owner_user_id: string;
  name: string;
  region: RegionCode;
  enabled: number;
  subscription_status: string;
  live_upload_id: string | null;
  settings: string;
  created_at: number;
}

const COLUMNS = 'id, owner_user_id, name, region, enabled, subscription_status, live_upload_id, settings, created_at';

const toProject = (r: ProjectRow): Project => ({
  projectId: r.id,
  ownerUserId: r.owner_user_id,
  name: r.name,
  region: r.region,
  enabled: r.enabled === 1,
  subscriptionStatus: r.subscription_status,
  liveUploadId: r.live_upload_id ?? undefined,
  settings: resolveProjectSettings(r.settings),
  createdAt: r.created_at,
});

export class SqliteProjectsRepository implements ProjectsRepository {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO projects (id, owner_user_id, name, region, enabled, subscription_status, created_at)
         VALUES (@projectId, @ownerUserId, @name, @region, @enabled, @subscriptionStatus, @createdAt)`,
      ),
      byId: db.prepare(`SELECT ${COLUMNS} FROM projects WHERE id = ?`),
      byOwner: db.prepare(`SELECT ${COLUMNS} FROM projects WHERE owner_user_id = ? ORDER BY created_at, id`),
      // Both halves read an index (projects' owner, project_members_user).
      accessible: db.prepare(
        `SELECT ${COLUMNS}, 'owner' AS access FROM projects WHERE owner_user_id = ?
         UNION ALL
         SELECT ${COLUMNS.split(', ').map((c) => `p.${c}`).join(', ')}, m.access FROM project_members m JOIN projects p ON p.id = m.project_id WHERE m.user_id = ? AND p.owner_user_id <> m.user_id
         ORDER BY name COLLATE NOCASE, id`,
      ),
      setSubscription: db.prepare('UPDATE projects SET subscription_status = ? WHERE id = ?'),
      setEnabled: db.prepare('UPDATE projects SET enabled = ? WHERE id = ?'),
      setLive: db.prepare('UPDATE projects SET live_upload_id = ? WHERE id = ?'),
      liveInRegion: db.prepare('SELECT live_upload_id FROM projects WHERE region = ? AND live_upload_id IS NOT NULL ORDER BY id'),
      setSettings: db.prepare('UPDATE projects SET settings = ? WHERE id = ?'),
      // A scan of the projects table, made when settings change and every WARM_POOL_REFRESH_MS (warm-pool.ts), not per scheduling run.
      withWarmPools: db.prepare("SELECT id FROM projects WHERE json_extract(settings, '$.warmPoolMinIdle') > 0 ORDER BY id"),
      upsertMember: db.prepare(
        `INSERT INTO project_members (project_id, user_id, access, created_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (project_id, user_id) DO UPDATE SET access = excluded.access`,
      ),
      removeMember: db.prepare('DELETE FROM project_members WHERE project_id = ? AND user_id = ?'),
      memberAccess: db.prepare('SELECT access FROM project_members WHERE project_id = ? AND user_id = ?'),
      listMembers: db.prepare(
        `SELECT m.user_id AS userId, u.email AS email, m.access AS access, m.created_at AS addedAt, (u.password_hash IS NOT NULL) AS joined
         FROM project_members m JOIN users u ON u.id = m.user_id WHERE m.project_id = ? ORDER BY u.email COLLATE NOCASE`,
      ),
      setName: db.prepare('UPDATE projects SET name = ? WHERE id = ?'),
      webhook: db.prepare('SELECT webhook_url, webhook_events FROM projects WHERE id = ?'),
      setWebhook: db.prepare('UPDATE projects SET webhook_url = ?, webhook_events = ? WHERE id = ?'),
    };
  }

  insert(p: Project): void {
    const { settings: _settings, ...row } = p;
    this.stmts.insert.run({ ...row, enabled: p.enabled ? 1 : 0 });
  }

  findById(projectId: string): Project | undefined {
    const r = this.stmts.byId.get(projectId) as ProjectRow | undefined;
    return r && toProject(r);
  }

  listByOwner(ownerUserId: string): Project[] {
    return (this.stmts.byOwner.all(ownerUserId) as ProjectRow[]).map(toProject);
  }

  listAccessible(userId: string): { project: Project; access: 'owner' | MemberAccess }[] {
    return (this.stmts.accessible.all(userId, userId) as (ProjectRow & { access: 'owner' | MemberAccess })[]).map((r) => ({ project: toProject(r), access: r.access }));
  }

  setSubscriptionStatus(projectId: string, status: string): void {
    this.stmts.setSubscription.run(status, projectId);
  }

  setEnabled(projectId: string, enabled: boolean): void {
    this.stmts.setEnabled.run(enabled ? 1 : 0, projectId);
  }

  setLiveUpload(projectId: string, uploadId: string | undefined): void {
    this.stmts.setLive.run(uploadId ?? null, projectId);
  }

  liveUploadsInRegion(region: string): string[] {
    return (this.stmts.liveInRegion.all(region) as { live_upload_id: string }[]).map((r) => r.live_upload_id);
  }

  listWithWarmPools(): string[] {
    return (this.stmts.withWarmPools.all() as { id: string }[]).map((r) => r.id);
  }

  setSettings(projectId: string, settings: Partial<ProjectSettings>): void {
    this.stmts.setSettings.run(JSON.stringify(settings), projectId);
  }

  upsertMember(projectId: string, userId: string, access: MemberAccess, nowMs: number): void {
    this.stmts.upsertMember.run(projectId, userId, access, nowMs);
  }

  removeMember(projectId: string, userId: string): boolean {
    return this.stmts.removeMember.run(projectId, userId).changes > 0;
  }

  memberAccess(projectId: string, userId: string): MemberAccess | undefined {
    const r = this.stmts.memberAccess.get(projectId, userId) as { access: MemberAccess } | undefined;
    return r?.access;
  }

  listMembers(projectId: string): ProjectMember[] {
    return (this.stmts.listMembers.all(projectId) as (Omit<ProjectMember, 'joined'> & { joined: number })[]).map((m) => ({ ...m, joined: m.joined === 1 }));
  }

  setName(projectId: string, name: string): void {
    this.stmts.setName.run(name, projectId);
  }

  webhook(projectId: string): ProjectWebhook {
    const r = this.stmts.webhook.get(projectId) as { webhook_url: string | null; webhook_events: string | null } | undefined;
    const events = r?.webhook_events == null ? undefined : (JSON.parse(r.webhook_events) as string[]);
    return { url: r?.webhook_url ?? undefined, events };
  }

  setWebhook(projectId: string, webhook: ProjectWebhook): void {
    this.stmts.setWebhook.run(webhook.url ?? null, webhook.events === undefined ? null : JSON.stringify(webhook.events), projectId);
  }
}
