// The agent's configuration: parsed once from a JSON file plus PIXELFLEET_AGENT_* env
// overrides (@pixelfleet/common's loader, as the control plane's), validated, every default
// applied here, then frozen. Unknown keys are an error naming the key.
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { z } from 'zod';
import { loadConfig, weakSecretReason, type EnvLeafKind } from '@pixelfleet/common';
import { REGION_CODES, type RegionCode } from '@pixelfleet/proto';

/** The regions a worker may enroll in: the one table, in @pixelfleet/proto. */
export const AGENT_REGIONS = REGION_CODES as [RegionCode, ...RegionCode[]];

/** Default `buildCache.maxBytes`: 200 GiB, room for a few packaged Unreal builds. */
export const DEFAULT_BUILD_CACHE_MAX_BYTES = 200 * 1024 ** 3;
/** Default `logSpool.maxBytes`: 5 GiB, days of engine logs and a few crash dumps while the control plane is away. */
export const DEFAULT_LOG_SPOOL_MAX_BYTES = 5 * 1024 ** 3;
/** Default `logSpool.maxAgeHours`: a week, well past any outage worth waiting for. */
export const DEFAULT_LOG_SPOOL_MAX_AGE_HOURS = 168;

const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port')
  .refine((v) => {
    const port = Number(v.slice(v.lastIndexOf(':') + 1));
    return port >= 1 && port <= 65535;
  }, 'port must be 1 to 65535');
const iceServer = z
  .object({
    urls: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    username: z.string().optional(),
    credential: z.string().optional(),
  })
  .strict();

const schema = z
  .object({
    controlPlane: hostPort,
    /**
     * The control link's TLS (docs/deployment.md "TLS"): the server verified against the system roots or
     * caFile, its certificate naming the dialed host or serverName; certFile/keyFile for a control
     * plane that requires mutual TLS. Plaintext only to a loopback address with no TLS key set, or
     * with insecure: true.
     */
    tls: z
      .object({
        caFile: z.string().min(1).optional(),
        serverName: z.string().min(1).max(253).optional(),
        certFile: z.string().min(1).optional(),
        keyFile: z.string().min(1).optional(),
        insecure: z.boolean().optional(),
      })
      .strict()
      .refine((t) => (t.certFile === undefined) === (t.keyFile === undefined), 'certFile and keyFile go together: set both or neither')
      .refine((t) => t.insecure !== true || (t.caFile ?? t.serverName ?? t.certFile ?? t.keyFile) === undefined, 'insecure: true cannot go with caFile, serverName, certFile or keyFile')
      .default({}),
    joinToken: z
      .string()
      .superRefine((value, ctx) => {
        // The control plane refuses a weak join token at its start; the agent says so at its own, before it dials.
        const weak = weakSecretReason(value);
        if (weak !== undefined) ctx.addIssue({ code: 'custom', message: `joinToken ${weak}` });
      })
      .optional(),
    region: z.enum(AGENT_REGIONS),
    slots: z.number().int().min(1).max(64).default(1),
    hostname: z.string().min(1).max(253).default(hostname()),
    dataDir: z.string().min(1).default('.data/agent'),
    publicIp: z.string().refine((ip) => isIP(ip) !== 0, 'must be an IPv4 or IPv6 address').optional(),
    ice: z
      .object({
        hostAddresses: z.array(z.string().refine((ip) => isIP(ip) !== 0, 'must be an IP address')).default([]),
        portRange: z
          .object({ min: z.number().int().min(1024).max(65535), max: z.number().int().min(1024).max(65535) })
          .strict()
          .refine((r) => r.min <= r.max, 'min must not exceed max')
          .optional(),
        iceServers: z.array(iceServer).default([]),
      })
      .strict()
      .default({ hostAddresses: [], iceServers: [] }),
    launcher: z
      .object({ command: z.array(z.string().min(1)).min(1).optional() })
      .strict()
      .default({}),
    buildCache: z
      .object({
        /** Bytes the cached builds may take before older ones (beyond each project's live and previous build) are evicted. */
        maxBytes: z.number().int().min(1).default(DEFAULT_BUILD_CACHE_MAX_BYTES),
        /**
         * true: builds may come over plain http:// from another machine (a control plane with
         * http.insecure), warned at each download; the control link keeps its TLS. tls.insecure
         * implies it.
         */
        insecureDownloads: z.boolean().default(false),
      })
      .strict()
      .default({ maxBytes: DEFAULT_BUILD_CACHE_MAX_BYTES, insecureDownloads: false }),
    logSpool: z
      .object({
        /** Bytes the spooled session logs waiting for the control plane may take; past it the oldest sessions' are dropped (with a warning). */
        maxBytes: z.number().int().min(1).default(DEFAULT_LOG_SPOOL_MAX_BYTES),
        /** Hours a session's spooled logs wait for the control plane before they are dropped (with a warning). */
        maxAgeHours: z.number().min(1).max(24 * 365).default(DEFAULT_LOG_SPOOL_MAX_AGE_HOURS),
      })
      .strict()
      .default({ maxBytes: DEFAULT_LOG_SPOOL_MAX_BYTES, maxAgeHours: DEFAULT_LOG_SPOOL_MAX_AGE_HOURS }),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /**
     * Each app runs under an account of its own and reaches only its build and session folders.
     * Linux, an agent running as root: uids firstId … firstId + count − 1 (the same numbers as gids;
     * launcher/app-accounts.ts). Windows, the service as LocalSystem: the local accounts
     * pixelfleet-app-1 … pixelfleet-app-<count> that `service install` makes (no firstId;
     * launcher/windows-app-accounts.ts). Absent: apps run as the agent.
     */
    appAccounts: z
      .object({ firstId: z.number().int().min(1000).max(2_147_000_000).optional(), count: z.number().int().min(1).max(4096) })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.appAccounts !== undefined && c.appAccounts.count < c.slots) {
      ctx.addIssue({ code: 'custom', path: ['appAccounts', 'count'], message: `must be at least slots (${c.slots}): every running app needs a uid of its own` });
    }
  });

