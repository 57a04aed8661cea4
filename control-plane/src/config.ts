// The control plane's configuration: parsed once from a JSON file plus PIXELFLEET_* env
// overrides, validated, every default applied here and nowhere else, then frozen.
// Longer than ~400 lines: every key's schema and default in one place (docs/configuration.md
// lists them, a test holds the two together); the loader is @pixelfleet/common's.
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { z } from 'zod';
import { crossesNetworkInPlaintext, isLoopbackHost, loadConfig, weakSecretReason, type EnvLeafKind } from '@pixelfleet/common';
import { ANALYTICS_WINDOW_DAYS } from './analytics/analytics-window';

const port = z.number().int().min(0).max(65535);
/** A trusted proxy as fastify's trustProxy takes it: an address, a CIDR range, or a named range. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];
function isProxyRange(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry)) return true;
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
const trustedProxy = z.string().refine(isProxyRange, 'must be an IP address, a CIDR range (address/prefix) or one of loopback, linklocal, uniquelocal');

/**
 * The spec's "24 GB default cap", read as 24 GiB: the larger reading, so no archive the spec
 * promises to take (24 GB in either unit, or as Windows Explorer shows sizes) is refused.
 */
export const DEFAULT_MAX_BUILD_BYTES = 24 * 1024 ** 3;

const tlsFiles = z.object({ certFile: z.string().min(1), keyFile: z.string().min(1) }).strict();

/** An operator's secret: refused at start when weak (weakSecretReason: the placeholder, short, or a few characters repeated). */
const secret = (what: string) =>
  z.string().superRefine((value, ctx) => {
    const weak = weakSecretReason(value);
    if (weak !== undefined) ctx.addIssue({ code: 'custom', message: `${what} ${weak}` });
  });
const publicUrl = z
  .string()
  .url('must be an absolute URL')
  .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL')
  .transform((u) => u.replace(/\/+$/, ''));

