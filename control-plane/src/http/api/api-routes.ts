// The build & project API under `{api_url}` (= `<origin>/api`): one encapsulated plugin holding
// every route group. Requests are read by request-fields.ts (exact spec messages), so the
// plugin's validator accepts everything and the schemas serve OpenAPI and serialization only.
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from './api-deps';
import { registerBuildRoutes } from './build-routes';
import { registerProjectRoutes } from './project-routes';
import { registerSettingsRoutes } from './settings-routes';

/** Path prefix of `{api_url}` on the control plane's own origin. */
export const API_PREFIX = '/api';

export function registerApiRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.register(
    (api, _opts, done) => {
      api.setValidatorCompiler(() => () => true);
      api.addHook('onRequest', deps.fairUse.onRequest);
      api.addHook('preValidation', deps.fairUse.preValidation);
      registerProjectRoutes(api, deps);
      registerBuildRoutes(api, deps);
      registerSettingsRoutes(api, deps);
      done();
    },
    { prefix: API_PREFIX },
  );
}
