// Who may do what on a project: the account owner everything, FULL members their listed
// projects, READONLY members reads only; writes also need an `active` subscription. Read from
// the database on every request, so a removed member or a new status takes effect at once.
import { ApiError, type HttpErrorName } from '../errors';
import type { MemberAccess, Project, ProjectAccessFacts, ProjectsRepository } from '../repositories/projects';

export type ProjectOperation = 'read' | 'write';

/** The subscription status that allows writes; anything else blocks them. */
export const ACTIVE_SUBSCRIPTION = 'active';

export interface ProjectGrant {
  project: Project;
  access: MemberAccess;
  owner: boolean;
}

export class ProjectAccess {
  constructor(private readonly projects: ProjectsRepository) {}

  /**
   * The project if `userId` may perform the operation: 404 Project not found, then `denied`
   * (403; userStats says `Access denied`, the POST endpoints `Forbidden`) without access, then
   * 403 for a READONLY member's write or a write while the subscription is not active.
   */
  require(userId: string, projectId: string, operation: ProjectOperation, denied: Extract<HttpErrorName, 'accessDenied' | 'forbidden'>): ProjectGrant {
    const project = this.projects.findById(projectId);
    if (!project) throw new ApiError('projectNotFound');
    const owner = project.ownerUserId === userId;
    const access = owner ? 'FULL' : this.projects.memberAccess(projectId, userId);
    if (access === undefined) throw new ApiError(denied);
    if (operation === 'write') {
      if (access === 'READONLY') throw new ApiError('readOnlyAccess');
      if (project.subscriptionStatus !== ACTIVE_SUBSCRIPTION) throw new ApiError('subscriptionInactive');
    }
    return { project, access, owner };
  }

  /** The read check alone, in one query (the polled GET routes need no project record). */
  requireRead(userId: string, projectId: string, denied: Extract<HttpErrorName, 'accessDenied' | 'forbidden'>): void {
    this.checkRead(userId, this.projects.accessFacts(projectId, userId), denied);
  }

  /** requireRead on facts the caller already read (undefined: no such project). */
  checkRead(userId: string, facts: ProjectAccessFacts | undefined, denied: Extract<HttpErrorName, 'accessDenied' | 'forbidden'>): void {
    if (!facts) throw new ApiError('projectNotFound');
    if (facts.ownerUserId !== userId && facts.memberAccess === undefined) throw new ApiError(denied);
  }
}
