// `pixelfleet-agent doctor`: checks what a worker needs before it can stream — its config, the
// control plane (resolution, connection, TLS, a token proven by a real call, and whether the agent's
// stream was last refused because another server presents its identity), free disk, the app
// launcher (on Windows also a test tree under it), the GPU and the UDP port range — one line each
// with a verdict. Nothing is enrolled or stored (the test tree's temp folder is removed).
import { join } from 'node:path';
import { ConfigError } from '@pixelfleet/common';
import { loadAgentConfig, type AgentConfig } from '../config';
import { CredentialStore, type WorkerCredentials } from '../credentials';
import { createAgentClient } from '../link/control-link';
import { IdentityRefusalStore } from '../link/identity-refusal';
import { checkJoinToken, checkReachability, checkWorkerToken, PROBE_TIMEOUT_MS } from './control-plane-probe';
import type { DoctorLine } from './doctor-line';
import { APP_JOB_EXE } from '../launcher/app-job';
import { checkAppJob } from './app-job-check';
import { checkAppLauncher, checkBuildCacheDisk, checkDataDisk, checkGpu, checkUdpPorts } from './host-checks';
import { checkTls } from './tls-check';

export interface DoctorOptions {
  /** The config file (undefined: defaults and environment only, as `run` does). */
  file: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** The nvidia-smi to run (default `nvidia-smi` on PATH). */
  nvidiaSmi?: string;
  /** Connect and gRPC probe timeout, in ms (default PROBE_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Free-space thresholds of the data dir, in bytes (defaults MIN_FREE_BYTES, LOW_FREE_BYTES). */
  disk?: { minFreeBytes?: number; lowFreeBytes?: number };
  /** A server certificate expiring within this many days is a warning (default CERT_EXPIRY_WARNING_DAYS). */
  certExpiryWarningDays?: number;
}

export async function runDoctor(options: DoctorOptions): Promise<DoctorLine[]> {
  let config: AgentConfig;
  try {
    config = loadAgentConfig({ file: options.file, env: options.env });
  } catch (err) {
    if (err instanceof ConfigError) return [{ check: 'config', verdict: 'fail', detail: err.message }];
    throw err;
  }
  const lines: DoctorLine[] = [
    {
      check: 'config',
      verdict: 'ok',
      detail: `${options.file ?? '(no file: defaults and environment)'}: controlPlane ${config.controlPlane}, region ${config.region}, ${config.slots} slot(s), dataDir ${config.dataDir}`,
    },
  ];
  const timeoutMs = options.timeoutMs ?? PROBE_TIMEOUT_MS;
  const reach = await checkReachability(config.controlPlane, timeoutMs);
  lines.push(reach.line);
  const tls = await checkTls(config, reach.reached, { timeoutMs, expiryWarningDays: options.certExpiryWarningDays });
  lines.push(tls.line);
  // A failed handshake would fail the token call too, as a bare gRPC UNAVAILABLE: the tls line says why.
  lines.push(tls.usable ? await checkToken(config, reach.reached, timeoutMs) : { check: 'token', verdict: 'warn', detail: 'skipped: TLS failed (see the tls line)' });
  lines.push(checkDataDisk(config.dataDir, options.disk));
  lines.push(checkBuildCacheDisk(join(config.dataDir, 'builds'), config.buildCache.maxBytes));
  const launcher = checkAppLauncher();
  lines.push(launcher);
  // Windows: that the launcher's job holds a tree here (apps would outlive their sessions otherwise).
  if (process.platform === 'win32' && launcher.verdict === 'ok') {
    lines.push(await checkAppJob(APP_JOB_EXE, { system32: join(options.env.SystemRoot ?? 'C:\\Windows', 'System32') }));
  }
  lines.push(await checkGpu(options.nvidiaSmi));
  lines.push(await checkUdpPorts(config.ice.portRange));
  return lines;
}

async function checkToken(config: AgentConfig, reached: boolean, timeoutMs: number): Promise<DoctorLine> {
  let credentials: WorkerCredentials | undefined;
  try {
    credentials = new CredentialStore(config.dataDir).load();
  } catch (err) {
    return { check: 'token', verdict: 'fail', detail: (err as Error).message };
  }
  // Enrolled with another control plane: the agent enrolls again at start, with joinToken.
  const worker = credentials !== undefined && credentials.controlPlane === config.controlPlane ? credentials : undefined;
  if (worker === undefined && config.joinToken === undefined) {
    return { check: 'token', verdict: 'fail', detail: `not enrolled with ${config.controlPlane} and no joinToken in the config` };
  }
  if (!reached) return { check: 'token', verdict: 'warn', detail: 'not checked: the control plane was not reached' };
  let client: ReturnType<typeof createAgentClient>;
  try {
    // The agent's own TLS settings (tls.*): the doctor dials as the agent would.
    client = createAgentClient(config.controlPlane, config.tls);
  } catch (err) {
    return { check: 'token', verdict: 'fail', detail: `not checked: ${(err as Error).message}` };
  }
  try {
    if (worker === undefined) return await checkJoinToken(client, config.joinToken!, config.region, timeoutMs);
    const line = await checkWorkerToken(client, worker.workerId, worker.workerToken, timeoutMs);
    // A good token is not enough: another server may present the same identity (a cloned worker.json).
    const refusal = new IdentityRefusalStore(config.dataDir).load();
    if (line.verdict !== 'ok' || refusal?.workerId !== worker.workerId) return line;
    return { check: 'token', verdict: 'fail', detail: `${line.detail}, but the agent's last stream was refused at ${new Date(refusal.atMs).toISOString()} (until its next accepted one): ${refusal.details}` };
  } finally {
    client.close();
  }
}
