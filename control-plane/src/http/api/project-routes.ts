// Projects: the spec's project list and live counts (GET, key in the query), and the control
// actions enable, disable and end-session (POST, key in the body; idempotent).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../errors';
import { POLLED_ROUTE_LOG_LEVEL, type ApiDeps } from './api-deps';
import { authorizeProjectRead } from './project-read';
import { queryParam, requiredString, requireJsonContentType } from './request-fields';
import { authorizeProjectWrite, NO_INPUT } from './project-write';
import { errorResponses, postBody, projectIdParams, queryAuth } from './schemas';

export function registerProjectRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get(
    '/projects/projects-status',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: {
        tags: ['projects'],
        summary: 'List every project owned by the user',
        querystring: queryAuth,
        response: {
          200: {
            type: 'object',
            properties: {
              totalProjects: { type: 'number' },
              projects: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: { _id: { type: 'string' }, name: { type: 'string' }, status: { type: 'boolean' }, subscriptionStatus: { type: 'string' } },
                  required: ['_id', 'name', 'status', 'subscriptionStatus'],
                },
              },
            },
            required: ['totalProjects', 'projects'],
          },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      // userId first: its absence is the spec's row, whatever else is wrong with the query.
      const userId = queryParam(req.query, 'userId');
      if (userId === undefined) throw new ApiError('userIdRequired');
      const apikey = queryParam(req.query, 'apikey');
      await deps.auth.verifyUserKey(userId, apikey);
      const projects = deps.projects.listOwned(userId).map((p) => ({ _id: p.projectId, name: p.name, status: p.enabled, subscriptionStatus: p.subscriptionStatus }));
      return { totalProjects: projects.length, projects };
    },
  );

  // The same route with its projectId left out: the spec's 400 row, not a 404 for an unknown route.
  app.get('/projects/userStats', { logLevel: POLLED_ROUTE_LOG_LEVEL, schema: { hide: true } }, () => {
    throw new ApiError('userStatsParamsRequired');
  });

  app.get(
    '/projects/userStats/:projectId',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: {
        tags: ['projects'],
        summary: 'Live and queued user counts of one project',
        params: projectIdParams,
        querystring: queryAuth,
        response: {
          200: {
            type: 'object',
            properties: { liveUser: { type: 'number' }, queueUser: { type: 'number' } },
            required: ['liveUser', 'queueUser'],
          },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const { projectId } = await authorizeProjectRead(req, deps);
      return deps.sessions.counts(projectId);
    },
  );

  const projectStatus = {
    200: {
      type: 'object',
      properties: { projectId: { type: 'string' }, status: { type: 'boolean', description: 'Whether the project is active.' } },
      required: ['projectId', 'status'],
    },
    ...errorResponses,
  } as const;

  for (const enabled of [true, false]) {
    app.post(
      enabled ? '/projects/enable' : '/projects/disable',
      {
        onRequest: requireJsonContentType,
        schema: {
          tags: ['projects'],
          summary: enabled ? 'Enable a project (idempotent)' : 'Disable a project and end its sessions (idempotent)',
          body: postBody({}, []),
          response: projectStatus,
        },
      },
      async (req) => {
        const { userId, projectId, project } = await authorizeProjectWrite(req, deps, NO_INPUT);
        deps.projects.setEnabled(project, enabled, userId);
        return { projectId, status: enabled };
      },
    );
  }

  app.post(
    '/projects/end-session',
    {
      onRequest: requireJsonContentType,
      schema: {
        tags: ['projects'],
        summary: 'End a session (idempotent)',
        body: postBody({ sessionId: { type: 'string' } }, ['sessionId']),
        response: {
          200: {
            type: 'object',
            properties: { sessionId: { type: 'string' }, status: { type: 'string', enum: ['Enqueued', 'Starting', 'Running', 'Terminating', 'Terminated'] } },
            required: ['sessionId', 'status'],
          },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const { projectId, input: sessionId } = await authorizeProjectWrite(req, deps, (body) => requiredString(body, 'sessionId'));
      let session;
      try {
        session = deps.sessions.get(sessionId);
      } catch {
        throw new ApiError('sessionNotFound');
      }
      // A session of another project is as unknown as a missing one.
      if (session.projectId !== projectId) throw new ApiError('sessionNotFound');
      const ended = deps.sessions.end(sessionId, 'ended');
      return { sessionId, status: ended.status };
    },
  );
}
