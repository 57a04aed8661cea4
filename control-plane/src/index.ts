// The one door of @pixelfleet/control-plane.
export { buildControlPlane, type ControlPlane, type ControlPlaneDeps, type StartedControlPlane } from './app';
export { loadControlPlaneConfig, resolvePublicUrls, type ControlPlaneConfig, type PublicUrls } from './config';
export { ConfigError } from './lib/config-loader';
export { ApiError, HTTP_ERRORS, type HttpErrorName } from './errors';
export { createLogger, redactUrl } from './lib/logger';
export { runAdminCli } from './admin-cli/admin-cli';
export { runControlPlaneCli } from './main';
export { EventLog } from './events/event-log';
export type { FleetEvent } from './repositories/events';
export type { WorkerView } from './workers/registry';
export type { SessionRecord } from './repositories/sessions';
export { MAX_ICE_CANDIDATES_PER_SESSION, QUEUE_FULL, RESUME_NOT_FIRST, RESUME_REFUSED, TOO_MANY_FROM_ADDRESS, TOO_MANY_ICE_CANDIDATES } from './share/viewer-gateway';
