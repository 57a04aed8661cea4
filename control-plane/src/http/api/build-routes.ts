// Builds: submit one by URL (upload-file), list them, and start distributing one
// (distribute-file, set-active-build). The three POSTs share the build-call window, taken only
// after validation, auth and the fileUrl policy have passed. The pipeline that moves a build on
// from `pending` (and finishes a distribution) is the pipeline issue's; these routes record the
// state change and fire its webhook.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors';
import type { BuildRecord } from '../../repositories/builds';
import { checkOutboundUrl, MAX_URL_CHARS } from '../../webhooks/url-policy';
import { POLLED_ROUTE_LOG_LEVEL, type ApiDeps } from './api-deps';
import { authenticateProjectQuery, bodyCredentials, bodyObject, optionalBoolean, requiredString, requireJsonContentType } from './request-fields';
import { build, buildStatusResult, errorResponses, postBody, projectIdParams, queryAuth } from './schemas';

/** `autoRelease` when the upload does not say (the spec leaves it open): stop at Ready. */
export const DEFAULT_AUTO_RELEASE = false;
export const DISTRIBUTING = 'Distributing to Servers';
/** Statuses a distribution may start from: ready, live (roll back / redo), or already distributing (re-queue). */
export const DISTRIBUTABLE = new Set(['Ready', 'Approved', DISTRIBUTING]);

const iso = (ms: number) => new Date(ms).toISOString();

export function registerBuildRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const envelope = (b: Pick<BuildRecord, 'projectId' | 'uploadId' | 'fileUrl' | 'objection'>, event: string, status: string) => ({
    event,
    projectId: b.projectId,
    uploadId: b.uploadId,
    fileUrl: b.fileUrl ?? null,
    status,
    objection: b.objection ?? null,
    timestamp: iso(deps.clock.now()),
  });

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
      const body = bodyObject(req.body);
      const { apiKey, userId } = bodyCredentials(req, body);
      const projectId = requiredString(body, 'projectId');
      const fileUrl = requiredString(body, 'fileUrl', MAX_URL_CHARS);
      const autoRelease = optionalBoolean(body, 'autoRelease') ?? DEFAULT_AUTO_RELEASE;
      deps.auth.verifyKeyOwner(apiKey, userId);
      deps.access.require(userId, projectId, 'write', 'forbidden');
      const verdict = await checkOutboundUrl(fileUrl, deps.urlPolicy);
      if (!verdict.ok) throw new ApiError('invalidField', { detail: `Invalid fileUrl: ${verdict.reason}` });
      deps.buildCalls.take(userId);
      const now = deps.clock.now();
      const record = { uploadId: deps.ids.next('upl'), projectId, fileUrl, status: 'pending', objection: undefined, autoRelease, createdAt: now, updatedAt: now };
      deps.builds.insert(record);
      deps.events.record('build.uploaded', { projectId }, { uploadId: record.uploadId, autoRelease });
      deps.webhooks.emit(projectId, envelope(record, 'build.uploaded', 'pending'));
      return reply.status(201).send({ uploadId: record.uploadId, status: record.status });
    },
  );

  const distribute = (req: FastifyRequest) => {
    const body = bodyObject(req.body);
    const { apiKey, userId } = bodyCredentials(req, body);
    const projectId = requiredString(body, 'projectId');
    const uploadId = requiredString(body, 'uploadId');
    deps.auth.verifyKeyOwner(apiKey, userId);
    deps.access.require(userId, projectId, 'write', 'forbidden');
    const found = deps.builds.findById(uploadId);
    // An upload of another project is as unknown as a missing one.
    if (!found || found.projectId !== projectId) throw new ApiError('uploadNotFound');
    if (!DISTRIBUTABLE.has(found.status)) {
      throw new ApiError('invalidField', { detail: `Build ${uploadId} cannot be distributed while its status is ${found.status}` });
    }
    deps.buildCalls.take(userId);
    deps.builds.setStatus(uploadId, DISTRIBUTING, undefined, deps.clock.now());
    deps.events.record('build.distributing', { projectId }, { uploadId, by: userId });
    deps.webhooks.emit(projectId, envelope(found, 'build.distributing', DISTRIBUTING));
    return { uploadId, status: DISTRIBUTING };
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
    (req) => {
      const { projectId, userId } = authenticateProjectQuery(req, deps.auth);
      deps.access.requireRead(userId, projectId, 'accessDenied');
      const builds = deps.builds.listByProject(projectId).map((b) => ({
        uploadId: b.uploadId,
        fileUrl: b.fileUrl ?? null,
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
