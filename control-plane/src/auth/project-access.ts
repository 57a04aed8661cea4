// Who may do what on a project: the account owner everything, FULL members their listed
// projects, READONLY members reads only; writes also need an `active` subscription. Read from
// the database (or the access facts, dropped on every write to their tables) on every request,
// so a removed member or a new status takes effect at once.
import { ApiError } from '../errors';
import type { ProjectAccessFacts } from '../repositories/access-facts';
import type { MemberAccess, Project, ProjectsRepository } from '../repositories/projects';

/** The subscription status that allows writes; anything else blocks them. */
export const ACTIVE_SUBSCRIPTION = 'active';

/** Every subscription status an operator may set (AdminService and `pixelfleet admin project subscription`). */
export const SUBSCRIPTION_STATUSES: readonly string[] = [ACTIVE_SUBSCRIPTION, 'past_due', 'canceled', 'expired', 'suspended'];

export class ProjectAccess {
  constructor(private readonly projects: ProjectsRepository) {}

  /**
   * The project if `userId` may write to it: 404 Project not found, then 403 `Forbidden` without
   * access, then 403 for a READONLY member or while the subscription is not active.
   */
  requireWrite(userId: string, projectId: string): Project {
    const project = this.projects.findById(projectId);
    if (!project) throw new ApiError('projectNotFound');
    const access = project.ownerUserId === userId ? 'FULL' : this.projects.memberAccess(projectId, userId);
    if (access === undefined) throw new ApiError('forbidden');
    if (access === 'READONLY') throw new ApiError('readOnlyAccess');
    if (project.subscriptionStatus !== ACTIVE_SUBSCRIPTION) throw new ApiError('subscriptionInactive');
    return project;
  }

  /**
   * The reader's access (`FULL` for the owner) on facts already read (undefined: no such project):
   * 404 Project not found, then 403 `Access denied` for anyone who is neither owner nor member.
   * Reads need no active subscription.
   */
  checkRead(userId: string, facts: ProjectAccessFacts | undefined): MemberAccess {
    if (!facts) throw new ApiError('projectNotFound');
    if (facts.ownerUserId === userId) return 'FULL';
    if (facts.memberAccess === undefined) throw new ApiError('accessDenied');
    return facts.memberAccess;
  }
}
