// The dashboard's pages: one HTML shell for every page path under the dashboard (the app routes in
// the browser), with a strict Content-Security-Policy, and the bundle's two assets under versioned
// names that a browser may keep for good. `…/api/*` and `…/assets/*` paths that name nothing are
// 404s like any unknown route, never the shell.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { bundleDashboard, dashboardAssetNames, dashboardContentSecurityPolicy, renderDashboardPage } from '@pixelfleet/dashboard';
import type { DashboardGuards } from './dashboard-auth-routes';

export interface DashboardPageDeps {
  guards: Pick<DashboardGuards, 'limited'>;
  /** publicUrls.dashboard, once the server listens: its path is where the app and its assets are published. */
  dashboardUrl: () => string;
}

/** A year: the longest max-age caches honour; a new bundle has a new name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

export function registerDashboardPageRoutes(app: FastifyInstance, deps: DashboardPageDeps, basePath = '/dashboard'): void {
  const publicPath = () => new URL(deps.dashboardUrl()).pathname.replace(/\/+$/, '');

  app.get<{ Params: { name: string } }>(`${basePath}/assets/:name`, async (req, reply) => {
    const bundle = await bundleDashboard();
    const names = dashboardAssetNames(bundle.version);
    if (req.params.name === names.js) return reply.type('text/javascript; charset=utf-8').header('cache-control', IMMUTABLE).send(bundle.js);
    if (req.params.name === names.css) return reply.type('text/css; charset=utf-8').header('cache-control', IMMUTABLE).send(bundle.css);
    return reply.callNotFound();
  });

  const shell = async (reply: FastifyReply) => {
    const { version } = await bundleDashboard();
    const path = publicPath();
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', dashboardContentSecurityPolicy())
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-cache')
      .send(renderDashboardPage({ basePath: path, assetBase: `${path}/assets`, version }));
  };
  app.get(basePath, { onRequest: deps.guards.limited }, (_req, reply) => shell(reply));
  app.get<{ Params: { '*': string } }>(`${basePath}/*`, { onRequest: deps.guards.limited }, (req, reply) => {
    const rest = req.params['*'];
    if (rest === 'api' || rest.startsWith('api/') || rest === 'assets' || rest.startsWith('assets/')) return reply.callNotFound();
    return shell(reply);
  });
}