export type AgentConfig = Readonly<z.infer<typeof schema>>;

/**
 * Why this host cannot give apps accounts of their own (`appAccounts`), or undefined when it can (or
 * none are asked for). Linux: the agent must run as root to start a process under another uid and
 * hand it folders, and firstId says which uids. Windows: the accounts are named by their slot (no
 * firstId); whether the service may log them on (LocalSystem) shows at the first launch.
 */
export function appAccountsRefusal(config: AgentConfig, platform: NodeJS.Platform, uid: number | undefined): string | undefined {
  const accounts = config.appAccounts;
  if (accounts === undefined) return undefined;
  if (platform === 'win32') {
    return accounts.firstId === undefined ? undefined : 'config key "appAccounts.firstId": Linux uids only; on Windows the accounts are pixelfleet-app-1 … pixelfleet-app-<count> (remove firstId)';
  }
  if (platform !== 'linux') return `config key "appAccounts": apps under accounts of their own are built for Linux and Windows (this is ${platform}); remove the key`;
  if (accounts.firstId === undefined) return 'config key "appAccounts.firstId": required on Linux (the first of the uids and gids apps run under)';
  if (uid !== 0) return `config key "appAccounts": the agent must run as root to start apps under other uids (it runs as uid ${String(uid)})`;
  return undefined;
}

export const AGENT_ENV_PREFIX = 'PIXELFLEET_AGENT_';

/** Leaf keys an environment variable may set: PIXELFLEET_AGENT_ + key in SNAKE case, `.` → `__`. */
export const AGENT_ENV_LEAVES: Readonly<Record<string, EnvLeafKind>> = {
  controlPlane: 'string',
  'tls.caFile': 'string',
  'tls.serverName': 'string',
  'tls.certFile': 'string',
  'tls.keyFile': 'string',
  'tls.insecure': 'boolean',
  joinToken: 'string',
  region: 'string',
  slots: 'number',
  hostname: 'string',
  dataDir: 'string',
  publicIp: 'string',
  'ice.hostAddresses': 'json',
  'ice.portRange': 'json',
  'ice.iceServers': 'json',
  'launcher.command': 'json',
  'buildCache.maxBytes': 'number',
  'buildCache.insecureDownloads': 'boolean',
  'logSpool.maxBytes': 'number',
  'logSpool.maxAgeHours': 'number',
  logLevel: 'string',
  'appAccounts.firstId': 'number',
  'appAccounts.count': 'number',
};

export function loadAgentConfig(options: { file?: string; env?: Readonly<Record<string, string | undefined>> } = {}): AgentConfig {
  return loadConfig({ schema, envPrefix: AGENT_ENV_PREFIX, envLeaves: AGENT_ENV_LEAVES, ...options, finish: (parsed) => ({ ...parsed, dataDir: resolve(parsed.dataDir) }) });
}
