// A project's team, for its owner (the spec's account owner): the members with their access, a
// new member by e-mail address (a new address gets an invitation to set a password, as `pixelfleet
// admin member add --email` does), a change of access, and a removal that takes effect at the
// member's next request (their key and their sign-in alike). Anyone else gets the REST API's 403.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DashboardTeam } from '@pixelfleet/dashboard';
import type { AccountService } from '../../accounts/account-service';
import { ApiError } from '../../errors';
import type { PeopleService } from '../../people/people-service';
import type { MemberAccess, Project, ProjectsRepository } from '../../repositories/projects';
import { bodyObject, requiredString } from '../api/request-fields';
import type { DashboardGuards } from './dashboard-auth-routes';
import type { DashboardProjectAccess } from './dashboard-project-routes';

export interface DashboardTeamDeps {
  guards: DashboardGuards;
  projectAccess: DashboardProjectAccess;
  accounts: Pick<AccountService, 'addMember' | 'changeMemberAccess' | 'removeMember'>;
  people: Pick<PeopleService, 'invite'>;
  projects: Pick<ProjectsRepository, 'listMembers'>;
}

type ProjectParams = { Params: { projectId: string } };
type MemberParams = { Params: { projectId: string; userId: string } };

const ACCESS_LEVELS: readonly MemberAccess[] = ['FULL', 'READONLY'];

export function registerDashboardTeamRoutes(app: FastifyInstance, deps: DashboardTeamDeps, basePath = '/dashboard'): void {
  const { guards, projectAccess } = deps;
  const base = `${basePath}/api/projects/:projectId/members`;
  const write = { onRequest: guards.limited, preHandler: guards.sameSite };

  /** The owner's write access to the team: the project's write checks, then ownership (403 `Forbidden`). */
  const owner = async (req: FastifyRequest<ProjectParams>): Promise<Project> => {
    const { userId, project } = await projectAccess.writer(req);
    if (project.ownerUserId !== userId) throw new ApiError('forbidden');
    return project;
  };
  const accessOf = (body: Record<string, unknown>): MemberAccess => {
    const access = requiredString(body, 'access');
    if (!(ACCESS_LEVELS as readonly string[]).includes(access)) throw new ApiError('invalidField', { detail: 'Invalid field: access must be FULL or READONLY' });
    return access as MemberAccess;
  };
  const team = async (req: FastifyRequest<ProjectParams>, project: Project): Promise<DashboardTeam> => {
    const { header } = await projectAccess.read(req);
    return { project: header, members: deps.projects.listMembers(project.projectId) };
  };

  app.get<ProjectParams>(base, { onRequest: guards.limited }, async (req, reply) => {
    const { userId, project } = await projectAccess.read(req);
    if (project.ownerUserId !== userId) throw new ApiError('forbidden');
    return reply.header('cache-control', 'no-store').send(await team(req, project));
  });

  app.post<ProjectParams>(base, write, async (req, reply) => {
    const project = await owner(req);
    const body = bodyObject(req.body);
    const email = requiredString(body, 'email', 254);
    const access = accessOf(body);
    const { user, invited } = await deps.people.invite(email);
    await deps.accounts.addMember(project.projectId, user.userId, access);
    return reply.status(201).send({ userId: user.userId, invitationMailed: invited, ...(await team(req, project)) });
  });

  app.patch<MemberParams>(`${base}/:userId`, write, async (req, reply) => {
    const project = await owner(req);
    const access = accessOf(bodyObject(req.body));
    // The membership check and the change in one step (a removal meanwhile is not undone).
    if (!deps.accounts.changeMemberAccess(project.projectId, req.params.userId, access)) throw new ApiError('invalidField', { detail: 'Invalid field: userId is not a member of this project' });
    return reply.send(await team(req, project));
  });

  app.post<MemberParams>(`${base}/:userId/remove`, write, async (req, reply) => {
    const project = await owner(req);
    deps.accounts.removeMember(project.projectId, req.params.userId);
    return reply.send(await team(req, project));
  });
}
