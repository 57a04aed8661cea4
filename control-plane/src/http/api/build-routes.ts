// Builds: submit one by URL (upload-file), list them, and start distributing one
// (distribute-file, set-active-build). Each route reads the request, authorizes, and calls the
// build service, which owns the stage changes, the build-call window, events and webhooks.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DEFAULT_AUTO_RELEASE } from '../../builds/build-service';
import { MAX_URL_CHARS } from '../../webhooks/url-policy';
import { POLLED_ROUTE_LOG_LEVEL, type ApiDeps } from './api-deps';
import { authorizeProjectRead } from './project-read';
import { optionalBoolean, requiredString, requireJsonContentType } from './request-fields';
import { authorizeProjectWrite } from './project-write';
import { build, buildStatusResult, errorResponses, postBody, projectIdParams, queryAuth } from './schemas';

const iso = (ms: number) => new Date(ms).toISOString();

export function registerBuildRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post(
    '/projects/upload-file',
    {
      onRequest: requireJsonContentType,
      schema: {
        tags: ['builds'],
        summary: 'Submit a build (.zip) by URL; rate limited with distribute-file',
        body: postBody(
          {
            fileUrl: { type: 'string', description: 'Direct-download HTTPS URL of the .zip, on a public address.', maxLength: MAX_URL_CHARS },
            autoRelease: { type: 'boolean', default: DEFAULT_AUTO_RELEASE, description: 'Distribute automatically after saving.' },
          },
          ['fileUrl'],
        ),
        response: { 201: buildStatusResult, ...errorResponses },
      },
    },
    async (req, reply) => {
      const { userId, projectId, input } = await authorizeProjectWrite(req, deps, (body) => ({
        fileUrl: requiredString(body, 'fileUrl', MAX_URL_CHARS),
        autoRelease: optionalBoolean(body, 'autoRelease') ?? DEFAULT_AUTO_RELEASE,
      }));
      const record = await deps.builds.submit({ userId, projectId, ...input });
      return reply.status(201).send({ uploadId: record.uploadId, status: record.status });
    },
  );

  const distribute = async (req: FastifyRequest) => {
    const { userId, projectId, input: uploadId } = await authorizeProjectWrite(req, deps, (body) => requiredString(body, 'uploadId'));
    const activated = await deps.builds.activate({ userId, projectId, uploadId });
    return { uploadId: activated.uploadId, status: activated.status };
  };

  const distributeSchema = (summary: string) => ({
    tags: ['builds'],
    summary,
    body: postBody({ uploadId: { type: 'string' } }, ['uploadId']),
    response: { 200: buildStatusResult, ...errorResponses },
  });
  app.post('/projects/distribute-file', { onRequest: requireJsonContentType, schema: distributeSchema('Push a ready or approved build to the streaming servers; rate limited') }, distribute);
  app.post('/projects/set-active-build', { onRequest: requireJsonContentType, schema: distributeSchema('Make a build the live one (starts its distribution); rate limited') }, distribute);

  app.get(
    '/projects/:projectId/builds',
    {
      logLevel: POLLED_ROUTE_LOG_LEVEL,
      schema: {
        tags: ['builds'],
        summary: "A project's builds, newest first",
        params: projectIdParams,
        querystring: queryAuth,
        response: {
          200: { type: 'object', properties: { totalBuilds: { type: 'number' }, builds: { type: 'array', items: build } }, required: ['totalBuilds', 'builds'] },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const { projectId, access } = await authorizeProjectRead(req, deps);
      const builds = (await deps.builds.list(projectId)).map((b) => ({
        uploadId: b.uploadId,
        fileUrl: b.fileUrl === undefined ? null : access === 'READONLY' ? maskFileUrl(b.fileUrl) : b.fileUrl,
        status: b.status,
        objection: b.objection ?? null,
        autoRelease: b.autoRelease,
        live: b.live,
        createdAt: iso(b.createdAt),
        updatedAt: iso(b.updatedAt),
      }));
      return { totalBuilds: builds.length, builds };
    },
  );
}

/**
 * A build's fileUrl as READONLY members see it: no query, fragment or userinfo. A presigned
 * storage URL's signature is in its query, and it is a credential to the customer's bucket.
 */
export function maskFileUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '…';
  }
}
