// Launching the mock Unreal app as a child process from tests: the real Unreal command line,
// the log lines it mirrors on stdout (-stdout) as awaitable events, and its exit.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** The launcher to spawn (`node <this> <Project> -PixelStreamingURL=…`); executable on POSIX. */
export const MOCK_UNREAL_BIN = fileURLToPath(new URL('./bin/mock-unreal.mjs', import.meta.url));

/** Lines every clean run writes, for assertions (each follows the `[time][frame]` prefix). */
export const MOCK_UNREAL_LOG = {
  exit: 'LogExit: Exiting.',
  identified: (streamerId: string) => `LogPixelStreaming: Streamer identified as ${streamerId}`,
  neverConnect: 'LogPixelStreaming: Warning: Not connecting to signalling (never-connect failure mode)',
  gateWaiting: (gate: string) => `LogPixelStreaming: Waiting for ${gate} before connecting to signalling`,
  crash: 'LogWindows: Error: Fatal error: simulated crash',
  ignoredSignal: (signal: 'SIGTERM' | 'SIGINT') => `LogMockUnreal: Warning: ${signal} ignored (hang-on-stop failure mode)`,
  /** -MockReconnectSignalling: the socket closed and the app will dial again. */
  reconnecting: 'reconnecting in 1000 ms',
  /** -MockHelperProcess: followed by the helper's pid. */
  helperStarted: 'LogMockUnreal: Started helper process ',
} as const;

export interface UnrealCommandLineOptions {
  readonly projectName?: string;
  readonly signallingUrl: string;
  readonly streamerId?: string;
  readonly logPath: string;
  readonly fps?: number;
  readonly startBitrate?: number;
  readonly minBitrate?: number;
  readonly maxBitrate?: number;
}

/** The command line a Pixelfleet agent gives a packaged Unreal app (design/pixel-streaming.md §3). */
export function unrealCommandLine(options: UnrealCommandLineOptions): string[] {
  return [
    options.projectName ?? 'MockProject',
    `-PixelStreamingConnectionURL=${options.signallingUrl}`,
    `-PixelStreamingURL=${options.signallingUrl}`,
    `-PixelStreamingID=${options.streamerId ?? 'DefaultStreamer'}`,
    '-RenderOffScreen',
    '-ForceRes',
    '-ResX=1280',
    '-ResY=720',
    '-Unattended',
    `-ABSLOG=${options.logPath}`,
    '-PixelStreamingEncoderCodec=H264',
    `-PixelStreamingWebRTCFps=${options.fps ?? 30}`,
    `-PixelStreamingWebRTCStartBitrate=${options.startBitrate ?? 2_000_000}`,
    `-PixelStreamingWebRTCMinBitrate=${options.minBitrate ?? 500_000}`,
    `-PixelStreamingWebRTCMaxBitrate=${options.maxBitrate ?? 8_000_000}`,
  ];
}

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface MockUnrealProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** Log lines seen on stdout so far. */
  readonly lines: string[];
  /** Standard error, for failure messages. */
  stderr(): string;
  /** Resolves with the first line (seen or future) containing `text`; rejects on exit or timeout. */
  waitForLine(text: string, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<ExitInfo>;
  /** True while the process exists (signal 0 probe). */
  isAlive(): boolean;
  /** SIGKILLs the process if it still runs and waits for it. */
  kill(): Promise<ExitInfo>;
}

/** Spawns `node bin/mock-unreal.mjs <args> -stdout` with extra environment variables, in cwd (default this process's; a build's binary folder places Saved as in that build). */
export function spawnMockUnreal(args: readonly string[], env: Readonly<Record<string, string>> = {}, cwd?: string): MockUnrealProcess {
  const child = spawn(process.execPath, [MOCK_UNREAL_BIN, ...args, '-stdout'], {
    env: { ...process.env, ...env },
    ...(cwd === undefined ? {} : { cwd }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  let exitInfo: ExitInfo | undefined;
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const waiter of waiters) waiter();
  });
  const exited = new Promise<ExitInfo>((resolve) => {
    child.on('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
      for (const waiter of waiters) waiter();
    });
  });

  const waitForLine = (text: string, timeoutMs = 10_000): Promise<string> => new Promise((resolve, reject) => {
    const check = (): void => {
      const found = lines.find((line) => line.includes(text));
      if (found !== undefined) finish(() => resolve(found));
      else if (exitInfo !== undefined) finish(() => reject(new Error(`mock-unreal exited (${JSON.stringify(exitInfo)}) before logging "${text}"; stderr: ${stderr}`)));
    };
    const timer = setTimeout(() => finish(() => reject(new Error(`mock-unreal did not log "${text}" within ${timeoutMs} ms; last lines:\n${lines.slice(-10).join('\n')}\nstderr: ${stderr}`))), timeoutMs);
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      waiters.delete(check);
      settle();
    };
    waiters.add(check);
    check();
  });

  return {
    child,
    lines,
    stderr: () => stderr,
    waitForLine,
    exited,
    isAlive: () => {
      if (exitInfo !== undefined || child.pid === undefined) return false;
      try {
        process.kill(child.pid, 0);
        return true;
      } catch {
        return false;
      }
    },
    kill: async () => {
      if (exitInfo === undefined) child.kill('SIGKILL');
      return exited;
    },
  };
}