/** An SMTP server's URL, credentials included; its text is never echoed back (it may carry a password). */
const smtpUrl = z
  .string()
  .refine((u) => {
    try {
      const url = new URL(u);
      return (url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname !== '';
    } catch {
      return false;
    }
  }, 'must be an smtp:// or smtps:// URL with a host');

/** An S3 bucket name as S3 takes new ones: 3–63 of a-z 0-9 . -, starting and ending with a letter or digit. */
const bucketName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name: 3-63 characters of a-z, 0-9, . and -, starting and ending with a letter or digit')
  .refine((b) => !b.includes('..') && !/^\d+\.\d+\.\d+\.\d+$/.test(b), 'must be an S3 bucket name (no "..", not an IP address)');

/**
 * Build archives and engine logs in an S3-compatible bucket instead of `<dataDir>/blobs`
 * (blobs/s3-blob-store.ts). Absent: the local folder. The secret key is never logged.
 */
const s3Blobs = z
  .object({
    /** The service's URL; unset: AWS's endpoint for `region`. http:// to another machine needs `insecure`. */
    endpoint: z
      .string()
      .url('must be an absolute URL')
      .refine((u) => /^https?:\/\/[^/?#]+\/?$/.test(u), 'must be an http(s) URL of a host, with no path (the bucket is set apart)')
      .transform((u) => u.replace(/\/+$/, ''))
      .optional(),
    bucket: bucketName,
    region: z.string().regex(/^[a-z0-9-]{1,64}$/, 'must be a region name such as us-east-1').default('us-east-1'),
    /** Both or neither; neither: the AWS SDK's default chain (AWS_* environment, profile, instance role). */
    accessKeyId: z.string().min(1).max(256).optional(),
    secretAccessKey: z.string().min(1).max(256).optional(),
    /** Path-style requests (`<endpoint>/<bucket>/<key>`): most self-hosted servers (MinIO, Ceph, Swift, Garage) want it. */
    forcePathStyle: z.boolean().default(false),
    /** Put before every key, to share a bucket (`pixelfleet/`); must end with `/`. */
    prefix: z
      .string()
      .max(256)
      .regex(/^([A-Za-z0-9!_.*'()-]+\/)*$/, 'must be empty or path segments each ending with "/" (letters, digits, !_.*\'()-)')
      .default(''),
    /** MiB per multipart part: 5 (S3's least) to 5120; raised for an archive that would need more than 10,000 parts. */
    partSizeMiB: z.number().int().min(5).max(5120).default(16),
    /** Parts sent at once per upload; each holds one part in memory. */
    uploadConcurrency: z.number().int().min(1).max(16).default(4),
    /** Lifetime of the presigned URL an agent's download is sent to, in seconds (only the request's start must fall in it). */
    presignSeconds: z.number().int().min(30).max(3600).default(300),
    /** true: an http:// endpoint on another machine is accepted (archives and logs cross the network unencrypted). */
    insecure: z.boolean().default(false),
  })
  .strict()
  .refine((s) => (s.accessKeyId === undefined) === (s.secretAccessKey === undefined), {
    path: ['secretAccessKey'],
    message: 'set accessKeyId and secretAccessKey together, or neither (the AWS SDK default credentials)',
  })
  .refine((s) => s.endpoint === undefined || s.insecure || !crossesNetworkInPlaintext(s.endpoint), {
    path: ['endpoint'],
    message: 'is plain HTTP to another machine: build archives, engine logs and presigned links would cross the network unencrypted; use https://, or set blobs.s3.insecure: true to accept plaintext',
  });

const schema = z
  .object({
    http: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: port.default(8080),
        /**
         * Addresses or CIDR ranges of reverse proxies whose X-Forwarded-For names the client. Empty:
         * the client is the socket's peer. Per-address limits (fair use, viewers) key on the client.
         */
        trustProxy: z.array(trustedProxy).default([]),
        /** HTTPS: certificate and key (PEM), reloaded on SIGHUP. */
        tls: tlsFiles.optional(),
        /**
         * true: plain HTTP across a network is accepted (a warning at every start): a listener on a
         * non-loopback address with no trusted proxy in front, and agents' build downloads from an
         * http:// publicUrls.agents on another machine.
         */
        insecure: z.boolean().default(false),
      })
      .strict()
      .default({ host: '127.0.0.1', port: 8080, trustProxy: [], insecure: false }),
    grpc: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: port.default(50051),
        /** Certificate and key (PEM), reloaded on SIGHUP; clientCaFile: agents must present a certificate it signed (mutual TLS). */
        tls: tlsFiles.extend({ clientCaFile: z.string().min(1).optional() }).strict().optional(),
        /** true: listen in plaintext on a non-loopback address (a warning at every start). */
        insecure: z.boolean().default(false),
      })
      .strict()
      .default({ host: '127.0.0.1', port: 50051, insecure: false }),
    dataDir: z.string().min(1).default('.data/control-plane'),
    adminToken: secret('adminToken'),
    agentJoinToken: secret('agentJoinToken'),
    publicUrls: z
      .object({
        api: publicUrl.optional(),
        platform: publicUrl.optional(),
        share: publicUrl.optional(),
        /** The dashboard's address, in links mailed to people; default `<origin>/dashboard`. */
        dashboard: publicUrl.optional(),
        /**
         * The control plane's HTTP origin as agents reach it (archive download links); defaults to
         * platform, then to the listener's origin. Plain http:// to another machine needs http.insecure.
         */
        agents: publicUrl.optional(),
      })
      .strict()
      .default({}),
    network: z
      .object({
        allowPrivateUrls: z.boolean().default(false),
        /** Relay viewers' ICE candidates that name private, loopback or link-local addresses, mDNS or host names (LAN deployments, the demo). */
        allowPrivateViewerCandidates: z.boolean().default(false),
      })
      .strict()
      .default({ allowPrivateUrls: false, allowPrivateViewerCandidates: false }),
    limits: z
      .object({
        buildCallWindowSeconds: z.number().int().min(1).default(120),
        analyticsReadsPerMinute: z.number().int().min(1).default(300),
        /** Fair use of the build & project API's GET routes: bucket size per client address and userId. */
        fairUseBurst: z.number().int().min(1).default(60),
        /** Tokens added to that bucket per second. */
        fairUsePerSecond: z.number().positive().default(5),
        /** Fair use per client address alone, whatever the userId (so a new userId per request buys nothing). */
        fairUseAddressBurst: z.number().int().min(1).default(240),
        /** Tokens added to that bucket per second. */
        fairUseAddressPerSecond: z.number().positive().default(20),
        /** Telemetry a session may store once placed on a worker, in bytes of stored JSON (issue 22: anonymous input is bounded). */
        telemetryBytesPerSession: z.number().int().min(1).default(4 * 1024 * 1024),
        /** …and while it has never been placed (a queued page has little to say). */
        telemetryBytesWhileQueued: z.number().int().min(1).default(64 * 1024),
        /** Telemetry request bytes one client network (IPv4 address, IPv6 /64) may send back to back. */
        telemetryAddressBytesBurst: z.number().int().min(1).default(2 * 1024 * 1024),
        /** …refilled at this many bytes per second. */
        telemetryAddressBytesPerSecond: z.number().int().min(1).default(64 * 1024),
        /** The build size cap, in bytes: a download past it is rejected (spec: "24 GB default cap; a soft limit that support can raise"). */
        maxBuildBytes: z.number().int().min(1).default(DEFAULT_MAX_BUILD_BYTES),
      })
      .strict()
      .default({ buildCallWindowSeconds: 120, analyticsReadsPerMinute: 300, fairUseBurst: 60, fairUsePerSecond: 5, fairUseAddressBurst: 240, fairUseAddressPerSecond: 20, telemetryBytesPerSession: 4 * 1024 * 1024, telemetryBytesWhileQueued: 64 * 1024, telemetryAddressBytesBurst: 2 * 1024 * 1024, telemetryAddressBytesPerSecond: 64 * 1024, maxBuildBytes: DEFAULT_MAX_BUILD_BYTES }),
    /** The build download's retries (network errors, 5xx, 408, 429) and its stall timeout. */
    downloads: z
      .object({
        /** Failed attempts in a row before Download Failed; an attempt that brought at least 1 MiB starts the count again. */
        maxAttempts: z.number().int().min(1).max(20).default(5),
        /** Backoff ceiling of the first retry, in ms; doubles per failure (full jitter below it). */
        retryBaseMs: z.number().int().min(1).default(1_000),
        /** Largest backoff ceiling, in ms. */
        retryMaxMs: z.number().int().min(1).default(30_000),
        /** An attempt that receives nothing for this long fails (and is retried). */
        stallTimeoutSeconds: z.number().int().min(1).default(60),
      })
      .strict()
      .refine((d) => d.retryMaxMs >= d.retryBaseMs, 'retryMaxMs must be at least retryBaseMs')
      .default({ maxAttempts: 5, retryBaseMs: 1_000, retryMaxMs: 30_000, stallTimeoutSeconds: 60 }),
    /** Distribution of builds to agents. */
    distribution: z
      .object({
        /**
         * How long an archive download link stays valid, in seconds. Long enough for a 24 GiB
         * archive on a slow link (6 h ≈ 9 Mbit/s for 24 GiB): a resumed download re-uses the same URL.
         */
        linkTtlSeconds: z.number().int().min(60).max(7 * 24 * 3600).default(2 * 3600),
        /**
         * How long a distribution may take: then the build is Approved with the workers that have
         * it ready, or Reject when none has. Workers still copying it carry on and catch up.
         */
        deadlineSeconds: z.number().int().min(10).max(7 * 24 * 3600).default(2 * 3600),
      })
      .strict()
      .default({ linkTtlSeconds: 2 * 3600, deadlineSeconds: 2 * 3600 }),
    workers: z
      .object({
        heartbeatIntervalSeconds: z.number().int().min(1).default(10),
        leaseSeconds: z.number().int().min(2).default(30),
        /**
         * How long an unreachable worker is waited for, from its lease's end: its sessions are kept
         * and its region's queued viewers keep their places; past it they end (4006, 4001).
         */
        lostGraceSeconds: z.number().int().min(1).max(3600).default(120),
      })
      .strict()
      .refine((w) => w.leaseSeconds > w.heartbeatIntervalSeconds, 'leaseSeconds must exceed heartbeatIntervalSeconds')
      .default({ heartbeatIntervalSeconds: 10, leaseSeconds: 30, lostGraceSeconds: 120 }),
    viewers: z
      .object({
        /** How long a Running session outlives its viewer's dropped signalling socket, waiting for a resume; 0 = never. */
        resumeGraceSeconds: z.number().int().min(0).max(600).default(30),
        /** Viewer sockets (waiting, watching, resuming, or away while their session is held) per client address; 0 = no limit. */
        maxPerAddress: z.number().int().min(0).default(20),
        /** Sessions waiting in one project's queue; a viewer beyond it is turned away; 0 = no limit. */
        maxQueuedPerProject: z.number().int().min(0).default(500),
        /**
         * New sessions per client address per minute once its burst is spent (a token bucket; a
         * resume is not a new session); past it the socket is closed with 4014. 0 = no limit.
         */
        sessionsPerMinute: z.number().min(0).default(10),
        /**
         * New sessions a client address may create back to back: as many as maxPerAddress's default,
         * for a school or an office behind one address opening a link together, or a viewer reloading.
         */
        sessionBurst: z.number().int().min(1).default(20),
      })
      .strict()
      .default({ resumeGraceSeconds: 30, maxPerAddress: 20, maxQueuedPerProject: 500, sessionsPerMinute: 10, sessionBurst: 20 }),
    sessions: z
      .object({
        /**
         * From a session's placement (Starting) to its viewer's peer connection up; past it the session
         * ends with 4013 and its slot is freed. It includes the app's start: keep it above the projects'
         * startupTimeoutSeconds. 0 = no limit.
         */
        connectTimeoutSeconds: z.number().int().min(0).max(3600).default(120),
      })
      .strict()
      .default({ connectTimeoutSeconds: 120 }),
    /**
     * /metrics answers only a scrape with `Authorization: Bearer <bearerToken>` (compared in
     * constant time); unset, it refuses every scrape.
     */
    metrics: z.object({ bearerToken: secret('metrics.bearerToken').optional() }).strict().default({}),
    /** How long ended sessions and fleet events are kept, and how often older ones are deleted. */
    retention: z
      .object({
        /**
         * Days an ended session (with its snapshots, telemetry rows and log file records) and a fleet
         * event are kept. The default outlasts the analytics API's 92-day window.
         */
        sessionDays: z.number().int().min(1).max(36_500).default(100),
        /** Days an engine log file (record and blob) is kept from its upload; default DEFAULT_LOG_DAYS or sessionDays if smaller. */
        logDays: z.number().int().min(1).max(36_500).optional(),
        /** Days a telemetry row is kept from its receipt; default DEFAULT_TELEMETRY_DAYS or sessionDays if smaller. */
        telemetryDays: z.number().int().min(1).max(36_500).optional(),
        /** Minutes between two retention sweeps (the first runs at start). */
        sweepIntervalMinutes: z.number().int().min(1).max(24 * 60).default(60),
      })
      .strict()
      // A session's rows go with it: a longer window for its logs or telemetry would never apply.
      .refine((r) => r.logDays === undefined || r.logDays <= r.sessionDays, { path: ['logDays'], message: 'must not exceed retention.sessionDays' })
      .refine((r) => r.telemetryDays === undefined || r.telemetryDays <= r.sessionDays, { path: ['telemetryDays'], message: 'must not exceed retention.sessionDays' })
      .transform((r) => ({
        ...r,
        logDays: r.logDays ?? Math.min(DEFAULT_LOG_DAYS, r.sessionDays),
        telemetryDays: r.telemetryDays ?? Math.min(DEFAULT_TELEMETRY_DAYS, r.sessionDays),
      }))
      .prefault({}),
    /**
     * Country and city of viewers from the bundled DB-IP city database (read once at start, ~135 MB
     * in memory). false: sessions get no country or city (the breakdown's geo dimensions stay empty).
     */
    geoip: z.object({ enabled: z.boolean().default(true) }).strict().default({ enabled: true }),
    /**
     * TURN for viewers behind restrictive networks: coturn with `use-auth-secret`. Each session's
     * viewer gets a credential valid for ttlSeconds, or to its session's latest end (placement +
     * maxRunTime) plus a minute when that is sooner, in the `config` it receives (username
     * `<expiry>:<sessionId>`, credential base64(HMAC-SHA1(secret, username))). Absent: no TURN
     * entry is added (the agents' own `ice.iceServers` still apply).
     */
    turn: z
      .object({
        secret: secret('turn.secret'),
        urls: z.array(z.string().regex(/^turns?:[^\s]+$/, 'must be a turn: or turns: URL')).min(1),
        /** Must outlast the longest session (a project's maxRunTime): coturn refuses an allocation's refresh past the expiry. */
        ttlSeconds: z.number().int().min(60).max(7 * 24 * 3600).default(24 * 3600),
      })
      .strict()
      .optional(),
    /**
     * E-mail to people (invitations, password resets, a new API key). Mail is stored before it is
     * sent and retried with backoff, so a restart or an SMTP outage loses none. Without smtp (the
     * demo, tests) each mail is written to outboxDir as an .eml file instead.
     */
    mail: z
      .object({
        /** smtp://user:password@host:587 (STARTTLS when the server offers it) or smtps://user:password@host:465. Never logged. */
        smtp: z.object({ url: smtpUrl }).strict().optional(),
        /** The sender, as `Name <address>` or a bare address. */
        from: z.string().min(3).max(320).default('Pixelfleet <pixelfleet@localhost>'),
        /** Where mail goes without smtp, one .eml file per mail; default `<dataDir>/outbox`. */
        outboxDir: z.string().min(1).optional(),
      })
      .strict()
      .default({ from: 'Pixelfleet <pixelfleet@localhost>' }),
    /** Where build archives and engine logs are stored: `<dataDir>/blobs` unless `s3` is set. */
    blobs: z.object({ s3: s3Blobs.optional() }).strict().default({}),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .strict()
  // A listener other machines can reach carries tokens: TLS, or a proxy in front (HTTP), or an explicit opt-out.
  // So do agents' build downloads (a signed link, a customer's build): https, or loopback, or http.insecure.
  .superRefine((c, ctx) => {
    if (!isLoopbackHost(c.grpc.host) && c.grpc.tls === undefined && !c.grpc.insecure) {
      ctx.addIssue({ code: 'custom', path: ['grpc', 'host'], message: `${c.grpc.host} is reachable from other machines and grpc.tls is not set: set grpc.tls.certFile and grpc.tls.keyFile, or grpc.insecure: true to accept plaintext` });
    }
    if (!isLoopbackHost(c.http.host) && c.http.tls === undefined && c.http.trustProxy.length === 0 && !c.http.insecure) {
      ctx.addIssue({ code: 'custom', path: ['http', 'host'], message: `${c.http.host} is reachable from other machines without TLS: set http.tls.certFile and http.tls.keyFile, or http.trustProxy to the HTTPS proxy in front, or http.insecure: true to accept plaintext` });
    }
    const agents = agentsUrlOf(c);
    if (crossesNetworkInPlaintext(agents.url) && !c.http.insecure) {
      const [what, fix] =
        agents.from === 'publicUrls.agents'
          ? [`${agents.url} is`, 'make it https://']
          : agents.from === 'publicUrls.platform'
            ? [`unset, it follows publicUrls.platform, ${agents.url}, which is`, 'set publicUrls.agents (or publicUrls.platform) to an https:// URL']
            : [`unset, it follows the HTTP listener's origin, ${agents.url}, which is`, 'set publicUrls.agents to the https:// URL agents reach (the HTTPS proxy in front)'];
      ctx.addIssue({
        code: 'custom',
        path: ['publicUrls', 'agents'],
        message: `${what} plain HTTP to another machine: agents would download builds and their signed links unencrypted; ${fix}, or set http.insecure: true to accept plaintext`,
      });
    }
  });

/**
 * Where agents will download build archives from, as the config alone says (resolvePublicUrls has
 * the listener's real port; its host and scheme are known here).
 */
function agentsUrlOf(c: { http: { host: string; port: number; tls?: unknown }; publicUrls: { agents?: string | undefined; platform?: string | undefined } }): {
  url: string;
  from: 'publicUrls.agents' | 'publicUrls.platform' | 'listener';
} {
  if (c.publicUrls.agents !== undefined) return { url: c.publicUrls.agents, from: 'publicUrls.agents' };
  if (c.publicUrls.platform !== undefined) return { url: c.publicUrls.platform, from: 'publicUrls.platform' };
  const host = c.http.host.includes(':') ? `[${c.http.host}]` : c.http.host;
  return { url: `${c.http.tls === undefined ? 'http' : 'https'}://${host}:${c.http.port}`, from: 'listener' };
}

/** The listeners configured to take plaintext from other machines (warned about at every start). */
export function insecureListeners(config: ControlPlaneConfig): string[] {
  const out: string[] = [];
  if (!isLoopbackHost(config.grpc.host) && config.grpc.tls === undefined) out.push(`grpc (${config.grpc.host}:${config.grpc.port}, grpc.insecure)`);
  if (!isLoopbackHost(config.http.host) && config.http.tls === undefined && config.http.trustProxy.length === 0) out.push(`http (${config.http.host}:${config.http.port}, http.insecure)`);
  return out;
}

export type ControlPlaneConfig = Readonly<z.infer<typeof schema>>;

/** Default `retention.logDays`: a month of engine logs (they are large; a crash is looked at within days). */
export const DEFAULT_LOG_DAYS = 30;
/** Default `retention.telemetryDays`: the analytics API's window, so that every day it may ask for is kept. */
export const DEFAULT_TELEMETRY_DAYS = ANALYTICS_WINDOW_DAYS;

/** Every leaf key that an environment variable may set, and how its text is parsed. */
export const CONTROL_PLANE_ENV_LEAVES: Readonly<Record<string, EnvLeafKind>> = {
  'http.host': 'string',
  'http.port': 'number',
  'http.trustProxy': 'json',
  'grpc.host': 'string',
  'grpc.port': 'number',
  'grpc.tls.certFile': 'string',
  'grpc.tls.keyFile': 'string',
  'grpc.tls.clientCaFile': 'string',
  'grpc.insecure': 'boolean',
  'http.tls.certFile': 'string',
  'http.tls.keyFile': 'string',
  'http.insecure': 'boolean',
  dataDir: 'string',
  adminToken: 'string',
  agentJoinToken: 'string',
  'publicUrls.api': 'string',
  'publicUrls.platform': 'string',
  'publicUrls.share': 'string',
  'publicUrls.dashboard': 'string',
  'publicUrls.agents': 'string',
  'network.allowPrivateUrls': 'boolean',
  'network.allowPrivateViewerCandidates': 'boolean',
  'limits.buildCallWindowSeconds': 'number',
  'limits.analyticsReadsPerMinute': 'number',
  'limits.fairUseBurst': 'number',
  'limits.fairUsePerSecond': 'number',
  'limits.fairUseAddressBurst': 'number',
  'limits.fairUseAddressPerSecond': 'number',
  'limits.telemetryBytesPerSession': 'number',
  'limits.telemetryBytesWhileQueued': 'number',
  'limits.telemetryAddressBytesBurst': 'number',
  'limits.telemetryAddressBytesPerSecond': 'number',
  'limits.maxBuildBytes': 'number',
  'downloads.maxAttempts': 'number',
  'downloads.retryBaseMs': 'number',
  'downloads.retryMaxMs': 'number',
  'downloads.stallTimeoutSeconds': 'number',
  'distribution.linkTtlSeconds': 'number',
  'distribution.deadlineSeconds': 'number',
  'workers.heartbeatIntervalSeconds': 'number',
  'workers.leaseSeconds': 'number',
  'workers.lostGraceSeconds': 'number',
  'viewers.resumeGraceSeconds': 'number',
  'viewers.maxPerAddress': 'number',
  'viewers.maxQueuedPerProject': 'number',
  'viewers.sessionsPerMinute': 'number',
  'viewers.sessionBurst': 'number',
  'sessions.connectTimeoutSeconds': 'number',
  'metrics.bearerToken': 'string',
  'retention.sessionDays': 'number',
  'retention.sweepIntervalMinutes': 'number',
  'retention.logDays': 'number',
  'retention.telemetryDays': 'number',
  'geoip.enabled': 'boolean',
  'turn.secret': 'string',
  'turn.urls': 'json',
  'turn.ttlSeconds': 'number',
  'mail.smtp.url': 'string',
  'mail.from': 'string',
  'mail.outboxDir': 'string',
  'blobs.s3.endpoint': 'string',
  'blobs.s3.bucket': 'string',
  'blobs.s3.region': 'string',
  'blobs.s3.accessKeyId': 'string',
  'blobs.s3.secretAccessKey': 'string',
  'blobs.s3.forcePathStyle': 'boolean',
  'blobs.s3.prefix': 'string',
  'blobs.s3.partSizeMiB': 'number',
  'blobs.s3.uploadConcurrency': 'number',
  'blobs.s3.presignSeconds': 'number',
  'blobs.s3.insecure': 'boolean',
  logLevel: 'string',
};

export const CONTROL_PLANE_ENV_PREFIX = 'PIXELFLEET_';

export interface LoadConfigOptions {
  /** Path of a JSON config file; without one, only env and defaults apply. */
  file?: string;
  /** The environment to read overrides from (process.env in main). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Values that win over the file but lose to env (used by tests and the demo). */
  overrides?: Record<string, unknown>;
}

/** Parses the control plane config. Throws ConfigError naming the key on any problem. */
export function loadControlPlaneConfig(options: LoadConfigOptions = {}): ControlPlaneConfig {
  return loadConfig({ schema, envPrefix: CONTROL_PLANE_ENV_PREFIX, envLeaves: CONTROL_PLANE_ENV_LEAVES, ...options, finish: (parsed) => ({ ...parsed, dataDir: resolve(parsed.dataDir) }) });
}

/** The public base URLs, derived from the HTTP origin unless configured. */
export interface PublicUrls {
  api: string;
  platform: string;
  share: string;
  /** The dashboard, as links mailed to people name it. */
  dashboard: string;
  /** The HTTP origin agents download build archives from. */
  agents: string;
}

/** Fills unset public URLs from the origin the HTTP server actually listens on. */
export function resolvePublicUrls(config: ControlPlaneConfig, listeningOrigin: string): PublicUrls {
  const origin = listeningOrigin.replace(/\/+$/, '');
  const platform = config.publicUrls.platform ?? origin;
  return {
    api: config.publicUrls.api ?? `${origin}/api`,
    platform,
    share: config.publicUrls.share ?? `${origin}/share`,
    dashboard: config.publicUrls.dashboard ?? `${origin}/dashboard`,
    agents: config.publicUrls.agents ?? platform,
  };
}
