// Starts a real control plane for a test: real SQLite file in a temp dir, gRPC and HTTP on
// 127.0.0.1 port 0, every log line captured (so tests can check what was logged).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Clock } from '@pixelfleet/common';
import { createLogger, loadControlPlaneConfig, type ControlPlane, type FleetEvent, type StartedControlPlane } from '@pixelfleet/control-plane';
import { buildControlPlaneWithDb, type ControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const TEST_JOIN_TOKEN = 'test-join-token-0123456789abcdef';
/** The bearer token /metrics takes in tests (`Authorization: Bearer …`). */
export const TEST_METRICS_TOKEN = 'test-metrics-token-0123456789abcdef';

/** Collects pino lines written by the app under test. */
export class LogCapture {
  readonly lines: string[] = [];
  private readonly taps = new Set<(line: string) => void>();
  readonly stream = new Writable({
    write: (chunk: Buffer, _enc, done) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        this.lines.push(line);
        for (const tap of this.taps) tap(line);
      }
      done();
    },
  });

  /**
   * Calls `listener` with each line from now on, as it is written: inside the logging call, so a
   * test can act before the code that logged goes on. Returns the unsubscribe.
   */
  tap(listener: (line: string) => void): () => void {
    this.taps.add(listener);
    return () => void this.taps.delete(listener);
  }

  text(): string {
    return this.lines.join('\n');
  }
}

export interface TestControlPlane {
  /** The app, with its raw database for seeding and checking rows. */
  cp: ControlPlaneWithDb;
  started: StartedControlPlane;
  dataDir: string;
  logs: LogCapture;
  /** Stops the control plane (keeping its data dir, so a restart can reuse it). */
  stop(): Promise<void>;
  /** Stops it and removes its data dir. */
  destroy(): Promise<void>;
}

export interface TestControlPlaneOptions {
  clock?: Clock;
  /** Reuse a data dir (to test restarts). */
  dataDir?: string;
  /** Reuse a gRPC port (so agents redial the same address after a restart). */
  grpcPort?: number;
  overrides?: Record<string, unknown>;
  logs?: LogCapture;
  /** The build API alone: submitted builds stay `pending` (route tests that move statuses by hand). */
  withoutPipeline?: boolean;
}

export async function startTestControlPlane(options: TestControlPlaneOptions = {}): Promise<TestControlPlane> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'pf-cp-'));
  const logs = options.logs ?? new LogCapture();
  const config = loadControlPlaneConfig({
    overrides: {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: options.grpcPort ?? 0 },
      dataDir,
      adminToken: TEST_ADMIN_TOKEN,
      agentJoinToken: TEST_JOIN_TOKEN,
      network: { allowPrivateUrls: true, allowPrivateViewerCandidates: true },
      metrics: { bearerToken: TEST_METRICS_TOKEN },
      logLevel: 'debug',
      ...options.overrides,
    },
  });
  const cp = buildControlPlaneWithDb(config, {
    logger: createLogger('debug', logs.stream),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.withoutPipeline ? { withoutPipeline: true } : {}),
  });
  const started = await cp.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await cp.close();
  };
  return {
    cp,
    started,
    dataDir,
    logs,
    stop,
    async destroy() {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Resolves with the first fleet event (recorded from now on) that matches; rejects after
 * timeoutMs so a missing event fails the test instead of hanging it.
 */
export function nextEvent(cp: ControlPlane, match: (e: FleetEvent) => boolean, timeoutMs = 10_000): Promise<FleetEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no matching fleet event within ${timeoutMs} ms`));
    }, timeoutMs);
    const stop = cp.events.follow(0, (e) => {
      if (!match(e)) return;
      clearTimeout(timer);
      stop();
      resolve(e);
    });
  });
}
