// Mock Unreal app: a stand-in for a packaged Unreal Engine game with Pixel Streaming, for tests and
// the demo on machines without a GPU. It takes the real command line, signals as a PS streamer,
// streams a looping pre-encoded H.264 clip over werift, speaks the data-channel protocol and logs
// like UE to -ABSLOG. No ffmpeg at run time.
//
// Run:  node test/mock-unreal/bin/mock-unreal.mjs <Project> [args]   (or: tsx test/mock-unreal/mock-unreal.ts …)
//   <Project> -PixelStreamingConnectionURL=ws://127.0.0.1:8888 -PixelStreamingURL=ws://127.0.0.1:8888
//   -PixelStreamingID=<id> -RenderOffScreen -ForceRes -ResX=1280 -ResY=720 -Unattended
//   -ABSLOG=<dir>/<Project>.log -PixelStreamingEncoderCodec=H264 -PixelStreamingWebRTCFps=30
//   -PixelStreamingWebRTCStartBitrate=… -PixelStreamingWebRTCMinBitrate=… -PixelStreamingWebRTCMaxBitrate=…
// Keys are case-insensitive. The signalling URL may come under any PS1/PS2 name, one or several:
// -PixelStreamingConnectionURL, -PixelStreamingURL (wins, as PS2 parses the legacy name last),
// -PixelStreamingSignallingURL, -PixelStreamingIP + -PixelStreamingPort. Also accepted: -PixelStreamingWebRTCMinPort/MaxPort, -AllowPixelStreamingCommands,
// -PixelStreamingSignalingKeepAliveInterval=<s> (default 30, 0 = off), -stdout (mirror the log to stdout),
// -MockFixture=<file.h264>. Unknown arguments are logged as warnings, never fatal.
//
// Failure modes, from the environment or the command line (either works):
//   MOCK_UNREAL_CRASH_AFTER_MS=N  / -MockCrashAfterMs=N  exit abruptly with code 3, N ms after process
//                                                        start, without `LogExit: Exiting.` (a crash)
//   MOCK_UNREAL_HANG_ON_STOP=1    / -MockHangOnStop      ignore SIGTERM and SIGINT (logs that it did);
//                                                        only SIGKILL stops it
//   MOCK_UNREAL_NEVER_CONNECT=1   / -MockNeverConnect    start and log, never dial signalling; stays up
//   MOCK_UNREAL_EXIT_EARLY=1      / -MockExitEarly       exit with code 1 right after start, before connecting
//   MOCK_UNREAL_KICK_ON_UI_INTERACTION=1 / -MockKickOnUIInteraction
//                                                        a UIInteraction {"kick":"<reason>"} makes the app send
//                                                        disconnectPlayer for that player (reason optional)
//   MOCK_UNREAL_RECONNECT_SIGNALLING=1 / -MockReconnectSignalling
//                                                        outlive the signalling socket as a real build does: end its
//                                                        players and re-dial every second, instead of exiting
//   MOCK_UNREAL_HELPER_PROCESS=1  / -MockHelperProcess   start a helper child in the app's process group (as a real
//                                                        build starts CrashReportClient); it lives until killed
//   MOCK_UNREAL_SIGNALLING_GATE=<file> / -MockSignallingGate=<file>
//                                                        dial signalling only once <file> exists (looked for every
//                                                        50 ms): a test holds the start before the app identifies
//   MOCK_UNREAL_STARTUP_SECONDS=N / -MockStartupSeconds=N  a realistic start: idle until N s after process start
//                                                        before dialling signalling (a packaged app takes 5–60 s)
//   MOCK_UNREAL_CRASH_REPORT=1    / -MockCrashReport     a crash (above) also writes Saved/Crashes/UECC-<Platform>-<GUID>_0000/
//                                                        (CrashContext.runtime-xml with pid and command line, a log copy, a minidump)
// SIGUSR2 crashes the app at once, as the crash mode does when its time comes (with the crash folder in crash-report mode).
// -MockSavedLog=<Name.log> also writes Saved/Logs/<Name.log> at start, as a plugin with its own log would. Saved is
// <Project>/Saved beside <Project>/Binaries/<Platform>/ when started there (as the agent starts a build), else <cwd>/<Project>/Saved.
//
// Exit codes: 0 clean stop (SIGTERM/SIGINT, or the signalling socket closed without -MockReconnectSignalling),
// 1 exit-early mode or a startup error (bad fixture, unwritable log), 3 simulated crash,
// 70 unexpected internal error. A second SIGTERM/SIGINT during shutdown exits at once.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseCommandLine, type MockUnrealConfig } from './command-line';
import { writeCrashReport } from './crash-report';
import type { H264Clip } from './h264-clip';
import type { MockUnrealApp } from './mock-unreal-app';
import { UnrealLog } from './unreal-log';

