// What the dashboard's routes answer, in one place for both sides: the control plane's routes
// (control-plane/src/http/dashboard/) build these shapes, the app (src/app/) reads them. Types
// only: the browser bundle takes nothing else from here.

/** The signed-in person: `GET <base>/api/me`, `POST …/sign-in`, `POST …/set-password`. */
export interface DashboardMe {
  userId: string;
  email: string;
  /** Whether this sign-in may act as an operator now (it was shown the admin token). */
  operator: boolean;
}

/** A project's access as the dashboard shows it: `owner` for the person's own projects, else their membership. */
export type DashboardAccess = 'owner' | 'FULL' | 'READONLY';

/** A project as `GET <base>/api/projects` lists it. */
export interface DashboardProject {
  projectId: string;
  name: string;
  region: string;
  access: DashboardAccess;
  enabled: boolean;
  subscriptionStatus: string;
  liveUploadId: string | null;
  liveUser: number;
  queueUser: number;
  shareUrl: string;
}

/** Who the person is on a project, as every project page's answer says it: what they may see and do. */
export interface DashboardProjectHeader {
  projectId: string;
  name: string;
  access: DashboardAccess;
  /** Whether the server will take their writes: FULL access (or owner) and an active subscription. */
  writable: boolean;
  subscriptionStatus: string;
  enabled: boolean;
}

/** A status a build entered, and when (epoch ms). */
export interface DashboardBuildStage {
  status: string;
  enteredAt: number;
}

/** A build on the builds page: its stage timeline, and the pipeline's progress while it works on it. */
export interface DashboardBuild {
  uploadId: string;
  /** READONLY members see it without query, fragment or userinfo (a presigned URL's signature is a credential). */
  fileUrl: string | null;
  status: string;
  objection: string | null;
  autoRelease: boolean;
  live: boolean;
  createdAt: number;
  updatedAt: number;
  stages: DashboardBuildStage[];
  progress: { status: string; bytes: number; totalBytes: number | null; bytesPerSecond: number | null; etaSeconds: number | null } | null;
  /** Whether Set Live and Distribute may start from its status (Ready, Approved, or already distributing). */
  activatable: boolean;
}

/** `GET <base>/api/projects/:projectId/builds`. */
export interface DashboardBuilds {
  project: DashboardProjectHeader;
  /** Builds the project has; `builds` is one page of them, newest first. */
  total: number;
  builds: DashboardBuild[];
}

/** `GET <base>/api/projects/:projectId/settings`: the REST API's settings answer, and who is asking. */
export interface DashboardSettings {
  project: DashboardProjectHeader;
  settings: {
    projectId: string;
    region: string;
    name: string;
    webhookUrl: string | null;
    webhookEvents: string[] | null;
    codec: string;
    minBitrate: number;
    maxBitrate: number;
    resX: number;
    resY: number;
    fps: number;
    maxRunTime: number;
    afkTimeout: number;
    maxConcurrentSessions: number;
    launchArgs: string[];
    embedOrigins: string[];
    warmPoolMinIdle: number;
    warmPoolQueueWaitTargetSeconds: number;
    warmInstanceMaxAgeMinutes: number;
  };
  /** Every webhook event a project may subscribe to, in the catalogue's order. */
  webhookEventKinds: string[];
  /** Every codec a project may stream with. */
  codecs: string[];
}

/** `POST …/webhook-test`: the test delivery's outcome (the REST API's test-webhook answer). */
export interface DashboardWebhookTest {
  delivered: boolean;
  statusCode: number | null;
  /** The catalogue's sentence of a failure. */
  error: string | null;
  durationMs: number;
}

/** A recorded webhook delivery, newest first on the settings page. */
export interface DashboardWebhookDelivery {
  attemptedAt: number;
  event: string;
  uploadId: string | null;
  statusCode: number | null;
  /** The catalogue's sentence of a failure; null for a delivery the receiver took (2xx). */
  error: string | null;
  durationMs: number;
}

/** A session as the sessions page lists it (times in epoch ms, durations in ms). */
export interface DashboardSession {
  sessionId: string;
  status: string;
  region: string;
  endReason: string | null;
  createdAt: number;
  queueWaitMs: number | null;
  startupMs: number | null;
  /** Of the start-up: the app loading (Starting → identified on the agent's signalling), and the viewer's WebRTC (→ Running). */
  launchMs: number | null;
  negotiationMs: number | null;
  /** A warm instance served it: its app was already launched when the viewer came. */
  servedWarm: boolean;
  lifetimeMs: number | null;
  browser: string | null;
  os: string | null;
  deviceType: string | null;
  country: string | null;
  /** The plain-language verdict of what the viewer got (control-plane analytics/session-diagnosis.ts). */
  diagnosis: string;
}

