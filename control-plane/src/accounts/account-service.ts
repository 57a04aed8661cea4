// Users, API keys, projects and members as operators manage them (admin CLI). The REST API's
// auth reads the same rows.
import type { Clock } from '@pixelfleet/common';
import type { IdSource } from '../lib/ids';
import { generateSecret, sha256Hex } from '../lib/secrets';
import { conflict, invalid, notFound } from '../errors';
import { isRegionCode, REGION_CODES } from '@pixelfleet/proto';
import type { User, UsersRepository } from '../repositories/users';
import type { MemberAccess, Project, ProjectsRepository } from '../repositories/projects';
import type { EventLog } from '../events/event-log';
import { DEFAULT_PROJECT_SETTINGS } from '../projects/project-settings';
import { SUBSCRIPTION_STATUSES } from '../auth/project-access';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export class AccountService {
  constructor(
    private readonly users: UsersRepository,
    private readonly projects: ProjectsRepository,
    private readonly events: EventLog,
    private readonly clock: Clock,
    private readonly ids: IdSource,
  ) {}

  async createUser(email: string): Promise<User> {
    const trimmed = email.trim();
    if (!EMAIL.test(trimmed) || trimmed.length > 254) throw invalid(`email "${email}" is not a valid e-mail address`);
    const taken = () => conflict(`a user with email ${trimmed} already exists`);
    if (await this.users.findByEmail(trimmed)) throw taken();
    const user: User = { userId: this.ids.next('usr'), email: trimmed, createdAt: this.clock.now() };
    try {
      await this.users.insert(user);
    } catch (err) {
      // Another request took the address between the read and this insert: the table's UNIQUE
      // email (case-insensitive) refused it, which is the same conflict (across control planes too).
      if ((await this.users.findByEmail(trimmed)) !== undefined) throw taken();
      throw err;
    }
    this.events.record('user.created', {}, { userId: user.userId });
    return user;
  }

  /**
   * Issues a new key, revoking the previous one in the same transaction (two issued at once: the
   * last one written is the live one, and the table keeps at most one live key per user). Returns the key once.
   */
  async issueKey(userId: string): Promise<string> {
    await this.requireUser(userId);
    const apiKey = generateSecret('pfk');
    await this.users.replaceKey(userId, sha256Hex(apiKey), this.clock.now());
    this.events.record('key.issued', {}, { userId });
    return apiKey;
  }

  async createProject(ownerUserId: string, name: string, region: string): Promise<Project> {
    await this.requireUser(ownerUserId);
    const trimmed = name.trim();
    if (trimmed.length === 0 || trimmed.length > 200) throw invalid('name must be 1 to 200 characters');
    if (!isRegionCode(region)) throw invalid(`region "${region}" is not one of ${REGION_CODES.join(', ')}`);
    const project: Project = {
      projectId: this.ids.next('prj'),
      ownerUserId,
      name: trimmed,
      region,
      enabled: true,
      subscriptionStatus: 'active',
      liveUploadId: undefined,
      settings: { ...DEFAULT_PROJECT_SETTINGS, launchArgs: [], embedOrigins: [] },
      createdAt: this.clock.now(),
    };
    this.projects.insert(project);
    this.events.record('project.created', { projectId: project.projectId }, { ownerUserId, region });
    return project;
  }

  async addMember(projectId: string, userId: string, access: MemberAccess): Promise<void> {
    const project = this.requireProject(projectId);
    await this.requireUser(userId);
    if (project.ownerUserId === userId) throw invalid('the owner already has full access to every project of the account');
    this.projects.upsertMember(projectId, userId, access, this.clock.now());
    this.events.record('member.added', { projectId }, { userId, access });
  }

  /**
   * Changes the access of someone who is a member already (the dashboard's team page); false, and
   * nothing changed, when they are not. The check and the write run without a turn of the event
   * loop between them: a removal cannot come in between and be undone.
   */
  changeMemberAccess(projectId: string, userId: string, access: MemberAccess): boolean {
    this.requireProject(projectId);
    if (!this.projects.listMembers(projectId).some((m) => m.userId === userId)) return false;
    this.projects.upsertMember(projectId, userId, access, this.clock.now());
    this.events.record('member.added', { projectId }, { userId, access });
    return true;
  }

  /** Idempotent: returns false when the user was not a member. */
  removeMember(projectId: string, userId: string): boolean {
    this.requireProject(projectId);
    const removed = this.projects.removeMember(projectId, userId);
    if (removed) this.events.record('member.removed', { projectId }, { userId });
    return removed;
  }

  setSubscriptionStatus(projectId: string, status: string): void {
    this.requireProject(projectId);
    if (!SUBSCRIPTION_STATUSES.includes(status)) throw invalid(`status "${status}" must be one of ${SUBSCRIPTION_STATUSES.join(', ')}`);
    this.projects.setSubscriptionStatus(projectId, status);
    this.events.record('project.subscription', { projectId }, { status });
  }

  requireProject(projectId: string): Project {
    const p = this.projects.findById(projectId);
    if (!p) throw notFound(`project ${projectId} not found`);
    return p;
  }

  private async requireUser(userId: string): Promise<User> {
    const u = await this.users.findById(userId);
    if (!u) throw notFound(`user ${userId} not found`);
    return u;
  }
}
