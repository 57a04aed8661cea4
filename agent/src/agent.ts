// The agent's composition root: from one parsed config, enroll if needed, then keep the
// control link up. main.ts reads flags and env, calls this and wires signals; tests build the
// same agent against a control plane on port 0.
import pino, { type Logger } from 'pino';
import type { agentV1 } from '@pixelfleet/proto';
import type { AgentConfig } from './config';
import { CredentialStore, type WorkerCredentials } from './credentials';
import { CommandJournal } from './commands/journal';
import { CommandExecutor } from './commands/executor';
import type { CommandHandlers } from './commands/command';
import { unsupportedHandlers } from './commands/unsupported-handlers';
import { backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from './lib/backoff';
import { ControlLink, createAgentClient, enroll, EnrollRefusedError } from './link/control-link';
import type { SignalEnvelope } from './sessions/session-events';
import agentPackage from '../package.json' with { type: 'json' };

export const AGENT_VERSION: string = agentPackage.version;

/** What the agent reports in each Hello about the sessions and builds it holds. */
export interface AgentInventory {
  runningSessions(): { sessionId: string; projectId: string; startedAtMs: number }[];
  cachedBuilds(): { uploadId: string; sha256: string; ready: boolean }[];
}

export interface AgentDeps {
  logger?: Logger;
  handlers?: CommandHandlers;
  /** Viewer signalling for this worker's sessions (the relay wiring). */
  onSignal?: (signal: SignalEnvelope) => void;
  inventory?: AgentInventory;
  backoff?: BackoffOptions;
}

export interface Agent {
  readonly log: Logger;
  readonly link: ControlLink;
  readonly executor: CommandExecutor;
  /** Known after start(). */
  readonly workerId: string;
  /** True while an operator has drained this worker (from Welcome and DrainNotice). */
  readonly draining: boolean;
  /** Enrolls if needed and opens the control link; resolves once the link is dialing. */
  start(): Promise<void>;
  /** Stops redialing and closes the link; idempotent. */
  close(): Promise<void>;
}

export function buildAgent(config: AgentConfig, deps: AgentDeps = {}): Agent {
  const log = deps.logger ?? pino({ level: config.logLevel, redact: { paths: ['workerToken', 'joinToken', '*.workerToken', '*.joinToken'], censor: '[Redacted]' } });
  const backoff = deps.backoff ?? DEFAULT_BACKOFF;
  const inventory: AgentInventory = deps.inventory ?? { runningSessions: () => [], cachedBuilds: () => [] };
  const client: agentV1.AgentServiceClient = createAgentClient(config.controlPlane);
  const store = new CredentialStore(config.dataDir);
  const journal = new CommandJournal(config.dataDir);
  const handlers =
    deps.handlers ?? unsupportedHandlers((sessionId) => inventory.runningSessions().some((s) => s.sessionId === sessionId));

  let credentials: WorkerCredentials | undefined;
  let closed = false;
  let draining = false;
  // The link and executor need each other: the executor acks through the link.
  let linkRef: ControlLink | undefined;
  const executor = new CommandExecutor(journal, handlers, (ack) => linkRef?.sendAck(ack), Date.now, log.child({ component: 'commands' }));
  let link: ControlLink | undefined;

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
        log.warn({ err: (err as Error).message, retryInMs: delay }, 'enrollment failed; retrying');
        await new Promise((r) => setTimeout(r, delay));
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
    get workerId() {
      if (!credentials) throw new Error('agent not started');
      return credentials.workerId;
    },
    get draining() {
      return draining;
    },

    async start() {
      credentials = await obtainCredentials();
      const creds = credentials;
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
        }),
        runningSessionCount: () => inventory.runningSessions().length,
        onCommand: (c) => executor.handle(c),
        onDrainChanged: (d) => {
          draining = d;
        },
        ...(deps.onSignal ? { onSignal: deps.onSignal } : {}),
        backoff,
        log: log.child({ component: 'control-link', workerId: creds.workerId }),
      });
      linkRef = link;
      link.start();
    },

    async close() {
      closed = true;
      await link?.close();
      client.close();
    },
  };
}
