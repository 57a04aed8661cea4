// The one door of @pixelfleet/dashboard: the customer dashboard's in-memory bundle, its HTML shell
// and its Content-Security-Policy. The browser code is in src/app/; the control plane serves it
// (control-plane/src/http/dashboard/dashboard-page-routes.ts) beside the routes it calls.
export { bundleDashboard, type DashboardBundle } from './bundle';
export { dashboardAssetNames, dashboardContentSecurityPolicy, renderDashboardPage, type DashboardPageOptions } from './page';
export type {
  DashboardAccess,
  DashboardAnalytics,
  DashboardBreakdownEntry,
  DashboardBuild,
  DashboardBuilds,
  DashboardBuildStage,
  DashboardFleet,
  DashboardMe,
  DashboardProject,
  DashboardProjectHeader,
  DashboardSession,
  DashboardSessionDetail,
  DashboardSessions,
  DashboardSettings,
  DashboardStatsPoint,
  DashboardTeam,
  DashboardWarmPool,
  DashboardWebhookDelivery,
  DashboardWebhookTest,
  DashboardWorker,
} from './wire';
