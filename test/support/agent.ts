// Starts a real agent in this process (real gRPC client, real data dir) against a test control
// plane, for integration tests that need its internals (its link state, build cache, relay). The
// end-to-end tests run the agent as it ships instead: the bundle as a process (./bundled-agent.ts).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildAgent, loadAgentConfig, type Agent, type AgentDeps, type LinkState } from '@pixelfleet/agent';
import { createLogger } from '@pixelfleet/common';
import { TEST_JOIN_TOKEN, type LogCapture } from './control-plane';

export interface TestAgentOptions extends Omit<AgentDeps, 'logger' | 'logDestination'> {
  grpcAddress: string;
  region?: 'us-east-1' | 'europe' | 'asia-pacific';
  slots?: number;
  dataDir?: string;
  joinToken?: string;
  logs?: LogCapture;
  /** launcher.command: the argv run instead of an Unreal exe (e.g. the mock app). */
  launcherCommand?: string[];
  /** The config's `tls` (the control link's TLS settings); unset: plaintext to the loopback test control plane. */
  tls?: { caFile?: string; serverName?: string; certFile?: string; keyFile?: string; insecure?: boolean };
}

export async function startTestAgent(options: TestAgentOptions): Promise<{ agent: Agent; dataDir: string }> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'pf-agent-'));
  const config = loadAgentConfig({
    env: {
      PIXELFLEET_AGENT_CONTROL_PLANE: options.grpcAddress,
      PIXELFLEET_AGENT_JOIN_TOKEN: options.joinToken ?? TEST_JOIN_TOKEN,
      PIXELFLEET_AGENT_REGION: options.region ?? 'europe',
      PIXELFLEET_AGENT_SLOTS: String(options.slots ?? 1),
      PIXELFLEET_AGENT_DATA_DIR: dataDir,
      PIXELFLEET_AGENT_HOSTNAME: 'test-worker',
      PIXELFLEET_AGENT_ICE__HOST_ADDRESSES: JSON.stringify(['127.0.0.1']),
      ...Object.fromEntries(
        Object.entries(options.tls ?? {}).map(([key, value]) => [`PIXELFLEET_AGENT_TLS__${key.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}`, String(value)]),
      ),
      ...(options.launcherCommand ? { PIXELFLEET_AGENT_LAUNCHER__COMMAND: JSON.stringify(options.launcherCommand) } : {}),
    },
  });
  // The agent's own logger (the shared redaction), at debug into the capture, or silent.
  const logger = options.logs ? createLogger('debug', options.logs.stream) : createLogger('silent');
  const agent = buildAgent(config, {
    backoff: options.backoff ?? { initialMs: 50, maxMs: 200 },
    ...(options.handlers ? { handlers: options.handlers } : {}),
    ...(options.inventory ? { inventory: options.inventory } : {}),
    ...(options.onSignal ? { onSignal: options.onSignal } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    logger,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  await agent.start();
  return { agent, dataDir };
}

/** Resolves when the agent's control link reaches the state (immediately if it is there). */
export function linkReaches(agent: Agent, state: LinkState, timeoutMs = 10_000): Promise<void> {
  if (agent.link.linkState === state) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`agent link did not reach ${state} within ${timeoutMs} ms (now ${agent.link.linkState})`));
    }, timeoutMs);
    const off = agent.link.onStateChange((s) => {
      if (s !== state) return;
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}
