// The agent's composition root: from one parsed config, enroll if needed, then keep the
// control link up. main.ts reads flags and env, calls this and wires signals; tests build the
// same agent against a control plane on port 0.
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import type { DestinationStream } from 'pino';
import type { agentV1, SignalEnvelope } from '@pixelfleet/proto';
import { hostOf, isLoopbackHost, probeTls, usesTls, createLogger, systemClock, type Clock, type Logger, backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from '@pixelfleet/common';
import type { AgentConfig } from './config';
import { CredentialStore, type WorkerCredentials } from './credentials';
import { CommandJournal } from './commands/journal';
import { CommandExecutor } from './commands/executor';
import type { CommandHandlers } from './commands/command';
import { SessionManager } from './sessions/session-manager';
import { BuildCache } from './build-cache/build-cache';
import { appEnvironment } from './launcher/launcher';
import { AppRecordStore } from './launcher/app-records';
import { AppAccounts, procHidesOtherUsers, type AppAccountGrants } from './launcher/app-accounts';
import { WindowsAppAccounts } from './launcher/windows-app-accounts';
import { processControlFor } from './launcher/process-control';
import { stopSurvivors, type SurvivorOutcome } from './launcher/survivor-sweep';
import { uploadSessionLog } from './link/log-upload';
import { collectSessionLogs, MAX_SESSION_LOG_FILES } from './logs/collect-logs';
import { LogSpool, removeSpooledSessionDir } from './logs/log-spool';
import { SpoolUploader } from './logs/spool-uploader';
import { AGENT_TLS_KEYS, ControlLink, createAgentClient, enroll, EnrollRefusedError } from './link/control-link';
import { TlsWatch } from './link/tls-watch';
import { IdentityRefusalStore } from './link/identity-refusal';
import type { AgentInventory } from './agent-inventory';
import agentPackage from '../package.json' with { type: 'json' };

export const AGENT_VERSION: string = agentPackage.version;
/** At shutdown, how long the logs of the sessions just stopped may take to upload, in ms; the rest waits in the spool for the next run. */
const SHUTDOWN_LOG_DRAIN_MS = 10_000;


export interface AgentDeps {
  /** Default: the shared root logger (signaling's createLogger, its redaction) at config.logLevel. */
  logger?: Logger;
  /** Where that default logger writes (default stdout). */
  logDestination?: DestinationStream;
  /** The agent's own environment; apps get it without PIXELFLEET_* variables (default: none). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Replaces the session manager's handlers (tests that script sessions). */
  handlers?: CommandHandlers;
  /** Viewer signalling for this worker's sessions (the relay wiring). */
  onSignal?: (signal: SignalEnvelope) => void;
  inventory?: AgentInventory;
  backoff?: BackoffOptions;
  /** Time source of the control link, the sessions, the build cache's retries, the command journal's deadlines and the survivor sweep's grace (default systemClock). */
  clock?: Clock;
  /** How long apps a previous run left behind get between SIGTERM and SIGKILL at start, in ms (default DEFAULT_SURVIVOR_GRACE_MS). */
  survivorGraceMs?: number;
  /** This agent process's id in every Hello (default: 16 random hex digits, new at each start). */
  instanceId?: string;
}

export interface Agent {
  readonly log: Logger;
  readonly link: ControlLink;
  readonly executor: CommandExecutor;
  /** The builds this worker holds (`<dataDir>/builds`), for the session runtime and tests. */
  readonly builds: BuildCache;
  /** Known after start(). */
  readonly workerId: string;
  /**
   * This process's id, the same in each of its Hellos: the control plane tells its redial from
   * another process presenting the same worker.json (a cloned server) by it.
   */
  readonly instanceId: string;
  /** What start() found of the apps a previous run left behind (empty before start()). */
  readonly survivors: readonly SurvivorOutcome[];
  /** True while an operator has drained this worker (from Welcome and DrainNotice). */
  readonly draining: boolean;
  /** Why the control link cannot connect when it is TLS (a sentence naming the tls.* setting to fix), until the link is welcomed. */
  readonly tlsFailure: string | undefined;
  /** Stops what a previous run left running, enrolls if needed and opens the control link; resolves once the link is dialing. */
  start(): Promise<void>;
  /** Stops redialing and closes the link; idempotent. */
  close(): Promise<void>;
}

export function buildAgent(config: AgentConfig, deps: AgentDeps = {}): Agent {
  const log = deps.logger ?? createLogger(config.logLevel, deps.logDestination);
  const backoff = deps.backoff ?? DEFAULT_BACKOFF;
  const clock = deps.clock ?? systemClock;
  const instanceId = deps.instanceId ?? randomBytes(8).toString('hex');
  const client: agentV1.AgentServiceClient = createAgentClient(config.controlPlane, config.tls);
  const tls = usesTls(config.controlPlane, config.tls);
  if (!tls && !isLoopbackHost(hostOf(config.controlPlane))) {
    log.warn({ controlPlane: config.controlPlane }, 'control link in plaintext (tls.insecure): the worker token crosses the network unencrypted');
  }
  // A refused TLS handshake is told (once per reason) with the setting to fix; see tls-watch.ts.
  const tlsWatch = tls ? new TlsWatch(client, () => probeTls(config.controlPlane, config.tls, AGENT_TLS_KEYS), log.child({ component: 'control-link' })) : undefined;
  const store = new CredentialStore(config.dataDir);
  const identityRefusals = new IdentityRefusalStore(config.dataDir);
  const journal = new CommandJournal(config.dataDir);
  const appRecords = new AppRecordStore(config.dataDir);
  let survivors: SurvivorOutcome[] = [];
  // Build downloads trust what the control link trusts (tls.caFile) and take plaintext to another
  // machine only when told (buildCache.insecureDownloads, or tls.insecure: plaintext everywhere).
  const builds = new BuildCache({
    dir: join(config.dataDir, 'builds'),
    maxBytes: config.buildCache.maxBytes,
    clock,
    log: log.child({ component: 'build-cache' }),
    tls: { caFile: config.tls.caFile, insecure: config.tls.insecure === true || config.buildCache.insecureDownloads },
    workerToken: () => credentials?.workerToken,
  });
  // The link is created in start(); session reports and signals go to whatever link is current.
  let linkRef: ControlLink | undefined;
  let credentials: WorkerCredentials | undefined;
  // Every finished session's logs go to the spool first; the uploader sends them once the agent has
  // its credentials, and keeps them across control plane outages and agent restarts.
  const spool = new LogSpool({
    dir: join(config.dataDir, 'log-spool'),
    maxBytes: config.logSpool.maxBytes,
    maxAgeMs: config.logSpool.maxAgeHours * 3_600_000,
    clock,
    log: log.child({ component: 'log-spool' }),
  });
  const uploader = new SpoolUploader({
    spool,
    send: (sessionId, file) => {
      if (!credentials) return Promise.reject(new Error('not enrolled yet'));
      return uploadSessionLog(client, credentials.workerToken, sessionId, file);
    },
    clock,
    backoff,
    log: log.child({ component: 'log-spool' }),
  });
  // Windows rules on Windows (taskkill, the build folder's sweep by app-job.exe), POSIX elsewhere.
  const processControl = processControlFor(process.platform);
  // Each app under an account of its own, reaching only its folders (main.ts checks the host):
  // Linux as root, a uid each; Windows, a local account each, logged on by app-job.exe.
  const appAccounts = config.appAccounts ? appAccountGrants(config.dataDir, config.appAccounts, process.platform) : undefined;
  const sessions = new SessionManager({
    slots: config.slots,
    dataDir: config.dataDir,
    launcherCommand: config.launcher.command,
    appEnv: appEnvironment(deps.env ?? {}),
    ice: {
      iceServers: config.ice.iceServers.map((s) => ({ ...s, urls: typeof s.urls === 'string' ? s.urls : [...s.urls] })),
      hostAddresses: [...config.ice.hostAddresses],
      ...(config.ice.portRange ? { portRange: { ...config.ice.portRange } } : {}),
      ...(config.publicIp ? { publicIp: config.publicIp } : {}),
    },
    report: (event) => void linkRef?.sendSessionEvent(event),
    signal: (signal) => void linkRef?.sendSignal(signal),
    spoolLogs: async (sources) => {
      const { logs, skipped } = await collectSessionLogs(sources);
      if (skipped.length > 0) log.warn({ sessionId: sources.sessionId, skipped, maxFiles: MAX_SESSION_LOG_FILES }, 'more session logs than the control plane keeps; the rest are not collected');
      const entry = await spool.add(sources.sessionId, logs);
      if (sources.absLogPath !== undefined) await removeSpooledSessionDir(dirname(sources.absLogPath));
      if (entry) void uploader.kick();
    },
    log: log.child({ component: 'sessions' }),
    clock,
    builds,
    appRecords,
    processControl,
    ...(appAccounts ? { appAccounts } : {}),
  });
  const inventory: AgentInventory = deps.inventory ?? sessions;
  const handlers = deps.handlers ?? sessions.handlers;
  const onSignal = deps.onSignal ?? ((signal: SignalEnvelope) => sessions.onSignal(signal));

  let closed = false;
  let draining = false;
  const executor = new CommandExecutor(journal, handlers, (ack) => linkRef?.sendAck(ack), () => clock.now(), log.child({ component: 'commands' }));
  let link: ControlLink | undefined;

  /** Writes or clears the refusal `doctor` reads; a failure costs only that advice, never the link. */
  function recordRefusal(write: () => void): void {
    try {
      write();
    } catch (err) {
      log.warn({ err: (err as Error).message, path: identityRefusals.path }, 'cannot record the identity refusal for doctor');
    }
  }

  async function obtainCredentials(): Promise<WorkerCredentials> {
    const stored = store.load();
    if (stored && stored.controlPlane === config.controlPlane) return stored;
    if (config.joinToken === undefined) {
      throw new EnrollRefusedError(stored ? `worker.json belongs to ${stored.controlPlane}; set joinToken to enroll with ${config.controlPlane}` : 'no worker credentials yet: set joinToken to enroll');
    }
    for (let attempt = 0; ; attempt += 1) {
      try {
        const res = await enroll(client, config.joinToken, { hostname: config.hostname, region: config.region, slots: config.slots, agentVersion: AGENT_VERSION });
        const fresh = { workerId: res.workerId, workerToken: res.workerToken, controlPlane: config.controlPlane };
        store.save(fresh);
        log.info({ workerId: fresh.workerId }, 'enrolled with the control plane');
        return fresh;
      } catch (err) {
        if (err instanceof EnrollRefusedError || closed) throw err;
        const delay = backoffDelayMs(attempt, backoff);
        log.warn({ err: (err as Error).message, retryInMs: delay, ...(tlsWatch?.failure === undefined ? {} : { tls: tlsWatch.failure }) }, 'enrollment failed; retrying');
        await new Promise<void>((r) => clock.setTimeout(r, delay));
      }
    }
  }

  return {
    log,
    get link() {
      if (!link) throw new Error('agent not started');
      return link;
    },
    executor,
    builds,
    get workerId() {
      if (!credentials) throw new Error('agent not started');
      return credentials.workerId;
    },
    instanceId,
    get tlsFailure() {
      return tlsWatch?.failure;
    },
    get draining() {
      return draining;
    },
    get survivors() {
      return survivors;
    },

    async start() {
      // Before the first Hello, which must not report (or take sessions beside) apps a killed
      // run left on the GPU: every recorded app still running is verified and stopped.
      survivors = await stopSurvivors({
        store: appRecords,
        log: log.child({ component: 'survivors' }),
        clock,
        ...(deps.survivorGraceMs === undefined ? {} : { graceMs: deps.survivorGraceMs }),
        control: processControl,
      });
      if (appAccounts) {
        await appAccounts.protectDataDir();
        if (appAccounts instanceof AppAccounts && !(await procHidesOtherUsers())) {
          log.warn("apps can read each other's command lines, signalling secrets included: mount /proc with hidepid=invisible");
        }
      }
      credentials = await obtainCredentials();
      const creds = credentials;
      // Before anything drains it: half-written entries and files already answered for go.
      await spool.recover();
      link = new ControlLink({
        client,
        workerToken: creds.workerToken,
        helloState: () => ({
          workerId: creds.workerId,
          agentVersion: AGENT_VERSION,
          region: config.region,
          slots: config.slots,
          lastAckedSeq: executor.lastAckedSeq,
          runningSessions: inventory.runningSessions(),
          cachedBuilds: inventory.cachedBuilds(),
          hostname: config.hostname,
          instanceId,
        }),
        heartbeatState: () => ({ runningSessions: inventory.runningSessions().length, activity: inventory.sessionActivity?.() ?? [] }),
        onCommand: (c) => executor.handle(c),
        onDrainChanged: (d) => {
          draining = d;
        },
        onSignal,
        onConnected: () => sessions.reannounceIdentified(),
        // Kept for `doctor` until the next accepted stream (identity-refusal.ts).
        onIdentityRefused: (details) => recordRefusal(() => identityRefusals.save({ workerId: creds.workerId, atMs: clock.now(), details })),
        backoff,
        log: log.child({ component: 'control-link', workerId: creds.workerId, instanceId }),
        clock,
      });
      linkRef = link;
      // A reconnected link means the control plane is back: spooled logs go now, not at their next backoff.
      link.onStateChange((state) => {
        if (state !== 'connected') return;
        recordRefusal(() => identityRefusals.clear());
        tlsWatch?.healthy();
        void uploader.retryNow();
      });
      link.start();
      // What a previous run left in the spool (a crash, a stop during an outage) is sent first.
      void uploader.kick();
    },

    async close() {
      closed = true;
      // Apps first (their logs are spooled, and sent while the link is still up), then the log
      // upload in flight (what is left stays spooled for the next run), then downloads (their
      // .part stays for a resume), then the link.
      await sessions.close();
      await uploader.close(SHUTDOWN_LOG_DRAIN_MS);
      await builds.close();
      await link?.close();
      tlsWatch?.close();
      client.close();
    },
  };
}

/** The accounts apps run under: a uid each on Linux (firstId is required there: main.ts checks), a local account each on Windows. */
function appAccountGrants(dataDir: string, accounts: { firstId?: number | undefined; count: number }, platform: NodeJS.Platform): AppAccountGrants {
  if (platform === 'win32') return new WindowsAppAccounts(dataDir, accounts.count);
  if (accounts.firstId === undefined) throw new Error('config key "appAccounts.firstId" is required on Linux');
  return new AppAccounts(dataDir, { firstId: accounts.firstId, count: accounts.count });
}