/** `GET <base>/api/projects/:projectId/sessions`: a page of the project's sessions, newest first. */
export interface DashboardSessions {
  project: DashboardProjectHeader;
  /** Sessions matching, counted up to a cap (control-plane SESSIONS_COUNT_CAP, 10,000). */
  total: number;
  /** False when the count stopped at the cap: more than `total` match, and pages stop there. */
  totalExact: boolean;
  sessions: DashboardSession[];
  /** The project's warm pool now, whatever the filters; null when it has none (its minimum is 0 and no instance is left). */
  warmPool: DashboardWarmPool | null;
}

/**
 * A project's warm pool (control-plane sessions/warm-pool.ts): apps launched before any viewer,
 * counted while no viewer has claimed them. Each holds a streaming slot.
 */
export interface DashboardWarmPool {
  /** The project's setting `warmPoolMinIdle`. */
  minIdle: number;
  /** Instances it wants unclaimed now: the minimum, grown while viewers waited past the project's target. */
  wanted: number;
  /** Instances whose app has loaded: the next viewer is served at once. */
  ready: number;
  /** Instances whose app is still loading. */
  starting: number;
  /** Instances being stopped (a new build, past their maximum age, or to free a slot for another project's viewer). */
  ending: number;
  /** Since the control plane last started: viewers a warm instance served, and viewers who waited for a launch. */
  claims: number;
  misses: number;
  /** Set when the live build is no longer warmed: its warm instances failed `failures` times in a row, the last for `reason` (an end reason), at `at` (epoch ms). */
  stopped: { uploadId: string; failures: number; reason: string; at: number } | null;
}

/** One statistics row of the player's telemetry, as numbers (null: not measured yet). */
export interface DashboardStatsPoint {
  at: number;
  fps: number | null;
  bitrateKbps: number | null;
  rttMs: number | null;
  packetsLost: number | null;
  framesDropped: number | null;
}

/** `GET <base>/api/projects/:projectId/sessions/:sessionId`: everything the session page shows. */
export interface DashboardSessionDetail {
  project: DashboardProjectHeader;
  session: DashboardSession & { worker: string | null; city: string | null };
  /** The status snapshots, in order. */
  timeline: { status: string; at: number }[];
  /** Statistics rows, oldest first: the most recent `statsLimit` of them. */
  stats: DashboardStatsPoint[];
  statsTotal: number;
  statsLimit: number;
  /** The page's events (sdpOffer, connected, disconnected…), oldest first. */
  events: { at: number; event: string; detail: string | null }[];
  logFiles: { logFileId: string; fileName: string; fileSize: number; uploadedAt: number }[];
}

/** One value of an audience breakdown: its sessions and their share of the window's total (%). */
export interface DashboardBreakdownEntry {
  value: string;
  count: number;
  percentage: number;
}

/** `GET <base>/api/projects/:projectId/analytics?from&to`: the five breakdowns of the sessions made in the window. */
export interface DashboardAnalytics {
  project: DashboardProjectHeader;
  fromMs: number;
  toMs: number;
  /** Sessions made in the window. */
  total: number;
  breakdowns: Record<'country' | 'city' | 'browser' | 'os' | 'device', DashboardBreakdownEntry[]>;
  /** Each UTC day the window touches that had sessions, oldest first (control-plane repositories/session-daily.ts). */
  days: DashboardDay[];
  /** The widest window, in days (the analytics API's). */
  maxDays: number;
}

/** One UTC day of a project: sessions created, how many reached Running, and their median start-up. */
export interface DashboardDay {
  dayStartMs: number;
  sessions: number;
  started: number;
  /** Milliseconds (within 2.5 %); null when no session of the day started. */
  medianStartupMs: number | null;
}

/** `GET <base>/api/projects/:projectId/members` (the owner only): the project's team. */
export interface DashboardTeam {
  project: DashboardProjectHeader;
  members: { userId: string; email: string; access: 'FULL' | 'READONLY'; addedAt: number; joined: boolean }[];
}

/** A streaming server as the operators' fleet page lists it. */
export interface DashboardWorker {
  workerId: string;
  hostname: string;
  region: string;
  /** `connected`, `unreachable`, `lost`… or `draining` (the registry's word). */
  status: string;
  draining: boolean;
  slots: number;
  usedSlots: number;
  agentVersion: string;
  lastSeenAt: number | null;
}

/** `GET <base>/api/fleet` (operators only). */
export interface DashboardFleet {
  workers: DashboardWorker[];
}