const EXIT_CRASH = 3;
const EXIT_STARTUP_ERROR = 1;
const EXIT_INTERNAL_ERROR = 70;
const SHUTDOWN_DEADLINE_MS = 3000;
/** -MockReconnectSignalling: the wait between a lost signalling socket and the next dial. */
const RECONNECT_INTERVAL_MS = 1000;
/** -MockSignallingGate: how often the gate file is looked for. */
const GATE_POLL_MS = 50;
/** The WebRTC warm-up a realistic start runs (webrtc-warmup.ts) is given up after this long: the app then dials without it. */
const WEBRTC_WARMUP_TIMEOUT_MS = 5_000;

const config: MockUnrealConfig = parseCommandLine(process.argv.slice(2), process.env, process.cwd());

let log: UnrealLog;
try {
  log = UnrealLog.open(config.logPath, {
    mirror: config.stdout ? process.stdout : undefined,
    frame: () => Math.floor(performance.now() / (1000 / 30)),
  });
} catch (error) {
  process.stderr.write(`mock-unreal: cannot open log file ${config.logPath}: ${String(error)}\n`);
  process.exit(EXIT_STARTUP_ERROR);
}

log.display('LogInit', `Running engine for game: ${config.projectName}`);
log.log('LogInit', `Command Line: ${config.commandLine}`);
log.log('LogInit', `Engine Version: 5.5.0-0+MockUnreal (Pixelfleet mock Unreal app, pid ${process.pid})`);
for (const note of config.notes) log.warning('LogInit', note);

// A plugin's own log beside the engine's, in Saved/Logs (the engine's goes to -ABSLOG).
if (config.savedLogName !== undefined) {
  const pluginLog = UnrealLog.open(join(config.savedDir, 'Logs', config.savedLogName));
  pluginLog.log('LogMockPlugin', `Plugin log of ${config.projectName}, pid ${process.pid}`);
  pluginLog.close();
}

/** The simulated crash: UE's critical-error lines, the crash folder in crash-report mode, exit 3 without LogExit. */
function crashNow(why: string): never {
  const errorMessage = `Fatal error: simulated crash (${why})`;
  log.error('LogWindows', '=== Critical error: ===');
  log.error('LogWindows', errorMessage);
  if (config.failure.crashReport) {
    const dir = writeCrashReport({ savedDir: config.savedDir, projectName: config.projectName, commandLine: config.commandLine, pid: process.pid, errorMessage, logPath: config.logPath });
    log.error('LogWindows', `Crash report written to ${dir}`);
  }
  log.close();
  process.exit(EXIT_CRASH);
}

const crashAfterMs = config.failure.crashAfterMs;
const crashTimer = crashAfterMs === undefined ? undefined : setTimeout(() => crashNow(`crash-after-ms failure mode, ${crashAfterMs} ms`), Math.max(0, crashAfterMs - process.uptime() * 1000));
// A test's lever: crash at the moment it chooses (SIGUSR1 belongs to Node's inspector).
process.on('SIGUSR2', () => crashNow('SIGUSR2'));
if (crashAfterMs !== undefined) log.warning('LogMockUnreal', `Failure mode: will crash ${crashAfterMs} ms after start`);
if (config.failure.hangOnStop) log.warning('LogMockUnreal', 'Failure mode: SIGTERM and SIGINT will be ignored');

// In the app's process group (not detached), inheriting its environment, like CrashReportClient.
let helper: ChildProcess | undefined;
if (config.failure.helperProcess) {
  helper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60_000)'], { stdio: 'ignore' });
  log.log('LogMockUnreal', `Started helper process ${helper.pid ?? '(failed)'} (helper-process mode)`);
}
let reconnectTimer: ReturnType<typeof setTimeout> | undefined;
/** -MockStartupSeconds: the start's idle wait before signalling. */
let startupTimer: ReturnType<typeof setTimeout> | undefined;

let app: MockUnrealApp | undefined;
let stopping = false;
// A real engine ticks whether or not anyone watches; this also keeps never-connect mode alive.
const engineTick = setInterval(() => undefined, 1000);

function exitNow(code: number): never {
  helper?.kill('SIGKILL');
  log.log('LogExit', 'Exiting.');
  log.close();
  process.exit(code);
}

async function shutdown(why: string): Promise<void> {
  if (stopping) exitNow(0);
  stopping = true;
  log.log('LogExit', 'Preparing to exit.');
  clearInterval(engineTick);
  clearTimeout(crashTimer);
  clearTimeout(reconnectTimer);
  clearTimeout(startupTimer);
  let deadline: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    app?.close(why),
    new Promise<void>((resolve) => {
      deadline = setTimeout(() => {
        log.warning('LogExit', `Shutdown took longer than ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`);
        resolve();
      }, SHUTDOWN_DEADLINE_MS);
    }),
  ]);
  clearTimeout(deadline);
  exitNow(0);
}

function onStopSignal(signal: NodeJS.Signals): void {
  if (config.failure.hangOnStop) {
    log.warning('LogMockUnreal', `${signal} ignored (hang-on-stop failure mode); only SIGKILL stops this process`);
    return;
  }
  log.warning('LogCore', `*** INTERRUPTED *** : SHUTTING DOWN (${signal})`);
  void shutdown(signal);
}
process.on('SIGTERM', onStopSignal);
process.on('SIGINT', onStopSignal);

