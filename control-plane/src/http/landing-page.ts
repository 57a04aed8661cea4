// `GET /`: what a person who opens the control plane's address sees, a short page pointing at
// the API documentation (/docs), the OpenAPI document and the health check, instead of a 404.
// Static: no script, nothing from the request or the database, its own strict CSP.
import type { FastifyInstance } from 'fastify';
import { DOCS_PREFIX, OPENAPI_PATH } from './openapi';

export const LANDING_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pixelfleet control plane</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:0 .2em}</style>
</head>
<body>
<h1>Pixelfleet control plane</h1>
<p>This server streams packaged Unreal Engine applications to browsers. Viewers open a project's share link, <code>/share/&lt;projectId&gt;</code>.</p>
<ul>
<li><a href="${DOCS_PREFIX}">API documentation</a>: the build and project API and the analytics API</li>
<li><a href="${OPENAPI_PATH}">OpenAPI document</a> (JSON)</li>
<li><a href="/healthz">Health check</a></li>
</ul>
<p>Operators: <code>pixelfleet admin --help</code>.</p>
</body>
</html>
`;

export function registerLandingPage(app: FastifyInstance): void {
  app.get('/', (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-cache')
      .send(LANDING_PAGE),
  );
}
