// The one door of @pixelfleet/control-plane. Test-only handles (the raw database, limits tests push
// against) are at `@pixelfleet/control-plane/test-support`, not here.
export { buildControlPlane, type ControlPlane, type ControlPlaneDeps, type StartedControlPlane } from './app';
export { loadControlPlaneConfig, resolvePublicUrls, type ControlPlaneConfig, type PublicUrls } from './config';
export { ApiError, HTTP_ERRORS, analyticsCodeOf, type HttpErrorName } from './errors';
export { createLogger, redactUrl } from '@pixelfleet/common';
export { runAdminCli } from './admin-cli/admin-cli';
export { runControlPlaneCli, NO_CONFIG_HINT } from './main';
export { EventLog } from './events/event-log';
export type { FleetEvent } from './repositories/events';
export type { WorkerView } from './workers/registry';
export type { SessionRecord } from './repositories/sessions';