process.on('uncaughtException', (error) => {
  log.error('LogMockUnreal', `Internal error: ${error.stack ?? String(error)}`);
  log.close();
  process.exit(EXIT_INTERNAL_ERROR);
});
// werift can reject internally while a peer closes; that must not end the process.
process.on('unhandledRejection', (reason) => {
  log.warning('LogMockUnreal', `Unhandled rejection: ${reason instanceof Error ? reason.message : String(reason)}`);
});

if (config.failure.exitEarly) {
  log.error('LogInit', 'Exiting early (exit-early failure mode), before connecting to signalling');
  log.close();
  process.exit(EXIT_STARTUP_ERROR);
}

// werift is loaded only now, so the failure modes above take effect without its start-up cost.
const [{ createMockUnrealApp }, { loadClip }, { warmWebRtcStack }] = await Promise.all([import('./mock-unreal-app'), import('./h264-clip'), import('./webrtc-warmup')]);

function loadClipOrExit(): H264Clip {
  try {
    return loadClip(config.fixturePath);
  } catch (error) {
    log.error('LogInit', `Cannot load video fixture ${config.fixturePath}: ${String(error)}`);
    log.close();
    process.exit(EXIT_STARTUP_ERROR);
  }
}
const clip = loadClipOrExit();
log.display('LogInit', 'Game Engine Initialized.');
log.log('LogPixelStreaming', `Streaming H264 ${clip.width}x${clip.height} @ ${clip.fps} fps (profile-level-id ${clip.profileLevelId}, ` +
  `${clip.frames.length} frames, keyframe every ${clip.keyframeIndices[1] ?? clip.frames.length} frames) from ${basename(config.fixturePath)}`);
if (clip.fps !== config.fps) {
  log.log('LogPixelStreaming', `-PixelStreamingWebRTCFps=${config.fps} is reported to players; the clip plays at its own ${clip.fps} fps`);
}

if (!stopping) {
  app = createMockUnrealApp(config, clip, log, {
    onSignallingClosed: (info) => {
      const cause = info.error !== undefined ? `: ${info.error}` : info.reason !== '' ? `: ${info.reason}` : '';
      if (!config.failure.reconnectSignalling) {
        log.warning('LogPixelStreaming', `Signalling connection closed (code ${info.code})${cause}; exiting (the mock does not reconnect)`);
        void shutdown('signalling closed');
        return;
      }
      const ended = app?.endPlayers('signalling closed') ?? 0;
      log.warning('LogPixelStreaming', `Signalling connection closed (code ${info.code})${cause}; ended ${ended} player(s); reconnecting in ${RECONNECT_INTERVAL_MS} ms`);
      reconnectTimer = setTimeout(() => {
        if (!stopping) app?.start();
      }, RECONNECT_INTERVAL_MS);
    },
  });
  const connect = (): void => {
    const gate = config.failure.signallingGate;
    if (config.failure.neverConnect) {
      log.warning('LogPixelStreaming', 'Not connecting to signalling (never-connect failure mode)');
    } else if (gate !== undefined && !existsSync(gate)) {
      log.log('LogPixelStreaming', `Waiting for ${gate} before connecting to signalling`);
      const waiting = setInterval(() => {
        if (stopping) return clearInterval(waiting);
        if (!existsSync(gate)) return;
        clearInterval(waiting);
        log.log('LogPixelStreaming', `${gate} is there: connecting to signalling`);
        app?.start();
      }, GATE_POLL_MS);
    } else {
      app?.start();
    }
  };
  const startupMs = config.startupSeconds === undefined ? 0 : config.startupSeconds * 1000 - process.uptime() * 1000;
  if (startupMs > 0) {
    // Idle, as a real app is while its engine loads (the wait is I/O and GPU work, not this CPU),
    // but for one WebRTC handshake with itself: werift's first one in a process is slow where
    // libwebrtc's is not (webrtc-warmup.ts). It overlaps the load; connecting waits for both (on a
    // loaded machine a short load may end first: the app then dials once warm, or gives up waiting).
    log.log('LogMockUnreal', `Loading for ${config.startupSeconds} s after start (-MockStartupSeconds) before connecting to signalling`);
    const warmStartedAt = performance.now();
    const warmed = warmWebRtcStack(WEBRTC_WARMUP_TIMEOUT_MS).then(
      () => log.log('LogMockUnreal', `WebRTC stack warmed in ${Math.round(performance.now() - warmStartedAt)} ms`),
      (error: unknown) => log.warning('LogMockUnreal', `WebRTC warm-up failed (${String(error)}); the first player pays for it`),
    );
    startupTimer = setTimeout(() => {
      void warmed.then(() => {
        if (stopping) return;
        log.log('LogLoad', 'Level loaded; connecting to signalling');
        connect();
      });
    }, startupMs);
  } else {
    connect();
  }
}
