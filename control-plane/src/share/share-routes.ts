// The share page: GET {share_url}/<projectId> serves the viewer page, /share/assets/* its bundle,
// and /share/<projectId>/signalling upgrades to the viewer's signalling WebSocket.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import websocket from '@fastify/websocket';
import { DEFAULT_MAX_MESSAGE_BYTES } from '@pixelfleet/signaling';
import { bundlePlayer, playerContentSecurityPolicy, renderPlayerPage } from '@pixelfleet/web-player';
import { acceptsGzip } from '../http/accept-encoding';
import { isSessionId } from '../lib/ids';
import type { ProjectsRepository } from '../repositories/projects';
import type { ViewerGateway } from './viewer-gateway';
import { handleWebsocketError } from './websocket-errors';

const PROJECT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** One player asset as it is sent: its bytes, gzipped once, and the validator a returning viewer revalidates with. */
interface PlayerAsset {
  readonly body: Buffer;
  readonly gzipped: Buffer;
  readonly etag: string;
}

/** The player's assets by content; a process serves one bundle (a test may build two generations), so a few entries at most. */
const playerAssets = new Map<string, PlayerAsset>();
const MAX_PLAYER_ASSETS = 8;

function playerAsset(text: string): PlayerAsset {
  let asset = playerAssets.get(text);
  if (asset === undefined) {
    const body = Buffer.from(text);
    asset = { body, gzipped: gzipSync(body, { level: 9 }), etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
    if (playerAssets.size >= MAX_PLAYER_ASSETS) playerAssets.clear();
    playerAssets.set(text, asset);
  }
  return asset;
}

/**
 * The viewer's page script (264 KB; 62 KB gzipped: about 80 ms less on a 20 Mbps link before the
 * page can open its socket) and style, gzipped when the browser takes it, with an ETag so that a
 * returning viewer's `no-cache` revalidation is a 304 instead of the whole script again.
 */
function sendPlayerAsset(req: FastifyRequest, reply: FastifyReply, type: string, text: string): FastifyReply {
  const asset = playerAsset(text);
  reply.type(type).header('cache-control', 'no-cache').header('etag', asset.etag).header('vary', 'accept-encoding');
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === asset.etag)) return reply.status(304).send();
  if (!acceptsGzip(req.headers['accept-encoding'])) return reply.send(asset.body);
  return reply.header('content-encoding', 'gzip').send(asset.gzipped);
}

export async function registerShareRoutes(app: FastifyInstance, deps: { gateway: ViewerGateway; projects: ProjectsRepository }): Promise<void> {
  await app.register(websocket, { options: { maxPayload: DEFAULT_MAX_MESSAGE_BYTES }, errorHandler: handleWebsocketError });

  app.get('/share/assets/player.js', async (req, reply) => sendPlayerAsset(req, reply, 'text/javascript; charset=utf-8', (await bundlePlayer()).js));
  app.get('/share/assets/player.css', async (req, reply) => sendPlayerAsset(req, reply, 'text/css; charset=utf-8', (await bundlePlayer()).css));

  app.get<{ Params: { projectId: string } }>('/share/:projectId', (req, reply) => {
    const { projectId } = req.params;
    const project = PROJECT_ID.test(projectId) ? deps.projects.findById(projectId) : undefined;
    // The embed allow-list, when the project has one: only those sites (and the page's own) may frame it.
    const embedOrigins = project?.settings.embedOrigins ?? [];
    const frameAncestors = embedOrigins.length > 0 ? ["'self'", ...embedOrigins] : ['*'];
    reply.header('content-security-policy', playerContentSecurityPolicy({ frameAncestors })).header('x-content-type-options', 'nosniff');
    // An unknown project gets the player too (404): its socket is closed with 4000 and the page
    // says so in the player's own screen, as for any other stream that is not available.
    if (!project) return reply.status(404).type('text/html; charset=utf-8').send(renderPlayerPage({ projectId: PROJECT_ID.test(projectId) ? projectId : '', assetBase: '/share/assets' }));
    return reply.type('text/html; charset=utf-8').send(renderPlayerPage({ projectId, title: project.name, assetBase: '/share/assets', embedOrigins }));
  });

  app.get<{ Params: { projectId: string }; Querystring: { resume?: string | string[] } }>(
    '/share/:projectId/signalling',
    // No request log lines per upgrade (a socket is logged by the gateway, once): a loop of refused
    // sockets would otherwise write two info lines each.
    { websocket: true, logLevel: 'warn' },
    (socket, req) => {
      const projectId = PROJECT_ID.test(req.params.projectId) ? req.params.projectId : '';
      // ?resume=<sessionId>: the page reattaching to its session after its socket dropped.
      const resume = req.query.resume;
      // req.ip: the socket's peer, or X-Forwarded-For when the peer is in http.trustProxy (app.ts).
      const userAgent = req.headers['user-agent'];
      // Browsers always send Origin on a WebSocket; the gateway checks it against the project's embedOrigins.
      const origin = req.headers.origin;
      if (resume === undefined) return deps.gateway.accept(socket, projectId, { address: req.ip, userAgent, origin });
      deps.gateway.accept(socket, projectId, { address: req.ip, origin, resumeSessionId: typeof resume === 'string' && isSessionId(resume) ? resume : '' });
    },
  );
}
