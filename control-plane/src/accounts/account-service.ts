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

  createUser(email: string): User {
    const trimmed = email.trim();
    if (!EMAIL.test(trimmed) || trimmed.length > 254) throw invalid(`email "${email}" is not a valid e-mail address`);
    if (this.users.findByEmail(trimmed)) throw conflict(`a user with email ${trimmed} already exists`);
    const user: User = { userId: this.ids.next('usr'), email: trimmed, createdAt: this.clock.now() };
    this.users.insert(user);
    this.events.record('user.created', {}, { userId: user.userId });
    return user;
  }

  /** Issues a new key, revoking the previous one in the same transaction. Returns the key once. */
  issueKey(userId: string): string {
    this.requireUser(userId);
    const apiKey = generateSecret('pfk');
    this.users.replaceKey(userId, sha256Hex(apiKey), this.clock.now());
    this.events.record('key.issued', {}, { userId });
    return apiKey;
  }

  createProject(ownerUserId: string, name: string, region: string): Project {
    this.requireUser(ownerUserId);
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

  addMember(projectId: string, userId: string, access: MemberAccess): void {
    const project = this.requireProject(projectId);
    this.requireUser(userId);
    if (project.ownerUserId === userId) throw invalid('the owner already has full access to every project of the account');
    this.projects.upsertMember(projectId, userId, access, this.clock.now());
    this.events.record('member.added', { projectId }, { userId, access });
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

  private requireUser(userId: string): User {
    const u = this.users.findById(userId);
    if (!u) throw notFound(`user ${userId} not found`);
    return u;
  }
}
